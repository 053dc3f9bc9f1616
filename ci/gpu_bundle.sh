#!/usr/bin/env bash
# Builds the GPU verification bundle on a machine with the CUDA toolkit (no GPU needed): a build with the
# GPU backend for sm_90 (H100/H200), oneDNN and MPI off (the lent GPU machines have neither), and a folder
# with just what ci/gpu_verify.sh runs there: the dtnn, dtnn_tests and bench_conv binaries and the one
# shared libraries of this machine the GPU machine lacks (Debian's Google Benchmark and toml++).
#
#   ci/gpu_bundle.sh [BUNDLE_DIR]     (default .gpu_bundle, git-ignored through .git/info/exclude)
#   BUNDLE_MPI=ON ci/gpu_bundle.sh    also MPI (Open MPI's libmpi.so.40 must exist there: the H100/H200
#                                     image has mpirun), the 2-rank GPU test test_mpi_gpu and bench_allreduce
#
# Then, with the device tool: run `ci/gpu_verify.sh .gpu_bundle` with carry = [".gpu_bundle"].
set -euo pipefail
cd "$(dirname "$0")/.."
bundle="${1:-.gpu_bundle}"
exclude="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$exclude")"
grep -qx "/${bundle#./}/" "$exclude" 2>/dev/null || echo "/${bundle#./}/" >> "$exclude"
mpi="${BUNDLE_MPI:-OFF}"
targets=(dtnn dtnn_tests bench_conv)
[ "$mpi" = ON ] && targets+=(test_mpi_gpu bench_allreduce)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTNN_CUDA=ON -DDTNN_ONEDNN=OFF -DDTNN_MPI="$mpi" \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" > /dev/null
cmake --build build-gpu -j "${DTNN_JOBS:-2}" --target "${targets[@]}"
rm -rf "$bundle"
mkdir -p "$bundle/experiments" "$bundle/tests" "$bundle/suites" "$bundle/lib"
cp build-gpu/experiments/dtnn "$bundle/experiments/"
cp build-gpu/tests/dtnn_tests "$bundle/tests/"
cp build-gpu/suites/bench_conv "$bundle/suites/"
[ "$mpi" = ON ] && cp build-gpu/tests/test_mpi_gpu "$bundle/tests/" && cp build-gpu/suites/bench_allreduce "$bundle/suites/"
strip "$bundle"/experiments/dtnn "$bundle"/tests/dtnn_tests "$bundle"/suites/bench_conv
# Libraries the binaries need that a CUDA/PyTorch image may not have (found by soname, copied as files).
for so in $(ldd "$bundle"/experiments/dtnn "$bundle"/suites/bench_conv | awk '/libbenchmark|libtomlplusplus/ {print $3}' | sort -u); do
  cp -L "$so" "$bundle/lib/$(basename "$so")"
done
du -sh "$bundle"
