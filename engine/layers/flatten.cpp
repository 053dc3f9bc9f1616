// Flatten: (H, W, C) or (C, H, W) per sample becomes one feature vector in memory order, without a copy.
#include "layers/layers.h"

namespace dtnn {
namespace {

class Flatten final : public Layer {
 public:
  std::string type() const override { return "Flatten"; }
  Shape build(const Shape& in, const BuildContext&) override { return out_sample_ = Shape{in.numel()}; }
  bool is_reshape() const override { return true; }
  void forward(const Tensor&, const Tensor&, Mode) override {}
  void backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&) override {}
};

}  // namespace

std::unique_ptr<Layer> make_flatten() { return std::make_unique<Flatten>(); }

}  // namespace dtnn
