// MaxPool2D and AveragePool2D with PyDTNN's semantics: the output size uses the convolution formula
// (floor) and a pool dimension of 0 means the whole input extent; padding, ties and empty windows are
// the backends' common contract (backend/pool.h).
#include <cstdio>

#include "backend/cpu/pool.h"
#include "backend/gpu_ops.h"
#include "conv/conv_problem.h"
#include "core/error.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

// The kernels are the backend's (backend/cpu/pool.cpp, backend/gpu/pool.cu): the layer derives the
// geometry, keeps the argmax buffer on the model's device and picks the backend once, in build().
class Pool2D : public Layer {
 public:
  Pool2D(const Pool2DSpec& spec, bool max) : spec_(spec) { g_.max = max; }

  std::string type() const override { return g_.max ? "MaxPool2D" : "AveragePool2D"; }

  Shape build(const Shape& in, const BuildContext& ctx) override {
    layout_ = ctx.layout;
    DTNN_CHECK(in.rank() == 3, type(), " needs a 3-D per-sample input, got ", in.str());
    PoolGeometry& g = g_;
    const bool nhwc = layout_ == Layout::nhwc;
    g.layout = layout_;
    g.c = nhwc ? in[2] : in[0];
    g.h = nhwc ? in[0] : in[1];
    g.w = nhwc ? in[1] : in[2];
    g.r = spec_.pool_shape.v == 0 ? g.h : spec_.pool_shape.v;
    g.s = spec_.pool_shape.h == 0 ? g.w : spec_.pool_shape.h;
    g.sh = spec_.stride.v; g.sw = spec_.stride.h;
    g.ph = spec_.padding.v; g.pw = spec_.padding.h;
    g.dh = spec_.dilation.v; g.dw = spec_.dilation.h;
    DTNN_CHECK(g.r > 0 && g.s > 0 && g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0 && g.ph >= 0 && g.pw >= 0,
               type(), ": pool shape, stride and dilation must be positive");
    g.p = ConvProblem::out_size(g.h, g.ph, g.dh, g.r, g.sh);
    g.q = ConvProblem::out_size(g.w, g.pw, g.dw, g.s, g.sw);
    DTNN_CHECK(g.p > 0 && g.q > 0, type(), ": a ", g.r, "x", g.s, " window does not fit the ", g.h, "x", g.w, " input");
    out_sample_ = nhwc ? Shape{g.p, g.q, g.c} : Shape{g.c, g.p, g.q};
    if (g.max) argmax_ = ctx.zeros(Shape{ctx.max_batch * g.c * g.p * g.q});  // int32 offsets in float storage
    forward_ = ctx.gpu() ? &gpu::pool_forward : &cpu::pool_forward;
    backward_ = ctx.gpu() ? &gpu::pool_backward : &cpu::pool_backward;
    return out_sample_;
  }

  void forward(const Tensor& x, const Tensor& y, Mode) override {
    forward_(g_, x.dim(0), x.data(), y.data(), argmax());
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    if (!dx.empty()) backward_(g_, x.dim(0), dy.data(), argmax(), dx.data());
  }

  std::string describe() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "pool=(%lld,%lld), padd=(%lld,%lld), stride=(%lld,%lld)", (long long)g_.r,
                  (long long)g_.s, (long long)g_.ph, (long long)g_.pw, (long long)g_.sh, (long long)g_.sw);
    return buf;
  }

 private:
  int32_t* argmax() const { return argmax_.empty() ? nullptr : reinterpret_cast<int32_t*>(argmax_.data()); }

  Pool2DSpec spec_;
  PoolGeometry g_;
  Tensor argmax_;  // max pooling: the backend's argmax buffer for max_batch samples
  decltype(&cpu::pool_forward) forward_ = nullptr;
  decltype(&cpu::pool_backward) backward_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> make_max_pool2d(const Pool2DSpec& spec) { return std::make_unique<Pool2D>(spec, true); }
std::unique_ptr<Layer> make_avg_pool2d(const Pool2DSpec& spec) { return std::make_unique<Pool2D>(spec, false); }

}  // namespace dtnn
