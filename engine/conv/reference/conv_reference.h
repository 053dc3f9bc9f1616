// The reference convolution: direct loops with double accumulation, every layout, stride, padding,
// dilation and group count. It is the oracle every other algorithm is tested against, not a fast path.
#pragma once

#include "conv/conv_algorithm.h"

namespace dtnn {

class ConvReference final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.reference"; }
  Support supports(const ConvProblem&) const override { return Support::yes(); }
  int64_t workspace_floats(const ConvProblem& p) const override;
  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override;
  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override;
  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override;
};

}  // namespace dtnn
