#!/usr/bin/env bash
# The AddressSanitizer + UBSan suite: the unit and harness tests, the dtnn binary they start and the MPI
# tests, built with -DDTNN_SANITIZE=ON (-fsanitize=address,undefined -fno-sanitize-recover=all: any UBSan
# report fails the test) into build-asan without CUDA, then `ctest -L asan` (slow tests only with
# DTNN_SLOW_TESTS=1). Leaks are findings too; tests/sanitizers/lsan.supp lists, with reasons, the
# third-party allocations that live until exit. Not part of ci/test.sh (its build alone takes longer than
# the whole of ci/test.sh; results/baselines/ci_times_2core.md has the times). Run ci/setup.sh first.
#   DTNN_ASAN_DIR         build directory (default build-asan)
#   DTNN_ASAN_CMAKE_ARGS  extra CMake arguments (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
#   DTNN_ASAN_TESTS       a ctest -R regular expression to run only some tests
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${DTNN_ASAN_DIR:-build-asan}"
start=$SECONDS
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTNN_SANITIZE=ON -DDTNN_CUDA=OFF \
  -DDTNN_BUILD_SUITES=OFF ${DTNN_ASAN_CMAKE_ARGS:-} > /dev/null
cmake --build "$build_dir" -j "${DTNN_JOBS:-2}"
echo "ci/sanitize.sh: built in $((SECONDS - start)) s"
exclude=()
[ "${DTNN_SLOW_TESTS:-0}" = "1" ] || exclude=(-LE slow)
select=()
[ -z "${DTNN_ASAN_TESTS:-}" ] || select=(-R "$DTNN_ASAN_TESTS")
start=$SECONDS
status=0
(cd "$build_dir" && ctest -L asan "${exclude[@]}" "${select[@]}" --output-on-failure -j 2 --timeout 1500) || status=$?
echo "ci/sanitize.sh: ctest ran in $((SECONDS - start)) s"
exit "$status"
