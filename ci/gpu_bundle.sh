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
# It also puts Fashion-MNIST (Debian's dataset-fashion-mnist, 30 MB) into .gpu_data/fashion-mnist for the
# scripts that train on it there. Then, with the device tool: `ci/gpu_session.sh .gpu_bundle $OUT` (what is
# owed, in one call), or a part script, with carry = [".gpu_bundle", ".gpu_data"] (about 51 MB with the
# tree; the tool carries at most 64 MiB).
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
data=.gpu_data
grep -qx "/$data/" "$exclude" 2>/dev/null || echo "/$data/" >> "$exclude"
if [ -d /usr/share/datasets/fashion-mnist ]; then
  mkdir -p "$data" && cp -r /usr/share/datasets/fashion-mnist "$data/"
else
  echo "ci/gpu_bundle.sh: no /usr/share/datasets/fashion-mnist (ci/setup.sh installs it): $data left out" >&2
fi
du -sh "$bundle" "$data"
