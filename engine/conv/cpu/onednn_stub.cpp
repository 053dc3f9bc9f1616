// cpu.onednn in a build without oneDNN (DTNN_ONEDNN=OFF): declines every problem with the reason, so
// "all" comparisons list it as declined and layers fall back to the next algorithm.
#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"

namespace dtnn {
namespace {

class OnednnAbsent final : public ConvAlgorithm {
 public:
  explicit OnednnAbsent(const char* name) : name_(name) {}
  std::string_view name() const override { return name_; }
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
  [[noreturn]] void absent() const { unsupported(name_, ": this dtnn was built without oneDNN"); }
  const char* name_;
};

}  // namespace

const ConvAlgorithm& conv_onednn() {
  static const OnednnAbsent algo("cpu.onednn");
  return algo;
}

const ConvAlgorithm& conv_onednn_bf16() {
  static const OnednnAbsent algo("cpu.onednn_bf16");
  return algo;
}

const ConvAlgorithm& conv_onednn_winograd() {
  static const OnednnAbsent algo("cpu.onednn_winograd");
  return algo;
}

std::string onednn_version() { return "not built"; }
std::string onednn_isa_name() { return "not built"; }
std::string cpu_bf16_support() { return "this dtnn was built without oneDNN, whose kernels compute bfloat16"; }

}  // namespace dtnn
