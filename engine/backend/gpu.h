// What the rest of dtnn may ask about the GPU backend. Built from backend/gpu/ when CMake found CUDA,
// cuDNN, cuBLAS and NCCL (DTNN_CUDA=AUTO|ON), from backend/stub/ otherwise.
#pragma once

#include <string>

namespace dtnn {

bool gpu_built();                 // this binary has the GPU backend
int gpu_device_count();           // 0 without a usable device or driver (never throws)
std::string gpu_description();    // versions of CUDA/cuDNN/NCCL, or why there is no GPU backend
// Throws dtnn::Error with one line when --enable_gpu cannot be honoured.
void require_gpu();

}  // namespace dtnn
