#!/usr/bin/env bash
# Performance regression check: runs a throughput matrix (experiments/perf_smoke.toml) on a baseline commit's
# build and on the current tree, alternating (so drift of a noisy machine hits both sides alike), into one
# fresh database, then `dtnn compare` (one sample per run: its median epoch after the warm-up; median ratio
# per trial with the Hodges-Lehmann interval, Mann-Whitney U, geometric mean). Exit 1 on a regression, 2 when compare
# could not judge (e.g. the two sides ran on different machines).
#   ci/perf-regression.sh [BASELINE]     BASELINE: a commit or ref (default HEAD~1)
#   ROUNDS=5        alternations, each one run (one sample) per trial and side; a verdict needs at least 4
#                   (the exact U test cannot reach p < 0.05 with 3 a side); Google Benchmark recommends 9+
#   THRESHOLD=5%    slowdown that counts as a regression (with p < 0.05)
#   MATRIX=experiments/perf_smoke.toml   the throughput matrix
#   JUNIT=FILE, MARKDOWN=FILE            also write compare's JUnit XML / Markdown summary there
#   DTNN_PERF_DIR   work directory (default build-perf/): baseline worktrees, builds and databases
#   DTNN_BASELINE_BIN, DTNN_CANDIDATE_BIN  prebuilt dtnn binaries for either side (tests, or a CI job that
#                   built both already): the baseline is then not built from BASELINE, and with a candidate
#                   binary ci/setup.sh is not run
set -euo pipefail
# Paths given relative to the caller's directory stay so after the cd to the repository root.
abs() { case "$1" in /*|"") printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
for var in MATRIX JUNIT MARKDOWN DTNN_BIN DTNN_HARNESS_BIN DTNN_BASELINE_BIN DTNN_CANDIDATE_BIN DTNN_PERF_DIR; do
  [ -n "${!var:-}" ] && export "$var=$(abs "${!var}")"
done
cd "$(dirname "$0")/.."
base_ref="${1:-HEAD~1}"
rounds="${ROUNDS:-5}"
threshold="${THRESHOLD:-5%}"
matrix="${MATRIX:-experiments/perf_smoke.toml}"
work="${DTNN_PERF_DIR:-build-perf}"

if [ -n "${DTNN_CANDIDATE_BIN:-}" ]; then
  dtnn="$DTNN_CANDIDATE_BIN"
else
  bash ci/setup.sh >/dev/null                      # the current tree, built into build/
  dtnn="${DTNN_BUILD_DIR:-build}/experiments/dtnn"
fi
[ -x "$dtnn" ] || { echo "perf-regression: no dtnn binary at $dtnn" >&2; exit 2; }

mkdir -p "$work"
if [ -n "${DTNN_BASELINE_BIN:-}" ]; then
  base_bin="$DTNN_BASELINE_BIN"
  base_desc="$base_bin"
  [ -x "$base_bin" ] || { echo "perf-regression: no baseline binary at $base_bin" >&2; exit 2; }
else
  # The baseline's dtnn, built once per commit from a detached worktree.
  base_sha="$(git rev-parse --verify "${base_ref}^{commit}")"
  src="$work/src-$base_sha"
  bld="$work/build-$base_sha"
  if [ ! -x "$bld/experiments/dtnn" ]; then
    echo "perf-regression: building the baseline $base_sha in $bld"
    git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
    git worktree prune
    git worktree add --detach "$src" "$base_sha" >/dev/null
    cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTNN_BUILD_TESTS=OFF -DDTNN_BUILD_SUITES=OFF \
      -DDTNN_CUDA=OFF >/dev/null
    cmake --build "$bld" --target dtnn
  fi
  base_bin="$bld/experiments/dtnn"
  base_desc="$base_sha"
fi

# Each side runs its own binary (--dtnn), whose compiled-in commit is what the runs record.
db="$work/perf-$(date +%Y%m%d-%H%M%S)-$$.db"
# A run that fails (exit 1 of dtnn run: stored failed, timed out or diverged) is compare's to judge -- a trial
# whose candidate runs all failed is "candidate failed", exit 1 -- so it does not end the script here: a
# failing run is not by itself the regression this script's exit 1 means. Other exits (a signal) do.
side() {
  local rc=0
  "$dtnn" run "$matrix" --db "$db" --dtnn "$1" --tag "$2" >/dev/null || rc=$?
  if [ "$rc" -eq 1 ]; then echo "perf-regression: some $2 runs failed (compare counts them; dtnn query runs)"
  elif [ "$rc" -ne 0 ]; then echo "perf-regression: dtnn run ($2) exited $rc" >&2; exit 2; fi
}
# The side that runs first alternates: position effects (frequency, caches, a neighbour's load) that drift
# over the rounds then fall on both sides alike.
for round in $(seq "$rounds"); do
  echo "perf-regression: round $round/$rounds"
  if [ $((round % 2)) -eq 1 ]; then
    side "$base_bin" baseline
    side "$dtnn" candidate
  else
    side "$dtnn" candidate
    side "$base_bin" baseline
  fi
done
echo "perf-regression: baseline $base_desc vs the candidate ($("$dtnn" --version)); database $db"
extra=()
[ -n "${JUNIT:-}" ] && extra+=(--junit "$JUNIT")
[ -n "${MARKDOWN:-}" ] && extra+=(--markdown "$MARKDOWN")
"$dtnn" compare --db "$db" --baseline tag=baseline --candidate tag=candidate --threshold "$threshold" "${extra[@]}"
