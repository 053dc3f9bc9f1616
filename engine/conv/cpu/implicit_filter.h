// Implicit weight gradient for NHWC first-layer convolutions: one input channel (C = 1), a 3x3 filter and
// K = 4 or 8 output channels (simplecnn's and LeNet-style first layers), AVX2/FMA.
//
//   dW[r, s, k] = sum_{n, oh, ow} xpad[n, oh*sh + r*dh, ow*sw + s*dw] * dy[n, oh, ow, k],   db[k] = sum dy
//
// im2row + GEMM spends its time writing and re-reading 9 floats per output pixel for only 9*K FMAs. Here the
// zero-padded x is copied once with every value repeated K times, so one 8-float load gives the x operand of
// 8/K neighbouring pixels for a tap, aligned with the 8 floats of dy those pixels have; nine named
// accumulators (one per tap) and one for the bias stay in registers, and are folded into double sums after
// every image so long batches do not lose precision.
#pragma once

#include "conv/conv_problem.h"

namespace dtnn {

bool implicit_filter_supported(const ConvProblem& p);    // NHWC, groups 1, C 1, 3x3, K 4 (stride_w 1) or 8
int64_t implicit_filter_workspace(const ConvProblem& p);  // floats
void implicit_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db, float* ws);

}  // namespace dtnn
