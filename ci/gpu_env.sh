# shellcheck shell=bash
# Sourced by the scripts that run a GPU bundle on a lent GPU machine (ci/gpu_verify.sh, ci/gpu_distributed.sh):
# the library path for the CUDA runtime and cuBLAS of the toolkit, cuDNN and NCCL from PyTorch's nvidia-*
# packages (the image has no system cuDNN/NCCL), and the bundle's own libraries (ci/gpu_bundle.sh); Open MPI
# allowed to run as root (the machine's commands run as root). Needs $bundle.
pylibs="$(python3 - <<'PY'
import importlib, os
dirs = []
for mod in ("nvidia.cudnn", "nvidia.nccl"):
    try:
        for p in importlib.import_module(mod).__path__:
            if os.path.isdir(os.path.join(p, "lib")):
                dirs.append(os.path.join(p, "lib"))
    except ImportError:
        pass
print(":".join(dirs))
PY
)"
export LD_LIBRARY_PATH="$(cd "$bundle" && pwd)/lib:/usr/local/cuda/lib64:$pylibs:${LD_LIBRARY_PATH:-}"
# dtnn reads analysis/targets.toml and runs experiments/reference/torch_train.py from the tree it was built
# from, which is not where the device's copy lies: this one (the scripts run from the repository root).
export DTNN_SOURCE_DIR="$PWD"
export PYTHONUNBUFFERED=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
