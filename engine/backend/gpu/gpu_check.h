// Check macros for every CUDA, cuBLAS, cuDNN and NCCL call, and the backend's shared context (the one
// stream and the library handles bound to it). Only backend/gpu/*.cu and conv/gpu/*.cu include this.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/error.h"

#define DTNN_CUDA_CHECK(expr)                                                                             \
  do {                                                                                                    \
    const cudaError_t dtnn_status_ = (expr);                                                              \
    if (dtnn_status_ != cudaSuccess)                                                                      \
      ::dtnn::fail("CUDA error ", cudaGetErrorString(dtnn_status_), " in ", #expr, " at ", __FILE__, ":", \
                   __LINE__);                                                                             \
  } while (0)

#define DTNN_CUBLAS_CHECK(expr)                                                                                \
  do {                                                                                                         \
    const cublasStatus_t dtnn_status_ = (expr);                                                                \
    if (dtnn_status_ != CUBLAS_STATUS_SUCCESS)                                                                 \
      ::dtnn::fail("cuBLAS error ", cublasGetStatusString(dtnn_status_), " in ", #expr, " at ", __FILE__, ":", \
                   __LINE__);                                                                                  \
  } while (0)

#define DTNN_CUDNN_CHECK(expr)                                                                               \
  do {                                                                                                       \
    const cudnnStatus_t dtnn_status_ = (expr);                                                               \
    if (dtnn_status_ != CUDNN_STATUS_SUCCESS)                                                                \
      ::dtnn::fail("cuDNN error ", cudnnGetErrorString(dtnn_status_), " in ", #expr, " at ", __FILE__, ":", \
                   __LINE__);                                                                                \
  } while (0)

// After a kernel launch: a launch error (bad configuration) surfaces here, not at a later call.
#define DTNN_LAUNCH_CHECK() DTNN_CUDA_CHECK(cudaGetLastError())

namespace dtnn::gpu {

cudaStream_t stream();
cublasHandle_t cublas();
cudnnHandle_t cudnn();
int multiprocessors();

// Grid size for a grid-stride loop over n elements with 256-thread blocks.
inline unsigned blocks_for(int64_t n, int threads = 256) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535LL * 32 ? 65535LL * 32 : b));
}

}  // namespace dtnn::gpu
