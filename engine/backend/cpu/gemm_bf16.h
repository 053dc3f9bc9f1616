// The bfloat16 GEMM of --dtype=bfloat16's fully-connected layers: cpu::sgemm's contract with the products
// taken in bf16.
//
// A and B are read as float32, rounded to bf16 (8-bit significand) into buffers of their own, multiplied by
// oneDNN's matmul primitive (AVX512-BF16 or AMX kernels; accumulation in float32) and C is written in float32,
// so a layer's weights, activations and gradients stay float32 around it. One primitive and its buffers per
// (shape, transposes, leading dimensions, beta, threads), created on the first call with that shape (as the
// convolutions' primitives are) and kept for the process; later calls allocate nothing of dtnn's.
// Supported: alpha = 1 and beta = 0 or 1 (the FC layer's uses); anything else is dtnn::Error. Callers check
// cpu_bf16_support() (conv/cpu/cpu_algorithms.h) first: on a CPU without bf16 kernels oneDNN would emulate.
// Builds without oneDNN throw dtnn::Unsupported.
#pragma once

#include <cstdint>

namespace dtnn::cpu {

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace dtnn::cpu
