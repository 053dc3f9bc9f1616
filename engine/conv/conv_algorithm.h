// ConvAlgorithm: one way of computing a convolution's three directions, and the registry of all of them.
//
// Contract for every algorithm (tensor layouts in conv_problem.h):
//   forward:          y  = conv(x, w)                 (y overwritten)
//   backward_data:    dx = conv_transpose(dy, w)      (dx overwritten)
//   backward_filter:  dw = correlation(x, dy)         (dw overwritten, summed over the batch)
// `ws` is a workspace of at least workspace_floats(problem) floats, 64-byte aligned, owned by the caller
// (the layer allocates it once for its largest batch). Algorithms are stateless and never allocate.
// supports() is cheap; an unsupported problem is an answer with a reason, never a crash.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "conv/conv_problem.h"

namespace dtnn {

struct Support {
  bool ok = true;
  std::string why;  // empty when ok
  static Support yes() { return {}; }
  static Support no(std::string reason) { return {false, std::move(reason)}; }
};

class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;
  virtual std::string_view name() const = 0;  // "cpu.im2row_gemm"
  virtual Support supports(const ConvProblem& p) const = 0;
  virtual int64_t workspace_floats(const ConvProblem& p) const = 0;
  virtual void forward(const ConvProblem& p, const float* x, const float* w, float* y, float* ws) const = 0;
  virtual void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const = 0;
  virtual void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* ws) const = 0;
};

// All algorithms of this build, in preference order (conv/registry.cpp).
const std::vector<const ConvAlgorithm*>& conv_algorithms();

// Looks an algorithm up by name; accepts the short form without the "cpu." prefix ("im2row_gemm").
// Throws dtnn::Error listing the known names when there is no such algorithm.
const ConvAlgorithm& find_conv_algorithm(std::string_view name);

// Picks the algorithm for a layer: the named one if it supports the problem; "auto" (or a declined name)
// takes the first supporting algorithm in preference order. `note` receives why a fallback happened.
const ConvAlgorithm& choose_conv_algorithm(std::string_view requested, const ConvProblem& p, std::string* note);

}  // namespace dtnn
