// GPU backend entry points: device discovery and library versions (backend/gpu.h).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "backend/gpu.h"
#include "core/error.h"

namespace dtnn {

bool gpu_built() { return true; }

int gpu_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a missing driver
    return 0;
  }
  return count;
}

std::string gpu_description() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int nccl = 0;
  ncclGetVersion(&nccl);
  return "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ", cuDNN " +
         std::to_string(cudnnGetVersion()) + ", NCCL " + std::to_string(nccl) + ", devices " +
         std::to_string(gpu_device_count());
}

void require_gpu() {
  if (gpu_device_count() == 0) unsupported("--enable_gpu: no CUDA device is available (", gpu_description(), ")");
}

}  // namespace dtnn
