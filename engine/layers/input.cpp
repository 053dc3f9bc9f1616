// Input: declares the per-sample shape; never called (the Model writes the batch into its output).
#include "core/error.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

class Input final : public Layer {
 public:
  explicit Input(Shape hwc) : hwc_(hwc) { out_sample_ = hwc; }  // before build: the declared HWC shape
  std::string type() const override { return "Input"; }
  Shape build(const Shape&, const BuildContext& ctx) override {
    layout_ = ctx.layout;
    if (hwc_.rank() == 3 && ctx.layout == Layout::nchw) return out_sample_ = Shape{hwc_[2], hwc_[0], hwc_[1]};
    return out_sample_ = hwc_;
  }
  void forward(const Tensor&, const Tensor&, Mode) override { DTNN_ASSERT(false); }
  void backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override { DTNN_ASSERT(false); }

 private:
  Shape hwc_;
};

}  // namespace

std::unique_ptr<Layer> make_input(int64_t h, int64_t w, int64_t c) {
  DTNN_CHECK(h > 0 && w > 0 && c > 0, "input shape must be positive");
  return std::make_unique<Input>(Shape{h, w, c});
}

std::unique_ptr<Layer> make_input_flat(int64_t features) { return std::make_unique<Input>(Shape{features}); }

}  // namespace dtnn
