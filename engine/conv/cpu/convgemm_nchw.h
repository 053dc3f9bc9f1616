// cpu.convgemm's NCHW half (convgemm_nchw.cpp): im2col fused into the packing of the GEMM's panels.
// Same contract as ConvAlgorithm's three directions (groups == 1). The workspace holds the packed weights
// and per-thread panels (forward), or dy transposed (N x PQ x K, so it grows with the batch) and per-thread
// panels (weight gradient): it grows with cpu::threads() too. backward_data needs none.
#pragma once

#include "conv/conv_problem.h"

namespace dtnn::convgemm {

int64_t nchw_workspace_floats(const ConvProblem& p);
void nchw_forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y, float* ws);
void nchw_backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx);
void nchw_backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* ws);

}  // namespace dtnn::convgemm
