// A test-only convolution algorithm: another algorithm's results with one output element moved by 1.0 in
// the directions asked (and, with `also`, in the bias gradient only, or in a forward without a bias only),
// at the other's speed and tolerance. It is what "verify before timing" must catch: without the check
// best_of would choose it and the timing commands would report its times.
#pragma once

#include <set>

#include "conv/conv_algorithm.h"

namespace dtnn::test {

enum class AlsoWrong { nothing, bias_gradient, forward_without_bias };

class PerturbedAlgorithm final : public ConvAlgorithm {
 public:
  explicit PerturbedAlgorithm(const ConvAlgorithm& inner,
                              std::set<ConvDir> wrong = {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter},
                              AlsoWrong also = AlsoWrong::nothing)
      : inner_(inner), wrong_(std::move(wrong)), also_(also) {}
  std::string_view name() const override { return "test.perturbed"; }
  Support supports(const ConvProblem& p) const override { return inner_.supports(p); }
  int64_t workspace_floats(const ConvProblem& p) const override { return inner_.workspace_floats(p); }
  double tolerance() const override { return inner_.tolerance(); }
  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    inner_.forward(p, x, w, bias, y, ws);
    perturb(ConvDir::fwd, y);
    if (also_ == AlsoWrong::forward_without_bias && bias == nullptr) y[0] += 1.0f;
  }
  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    inner_.backward_data(p, dy, w, dx, ws);
    perturb(ConvDir::bwd_data, dx);
  }
  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    inner_.backward_filter(p, x, dy, dw, db, ws);
    perturb(ConvDir::bwd_filter, dw);
    if (also_ == AlsoWrong::bias_gradient && db != nullptr) db[0] += 1.0f;
  }

 private:
  void perturb(ConvDir dir, float* out) const {
    if (wrong_.count(dir)) out[0] += 1.0f;  // outputs of operands in [-0.5, 0.5) are O(1): far off
  }
  const ConvAlgorithm& inner_;
  std::set<ConvDir> wrong_;
  AlsoWrong also_;
};

}  // namespace dtnn::test
