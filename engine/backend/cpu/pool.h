// Max and average pooling on the CPU: the same calls as gpu::pool_forward / gpu::pool_backward
// (backend/gpu_ops.h) with host pointers. Geometry, semantics and the argmax buffer: backend/pool.h.
//
// Layouts nhwc and nchw, any padding, stride and dilation. NHWC max pooling compares whole C-vectors
// (AVX2 for the common unpadded 2x2 window); the other cases visit one window per output element.
// Single-threaded; no allocation. Results do not depend on the path taken: every path scans a window in
// the same (i, j) order and accumulates gradients in the same window order.
#pragma once

#include <cstdint>

#include "backend/pool.h"

namespace dtnn::cpu {

// y (n * c * p * q floats) overwritten. Max pooling writes argmax (n * c * p * q int32: the winner's
// offset into x, -1 for a window all in padding); average pooling takes argmax = null.
// Throws dtnn::Error when the batch's input offsets do not fit int32 (max pooling).
void pool_forward(const PoolGeometry& g, int64_t n, const float* x, float* y, int32_t* argmax);
// dx (n * c * h * w floats) overwritten with the gradient: each input element sums dy of the windows
// that chose it (max; argmax from pool_forward on the same batch) or contain it (average, dy / the
// window's in-bounds count), in output order.
void pool_backward(const PoolGeometry& g, int64_t n, const float* dy, const int32_t* argmax, float* dx);

}  // namespace dtnn::cpu
