// cpu.onednn in a build without oneDNN (DTNN_ONEDNN=OFF): declines every problem with the reason, so
// "all" comparisons list it as declined and layers fall back to the next algorithm.
#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"

namespace dtnn {
namespace {

class OnednnAbsent final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.onednn"; }
  Support supports(const ConvProblem&) const override {
    return Support::no("this dtnn was built without oneDNN (DTNN_ONEDNN=OFF or libdnnl-dev missing)");
  }
  int64_t workspace_floats(const ConvProblem&) const override { return 0; }
  void forward(const ConvProblem&, const float*, const float*, const float*, float*, float*) const override { absent(); }
  void backward_data(const ConvProblem&, const float*, const float*, float*, float*) const override { absent(); }
  void backward_filter(const ConvProblem&, const float*, const float*, float*, float*, float*) const override {
    absent();
  }

 private:
  [[noreturn]] static void absent() { unsupported("cpu.onednn: this dtnn was built without oneDNN"); }
};

}  // namespace

const ConvAlgorithm& conv_onednn() {
  static const OnednnAbsent algo;
  return algo;
}

std::string onednn_version() { return "not built"; }

}  // namespace dtnn
