// Batch normalization on the CPU: the same interface as gpu::make_batchnorm (backend/gpu_ops.h) with
// host pointers. Shape, semantics and the reduce callback: backend/batchnorm.h.
//
// Statistics never use E[x^2] - E[x]^2 (cancellation). NHWC and flat, unsynchronised: one pass over x, each
// block of 64 rows read twice while in L1 (its float mean, then its squared deviations from it), blocks merged
// in double by Chan et al.'s pairwise update. NCHW, and synchronised statistics (whose wire format sends the sum
// of x, then the squared deviations around the global mean): two passes, float partial sums over blocks folded
// into double. Threads: cpu::threads() for tensors above 32k floats; the results do not depend on the thread
// count (NCHW sums split channels, NHWC/flat work splits rows into 16 fixed chunks merged in order).
#pragma once

#include <cstdint>
#include <memory>

#include "backend/batchnorm.h"

namespace dtnn::cpu {

// All scratch is allocated here (channel-sized); calls allocate nothing. `reduce` sums host floats over
// the ranks (null: this rank's statistics) and is called with reduce_ctx.
std::unique_ptr<BatchNormOp> make_batchnorm(const BatchNormShape& shape, BatchNormReduce reduce, void* reduce_ctx);

// The inference map as a per-channel affine y = x * scale[c] + shift[c] (c floats each, host memory):
// scale = gamma / sqrt(running_var + epsilon), shift = beta - running_mean * gamma / sqrt(...), in double.
void batchnorm_inference_affine(int64_t c, double epsilon, const float* gamma, const float* beta,
                                const float* running_mean, const float* running_var, float* scale, float* shift);

}  // namespace dtnn::cpu
