// Implicit-im2row forward for NHWC convolutions with few output channels (K = 4 or 8), AVX2/FMA.
//
// The im2row rows are never stored: the micro-kernel reads each tap straight from a zero-padded copy of x
// (so no bounds checks) and accumulates 8 (K = 8) or 16 (K = 4) output pixels in registers, bias included:
//   y[n, oh, ow, k] = bias[k] + sum_{r,s,c} xpad[n, oh*sh + r*dh, ow*sw + s*dw, c] * W[c, r, s, k]
// It replaces im2row + skinny GEMM where both the row writes and re-reads dominated (simplecnn).
#pragma once

#include "conv/conv_problem.h"

namespace dtnn {

bool implicit_forward_supported(const ConvProblem& p);   // NHWC, groups 1, K in {4, 8}, AVX2 build
int64_t implicit_forward_workspace(const ConvProblem& p); // floats: padded x + packed weights
void implicit_forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y, float* ws);

}  // namespace dtnn
