// FC (fully connected): y = x . W + b, with W stored (in, out) as in PyDTNN.
//   dW = x^T . dy,  db = sum over the batch of dy,  dx = dy . W^T
#include "backend/cpu/blas.h"
#include "backend/gpu_ops.h"
#include "core/error.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

class FC final : public Layer {
 public:
  FC(int64_t units, bool use_bias, Init w, Init b) : units_(units), use_bias_(use_bias), w_init_(w), b_init_(b) {}
  std::string type() const override { return "FC"; }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    gpu_ = ctx.gpu();
    in_ = in.numel();
    params_.push_back({"weights", Shape{in_, units_}, w_init_, in_, units_, {}, {}, {}});
    if (use_bias_) params_.push_back({"biases", Shape{units_}, b_init_, in_, units_, {}, {}, {}});
    return out_sample_ = Shape{units_};
  }

  double forward_flops() const override { return 2.0 * in_ * units_; }

  void forward(const Tensor& x, const Tensor& y, Mode) override {
    const int64_t n = x.dim(0);
    const float* w = params_[0].value.data();
    float* out = y.data();
    if (gpu_) {
      if (use_bias_) gpu::broadcast_rows(out, params_[1].value.data(), n, units_);
      gpu::sgemm(false, false, n, units_, in_, 1.0f, x.data(), in_, w, units_, use_bias_ ? 1.0f : 0.0f, out, units_);
      return;
    }
    if (use_bias_) {
      const float* b = params_[1].value.data();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < units_; ++j) out[i * units_ + j] = b[j];
    }
    cpu::sgemm(false, false, n, units_, in_, 1.0f, x.data(), in_, w, units_, use_bias_ ? 1.0f : 0.0f, out, units_);
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    const int64_t n = x.dim(0);
    if (gpu_) {
      gpu::sgemm(true, false, in_, units_, n, 1.0f, x.data(), in_, dy.data(), units_, 0.0f, params_[0].grad.data(),
                 units_);
      if (use_bias_) gpu::sum_rows(dy.data(), params_[1].grad.data(), n, units_);
      if (!dx.empty())
        gpu::sgemm(false, true, n, in_, units_, 1.0f, dy.data(), units_, params_[0].value.data(), units_, 0.0f,
                   dx.data(), in_);
      return;
    }
    cpu::sgemm(true, false, in_, units_, n, 1.0f, x.data(), in_, dy.data(), units_, 0.0f,
               params_[0].grad.data(), units_);
    if (use_bias_) {
      float* db = params_[1].grad.data();
      for (int64_t j = 0; j < units_; ++j) db[j] = 0.0f;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < units_; ++j) db[j] += dy.data()[i * units_ + j];
    }
    if (!dx.empty())
      cpu::sgemm(false, true, n, in_, units_, 1.0f, dy.data(), units_, params_[0].value.data(), units_, 0.0f,
                 dx.data(), in_);
  }

 private:
  int64_t units_, in_ = 0;
  bool use_bias_, gpu_ = false;
  Init w_init_, b_init_;
};

}  // namespace

std::unique_ptr<Layer> make_fc(int64_t units, bool use_bias, Init weights, Init biases) {
  DTNN_CHECK(units > 0, "FC: the number of units must be positive (got ", units, ")");
  return std::make_unique<FC>(units, use_bias, weights, biases);
}

}  // namespace dtnn
