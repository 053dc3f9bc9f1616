// The one ordered list of convolution algorithms. Preference order is the fallback order: a layer that
// asks for an algorithm which declines its problem (or asks for "auto") gets the first one that accepts.
#include <string>

#include "conv/conv_algorithm.h"
#include "conv/cpu/cpu_algorithms.h"
#include "conv/reference/conv_reference.h"
#include "core/error.h"

namespace dtnn {

const ConvAlgorithm& conv_reference() {
  static const ConvReference algo;
  return algo;
}

const std::vector<const ConvAlgorithm*>& conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> all = {
      &conv_im2row_gemm(),
      &conv_im2col_gemm(),
      &conv_reference(),
  };
  return all;
}

namespace {
bool name_matches(std::string_view full, std::string_view requested) {
  if (full == requested) return true;
  const auto dot = full.find('.');
  return dot != std::string_view::npos && full.substr(dot + 1) == requested;
}
}  // namespace

const ConvAlgorithm& find_conv_algorithm(std::string_view name) {
  std::string known;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    if (name_matches(a->name(), name)) return *a;
    known += (known.empty() ? "" : ", ") + std::string(a->name());
  }
  fail("unknown convolution algorithm '", name, "' (known: auto, ", known, ")");
}

const ConvAlgorithm& choose_conv_algorithm(std::string_view requested, const ConvProblem& p, std::string* note) {
  if (requested != "auto") {
    const ConvAlgorithm& algo = find_conv_algorithm(requested);
    const Support support = algo.supports(p);
    if (support.ok) return algo;
    if (note) *note = support.why;
  }
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->supports(p).ok) return *a;
  fail("no convolution algorithm supports ", p.str());
}

}  // namespace dtnn
