#!/usr/bin/env bash
# Installs what is missing (Debian packages), then configures and builds dtnn into build/ with Ninja.
# Idempotent: a second run installs nothing and rebuilds only what changed.
#   DTNN_BUILD_DIR  build directory (default: build)
#   DTNN_CMAKE_ARGS extra CMake arguments (e.g. -DDTNN_CUDA=OFF)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git ccache         # ccache: the second configuration of ci/test.sh reuses the first's objects
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev opencl-c-headers   # oneDNN's CMake config needs OpenCL
  libopenmpi-dev openmpi-bin
  libsqlite3-dev libcli11-dev catch2 libbenchmark-dev
  libtomlplusplus-dev nlohmann-json3-dev zlib1g-dev libssl-dev          # libssl-dev: libcrypto (SHA-256)
  dataset-fashion-mnist
  python3-numpy python3-torch python3-matplotlib                    # /usr/bin/python3: interop checks, PyTorch reference, plots
  chromium                                                          # headless: the HTML report opened in a real browser (tests)
  clang libclang-rt-14-dev libomp-dev                               # ci/fuzz.sh: libFuzzer, clang's ASan/UBSan runtimes, OpenMP
  libsimgrid-dev                                                    # SimGrid 3.32: smpicxx/smpirun for suites/step_replay (it Provides the virtual "simgrid")
  iproute2                                                          # tc: experiments/shaped_loopback.sh caps lo (a network-like link)
  slurm-wlm munge                                                   # a real Slurm for the `slurm` tests (ci/slurm_local.sh starts it on this host)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q "${missing[@]}"
fi

build_dir="${DTNN_BUILD_DIR:-build}"
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${DTNN_CMAKE_ARGS:-}
# Two parallel compile jobs: these machines have 2 cores (and the heavy TUs need ~1 GB each).
cmake --build "$build_dir" -j "${DTNN_JOBS:-2}"
