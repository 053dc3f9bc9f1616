#!/usr/bin/env bash
# Set-up (ci/setup.sh), then every test this machine can run: unit tests, gradient checks, CLI tests and
# the MPI tests under a real mpirun. Tests that cannot run here (no GPU, no numpy, one GPU for two ranks)
# are reported Skipped with their reason (tests/skip.h), never passed; tests labelled `slow` run only with
# DTNN_SLOW_TESTS=1. Then the same sources built without CUDA and oneDNN (what a machine lacking them
# builds; DTNN_VARIANT=0 skips it): the code behind both switches must compile out, and the tests that
# depend on them (convolutions, matrices, the CLI's and runner's GPU refusals) must pass there too.
# Then the libFuzzer targets for a bounded time (ci/fuzz.sh; DTNN_FUZZ=0 skips them).
# The last line counts the passed, failed and skipped tests of both ctest runs and the fuzz targets; the exit
# status is non-zero when any failed (every run still runs, so the count is whole).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS=0
phases=""  # "name N s, ..." (ci/test.sh's time against its ~15-minute budget, phase by phase)
phase() { phases+="${phases:+, }$1 ${SECONDS} s"; SECONDS=0; }
bash ci/setup.sh
phase "setup and build"
build_dir="${DTNN_BUILD_DIR:-build}"
junit_dir="$(mktemp -d)"
trap 'rm -rf "$junit_dir"' EXIT
failed_runs=0
# The real PyDTNN, a peer framework that is not part of dtnn: its tests read $DTNN_PYDTNN. Unless the caller
# names one, the snapshot beside the repository (../shared/peers/pydtnn) is built into the build folder
# (~1 minute the first time, Debian packages included); without either those tests are skipped with the reason.
if [ -z "${DTNN_PYDTNN:-}" ] && [ -f ../shared/peers/pydtnn/src/setup.py ]; then
  if pydtnn_line="$(bash ci/setup_pydtnn.sh ../shared/peers/pydtnn/src "$build_dir/pydtnn" | tail -n 1)" &&
    [[ "$pydtnn_line" == DTNN_PYDTNN=* ]]; then
    export DTNN_PYDTNN="${pydtnn_line#DTNN_PYDTNN=}"
  else
    echo "ci/test.sh: PyDTNN (../shared/peers/pydtnn) could not be built: the tests that run it are skipped"
  fi
fi
# conv_algo=auto reads best_of's cache (engine/conv/conv_select.h): the tests get a fresh one of their own, not
# the choices this user's ~/.cache/dtnn holds from other builds and runs.
export DTNN_CONV_CACHE="$junit_dir/conv_best_of.tsv"
# ctest runs two tests at once on these 2 cores, each training with 2 OpenMP threads: libgomp's workers spin
# between parallel regions (they cannot see the other test) and burn the core the other test needs. Passive
# waiting changes no result (no test times anything against a bound), only the wall time (two runs each,
# alternating, on a 2-vCPU Zen 5: ctest -j2 took 307 and 289 s spinning, 259 and 254 s passive).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# The Slurm tests (label slurm: a slurmctld and slurmd on localhost, jobs waiting out a one-minute time limit)
# are asleep nearly all their ~2.5 minutes: they run beside the others rather than in one of ctest's two
# slots. Their output is printed after the main run's.
exclude=(-LE "slow|slurm")
# A test without a TIMEOUT of its own (the Catch2 cases) that hangs fails after 15 minutes, with its name,
# instead of running the whole CI job into its 90-minute limit. The slowest such case took 30 s here (ctest -j2).
hang=(--timeout 900)
[ "${DTNN_SLOW_TESTS:-0}" = "1" ] && exclude=(-LE slurm)
(cd "$build_dir" && ctest --output-on-failure -j 2 "${hang[@]}" -L slurm --output-junit "$junit_dir/slurm.xml" \
  > "$junit_dir/slurm.log" 2>&1) &
