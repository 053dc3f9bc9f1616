#!/usr/bin/env bash
# Set-up (ci/setup.sh), then every test this machine can run: unit tests, gradient checks, CLI tests and
# the MPI tests under a real mpirun. GPU tests skip themselves without a device; tests labelled `slow`
# run only with DTNN_SLOW_TESTS=1. Then the same sources built without CUDA and oneDNN (what a machine
# lacking them builds; DTNN_VARIANT=0 skips it): the code behind both switches must compile out, and the
# tests that depend on them (convolutions, CLI, matrices, runner) must pass there too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
build_dir="${DTNN_BUILD_DIR:-build}"
exclude=()
[ "${DTNN_SLOW_TESTS:-0}" = "1" ] || exclude=(-LE slow)
(cd "$build_dir" && ctest --output-on-failure -j 2 "${exclude[@]}")

if [ "${DTNN_VARIANT:-1}" = "1" ]; then
  variant="${DTNN_VARIANT_DIR:-build-nocuda}"
  echo "ci/test.sh: the variant without CUDA and oneDNN in $variant"
  cmake -S . -B "$variant" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTNN_CUDA=OFF -DDTNN_ONEDNN=OFF \
    -DDTNN_BUILD_SUITES=OFF > /dev/null
  cmake --build "$variant" -j "${DTNN_JOBS:-2}" --target dtnn dtnn_tests dtnn_harness_tests
  (cd "$variant" && ctest --output-on-failure -j 2 -LE slow -R "^(conv|cli|matrix|runner)")
fi
