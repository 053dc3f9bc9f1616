// Dropout (inverted): in training every element keeps its value with probability 1 - rate, scaled by
// 1 / (1 - rate), and is zeroed otherwise; the mask is drawn per element (PyDTNN's CPU layer shared one
// mask across the batch: fixed here). Evaluation is the identity. The CPU draws the mask from the layer's
// own random stream; the GPU's kernel (gpu::dropout_forward) draws counter-based numbers seeded from it,
// so the two devices draw different masks from the same seed.
#include <cstdio>

#include "backend/cpu/elementwise.h"
#include "backend/gpu_ops.h"
#include "core/error.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

class Dropout final : public Layer {
 public:
  explicit Dropout(double rate) : rate_(rate) {}
  std::string type() const override { return "Dropout"; }
  Shape build(const Shape& in, const BuildContext& ctx) override {
    gpu_ = ctx.gpu();
    mask_ = ctx.zeros(in.prepend(ctx.max_batch));
    return out_sample_ = in;
  }
  void seed(uint64_t s) override { rng_.reseed(s); }
  bool can_run_in_place() const override { return true; }
  void forward(const Tensor& x, const Tensor& y, Mode mode) override {
    const int64_t n = x.numel();
    if (mode == Mode::evaluate || rate_ == 0.0) {
      if (y.data() != x.data()) y.copy_from(x);
      return;
    }
    const float keep = static_cast<float>(1.0 - rate_), scale = 1.0f / keep;
    if (gpu_) {  // one draw of the layer's stream seeds this call's counter-based mask
      gpu::dropout_forward(x.data(), y.data(), mask_.data(), n, keep, rng_.next_u64(), 0);
      return;
    }
    float* m = mask_.data();
    for (int64_t i = 0; i < n; ++i) m[i] = rng_.uniform_f() < keep ? scale : 0.0f;
    cpu::multiply(x.data(), m, y.data(), n);
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    if (dx.empty()) return;
    if (rate_ == 0.0) {
      if (dx.data() != dy.data()) dx.copy_from(dy);
      return;
    }
    (gpu_ ? gpu::multiply : cpu::multiply)(dy.data(), mask_.data(), dx.data(), dy.numel());
  }
  std::string describe() const override {
    char buf[32];
    std::snprintf(buf, sizeof buf, "rate=%.2f", rate_);
    return buf;
  }

 private:
  double rate_;
  bool gpu_ = false;
  Tensor mask_;
  Rng rng_;
};

}  // namespace

std::unique_ptr<Layer> make_dropout(double rate) {
  DTNN_CHECK(rate >= 0.0 && rate < 1.0, "Dropout: rate must be in [0, 1) (got ", rate, ")");
  return std::make_unique<Dropout>(rate);
}

}  // namespace dtnn
