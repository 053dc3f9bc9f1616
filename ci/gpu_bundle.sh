#!/usr/bin/env bash
# Builds the GPU verification bundle on a machine with the CUDA toolkit (no GPU needed): a build with the
# GPU backend for sm_90 (H100/H200), oneDNN and MPI off (the lent GPU machines have neither), and a folder
# with just what ci/gpu_verify.sh runs there: the dtnn, dtnn_tests and bench_conv binaries and the one
# shared libraries of this machine the GPU machine lacks (Debian's Google Benchmark and toml++).
#
#   ci/gpu_bundle.sh [BUNDLE_DIR]     (default .gpu_bundle, git-ignored through .git/info/exclude)
#
# Then, with the device tool: run `ci/gpu_verify.sh .gpu_bundle` with carry = [".gpu_bundle"].
set -euo pipefail
cd "$(dirname "$0")/.."
bundle="${1:-.gpu_bundle}"
grep -qx "/${bundle#./}/" .git/info/exclude 2>/dev/null || echo "/${bundle#./}/" >> .git/info/exclude
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDTNN_CUDA=ON -DDTNN_ONEDNN=OFF -DDTNN_MPI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" > /dev/null
cmake --build build-gpu -j "${DTNN_JOBS:-2}" --target dtnn dtnn_tests bench_conv
rm -rf "$bundle"
mkdir -p "$bundle/experiments" "$bundle/tests" "$bundle/suites" "$bundle/lib"
cp build-gpu/experiments/dtnn "$bundle/experiments/"
cp build-gpu/tests/dtnn_tests "$bundle/tests/"
cp build-gpu/suites/bench_conv "$bundle/suites/"
strip "$bundle"/experiments/dtnn "$bundle"/tests/dtnn_tests "$bundle"/suites/bench_conv
# Libraries the binaries need that a CUDA/PyTorch image may not have (found by soname, copied as files).
for so in $(ldd "$bundle"/experiments/dtnn "$bundle"/suites/bench_conv | awk '/libbenchmark|libtomlplusplus/ {print $3}' | sort -u); do
  cp -L "$so" "$bundle/lib/$(basename "$so")"
done
du -sh "$bundle"
