// The GPU backend of a build without CUDA: every request for a GPU fails with one clear line.
#include "backend/gpu.h"
#include "core/error.h"

namespace dtnn {

bool gpu_built() { return false; }
int gpu_device_count() { return 0; }
std::string gpu_description() { return "not built (no CUDA toolkit with cuDNN and NCCL found, or DTNN_CUDA=OFF)"; }
void require_gpu() { unsupported("--enable_gpu: this dtnn was built without CUDA (configure with -DDTNN_CUDA=ON)"); }

}  // namespace dtnn