slurm_pid=$!
(cd "$build_dir" && ctest --output-on-failure -j 2 "${hang[@]}" "${exclude[@]}" --output-junit "$junit_dir/main.xml") ||
  failed_runs=$((failed_runs + 1))
wait "$slurm_pid" || failed_runs=$((failed_runs + 1))
echo "ci/test.sh: the Slurm tests (run beside the others):"
cat "$junit_dir/slurm.log"
phase "tests"

if [ "${DTNN_VARIANT:-1}" = "1" ]; then
  variant="${DTNN_VARIANT_DIR:-build-nocuda}"
  echo "ci/test.sh: the variant without CUDA and oneDNN in $variant"
  cmake -S . -B "$variant" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTNN_CUDA=OFF -DDTNN_ONEDNN=OFF \
    -DDTNN_BUILD_SUITES=OFF > /dev/null
  cmake --build "$variant" -j "${DTNN_JOBS:-2}" --target dtnn dtnn_tests dtnn_harness_tests
  # The tests of what the switches change: the convolution registry and matrices (oneDNN's stub, the GPU
  # algorithm names every build knows), a short training run, the CLI's refusals of GPU requests, the zoo,
  # and GPU trials stored 'unsupported' by the runner. (All of conv|cli|matrix|runner took ~2 min here; the
  # rest of cli and runner does not depend on the switches and runs in the main build.)
  variant_tests='^(conv|matrix)|^cli: (a short run writes|bad input gives|training options reach|nonsense values'
  variant_tests+='|dtnn models lists)|^runner: (ok, failed, unsupported|--dry-run prints)'
  (cd "$variant" && ctest --output-on-failure -j 2 "${hang[@]}" -LE slow -R "$variant_tests" \
    --output-junit "$junit_dir/variant.xml") || failed_runs=$((failed_runs + 1))
  phase "variant build and tests"
fi

# The libFuzzer targets (ci/fuzz.sh: its own clang build in build-fuzz, then DTNN_FUZZ_SECONDS, default 10 here,
# per target, two at a time); DTNN_FUZZ=0 skips them. Each target counts as one test in the summary line.
if [ "${DTNN_FUZZ:-1}" = "1" ]; then
  # 10 s per target here (ci/fuzz.sh's own default is 20; `DTNN_FUZZ_SECONDS=600 ci/fuzz.sh` fuzzes deeply).
  DTNN_FUZZ_SECONDS="${DTNN_FUZZ_SECONDS:-10}" DTNN_FUZZ_JUNIT="$junit_dir/fuzz.xml" bash ci/fuzz.sh ||
    failed_runs=$((failed_runs + 1))
  phase "fuzz build and targets"
fi
echo "ci/test.sh: time by phase: $phases"

# Each skipped test with its reason (the "SKIPPED: ..." line it printed), then the one summary line.
FAILED_RUNS="$failed_runs" python3 - "$junit_dir"/*.xml <<'PY'
import os, sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for path in sys.argv[1:]:
    run = path.rsplit("/", 1)[-1][:-4]
    for case in ET.parse(path).getroot().iter("testcase"):
        out = case.findtext("system-out") or ""
        if case.find("skipped") is not None or case.get("status") == "notrun":
            skipped += 1
            why = next((l[len("SKIPPED: "):] for l in out.splitlines() if l.startswith("SKIPPED: ")), "no reason printed")
            print(f"skipped ({run}): {case.get('name')}: {why}")
        elif case.find("failure") is not None or case.get("status") == "fail":
            failed += 1
        else:
            passed += 1
line = f"ci/test.sh: {passed} passed, {failed} failed, {skipped} skipped (ctest runs and fuzz targets)"
if failed == 0 and int(os.environ["FAILED_RUNS"]) > 0:  # a build or script failed before it reported tests
    line += f"; {os.environ['FAILED_RUNS']} step(s) FAILED without test results (see above)"
print(line)
PY
[ "$failed_runs" -eq 0 ]
