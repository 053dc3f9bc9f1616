#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang; ASan + UBSan, fatal; tests/fuzz/README.md) into
# build-fuzz and runs each for a bounded time on a COPY of its committed seed corpus: new inputs go to a
# scratch folder, never into the repository. Prints per target the executions libFuzzer ran and what it
# found; exits non-zero when any target crashed, leaked, timed out, ran out of memory, threw an exception a
# reader does not document, or broke a property, and prints where the input that did it was saved.
#   DTNN_FUZZ_SECONDS    seconds per target (default 20)
#   DTNN_FUZZ_TARGETS    the targets to run, space-separated (default: all)
#   DTNN_FUZZ_JOBS       targets run at once (default 2: one per core of the CI machine)
#   DTNN_FUZZ_DIR        build directory (default build-fuzz); crash inputs go to its artifacts/ folder
#   DTNN_FUZZ_CMAKE_ARGS extra CMake arguments (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
#   DTNN_FUZZ_JUNIT      also write the outcome per target as JUnit XML there (ci/test.sh counts it)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${DTNN_FUZZ_DIR:-build-fuzz}"
seconds="${DTNN_FUZZ_SECONDS:-20}"
jobs="${DTNN_FUZZ_JOBS:-2}"
read -r -a targets <<< "${DTNN_FUZZ_TARGETS:-fuzz_idx fuzz_cifar10 fuzz_npz fuzz_imagenet_shard fuzz_weights \
fuzz_checkpoint fuzz_matrix_toml fuzz_targets_toml fuzz_run_report fuzz_benchmark_json fuzz_step_profile}"

# Only what the targets link: no tests, suites, CUDA, oneDNN or MPI (none of them reads these files).
build_start=$SECONDS
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DDTNN_FUZZ=ON -DDTNN_BUILD_TESTS=OFF -DDTNN_BUILD_SUITES=OFF -DDTNN_CUDA=OFF \
  -DDTNN_ONEDNN=OFF -DDTNN_MPI=OFF ${DTNN_FUZZ_CMAKE_ARGS:-} > /dev/null
cmake --build "$build_dir" -j "${DTNN_JOBS:-2}" --target dtnn_fuzz_targets
echo "ci/fuzz.sh: built in $((SECONDS - build_start)) s"

scratch="$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)"  # tmpfs where there is one: every input is a file
trap 'rm -rf "$scratch"' EXIT
artifacts="$(cd "$build_dir" && pwd)/artifacts"
mkdir -p "$artifacts"

# One target: its seeds copied into the scratch corpus it grows; -max_len twice the largest seed (at least
# 4 KiB), so mutations can grow a real file but not waste the time on megabyte inputs; -malloc_limit_mb: one
# allocation of 256 MiB from an input of kilobytes is a reader trusting a size the file declares.
run_target() {
  local t="$1" seeds="tests/fuzz/corpus/$1" work="$scratch/$1"
  mkdir -p "$work/corpus"
  cp "$seeds"/* "$work/corpus/"
  local largest
  largest="$(find "$seeds" -type f -printf '%s\n' | sort -n | tail -1)"
  local max_len=$((2 * largest > 4096 ? 2 * largest : 4096))
  local rc=0
  (cd "$work" && TMPDIR="$work" "$OLDPWD/$build_dir/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=256 -max_len="$max_len" -detect_leaks=1 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$t-" corpus > "$work/log" 2>&1) || rc=$?
  echo "$rc" > "$work/rc"
}

running=0
for t in "${targets[@]}"; do
  [ -d "tests/fuzz/corpus/$t" ] || { echo "ci/fuzz.sh: no seed corpus tests/fuzz/corpus/$t" >&2; exit 2; }
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true

# Per target: executions (libFuzzer's final "Done N runs"; the last status line when it stopped early), the
# coverage it reached, the corpus it ended with, and what it found.
failed=0
cases=""
xml_escape() { sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g'; }
for t in "${targets[@]}"; do
  log="$scratch/$t/log"
  rc="$(cat "$scratch/$t/rc" 2>/dev/null || echo 1)"
  runs="$(sed -n 's/^Done \([0-9]*\) runs in.*/\1/p' "$log" | tail -1)"
  [ -n "$runs" ] || runs="$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)"
  # (|| true: a target that fails on its first seed prints no coverage line, and pipefail would end the
  # script there, before it says which target failed and why.)
  cov="$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)"
  inputs="$(find "$scratch/$t/corpus" -type f | wc -l)"
  if [ "$rc" = "0" ]; then
    found="nothing"
  else
    failed=$((failed + 1))
    found="$(grep -m1 -oE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer): [a-z-]+|runtime error: .*|uncaught exception|property violated: .*|an invariant.*' "$log" || echo "exit $rc")"
  fi
  printf 'ci/fuzz.sh: %-20s %9s runs in %ss, %s, %s corpus inputs: %s\n' "$t" "${runs:-?}" "$seconds" \
    "${cov:-no coverage line}" "$inputs" "$found"
  if [ "$rc" = "0" ]; then
    cases+="<testcase name=\"fuzz.$t\"/>"
  else
    cases+="<testcase name=\"fuzz.$t\"><failure message=\"$(xml_escape <<< "$found")\"/></testcase>"
  fi
  if [ "$rc" != "0" ]; then
    tail -n 60 "$log" | sed "s/^/  $t: /"
    grep -o "Test unit written to .*" "$log" | sed "s/^/ci\/fuzz.sh: $t: /" || true
  fi
done
echo "ci/fuzz.sh: ${#targets[@]} targets, $failed failed"
[ -z "${DTNN_FUZZ_JUNIT:-}" ] || echo "<testsuite name=\"fuzz\">$cases</testsuite>" > "$DTNN_FUZZ_JUNIT"
[ "$failed" -eq 0 ]
