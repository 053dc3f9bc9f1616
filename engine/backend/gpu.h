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
// Loads cuBLAS as the GPU backend's first GEMM does (backend/gpu/cublas_loader.cpp: dtnn does not link it, so
// a process that never uses the GPU never pays for it) and returns the file the loader mapped. Throws
// dtnn::Error with the loader's reason when it cannot be loaded, dtnn::Unsupported without the GPU backend.
std::string load_cublas();

}  // namespace dtnn
