#!/usr/bin/env bash
# Set-up (ci/setup.sh), then every test this machine can run: unit tests, gradient checks, CLI tests and
# the MPI tests under a real mpirun. GPU tests skip themselves without a device; tests labelled `slow`
# run only with DTNN_SLOW_TESTS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
build_dir="${DTNN_BUILD_DIR:-build}"
exclude=()
[ "${DTNN_SLOW_TESTS:-0}" = "1" ] || exclude=(-LE slow)
cd "$build_dir"
ctest --output-on-failure -j 2 "${exclude[@]}"
