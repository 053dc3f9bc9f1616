// FC (fully connected): y = x . W + b, with W stored (in, out) as in PyDTNN.
//   dW = x^T . dy,  db = sum over the batch of dy,  dx = dy . W^T
#include "backend/cpu/blas.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/gemm_bf16.h"
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
    // One backend's GEMM and bias kernels, chosen here: the passes below call them without branching.
    sgemm_ = ctx.gpu() ? &gpu::sgemm : ctx.bf16 ? &cpu::gemm_bf16 : &cpu::sgemm;
    broadcast_rows_ = ctx.gpu() ? &gpu::broadcast_rows : &cpu::broadcast_rows;
    sum_rows_ = ctx.gpu() ? &gpu::sum_rows : &cpu::sum_rows;
    in_ = in.numel();
    params_.push_back({"weights", Shape{in_, units_}, w_init_, in_, units_, {}, {}, {}});
    if (use_bias_) params_.push_back({"biases", Shape{units_}, b_init_, in_, units_, {}, {}, {}});
    return out_sample_ = Shape{units_};
  }

  double forward_flops() const override { return 2.0 * in_ * units_; }

  void forward(const Tensor& x, const Tensor& y, Mode) override {
    const int64_t n = x.dim(0);
    float* out = y.data();
    if (use_bias_) broadcast_rows_(out, params_[1].value.data(), n, units_);
    sgemm_(false, false, n, units_, in_, 1.0f, x.data(), in_, params_[0].value.data(), units_, use_bias_ ? 1.0f : 0.0f,
           out, units_);
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    const int64_t n = x.dim(0);
    sgemm_(true, false, in_, units_, n, 1.0f, x.data(), in_, dy.data(), units_, 0.0f, params_[0].grad.data(), units_);
    if (use_bias_) sum_rows_(dy.data(), params_[1].grad.data(), n, units_);
    if (!dx.empty())
      sgemm_(false, true, n, in_, units_, 1.0f, dy.data(), units_, params_[0].value.data(), units_, 0.0f, dx.data(),
             in_);
  }

 private:
  int64_t units_, in_ = 0;
  bool use_bias_;
  using Sgemm = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                         float, float*, int64_t);
  Sgemm sgemm_ = nullptr;
  void (*broadcast_rows_)(float*, const float*, int64_t, int64_t) = nullptr;
  void (*sum_rows_)(const float*, float*, int64_t, int64_t) = nullptr;
  Init w_init_, b_init_;
};

}  // namespace

std::unique_ptr<Layer> make_fc(int64_t units, bool use_bias, Init weights, Init biases) {
  DTNN_CHECK(units > 0, "FC: the number of units must be positive (got ", units, ")");
  return std::make_unique<FC>(units, use_bias, weights, biases);
}

}  // namespace dtnn
