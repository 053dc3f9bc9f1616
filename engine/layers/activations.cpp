// Activation layers. Backward passes use the layer's output y (ReLU's mask is y > 0, so the gradient at
// 0 is 0 as in PyDTNN). Tanh uses tanh (PyDTNN's CPU Tanh used tan: fixed here).
// Softmax works on (N, classes), max-subtracted; when it ends a model trained with categorical cross
// entropy the Model skips its backward and uses the fused (p - y) / B gradient instead.
#include "backend/cpu/elementwise.h"
#include "backend/gpu_ops.h"
#include "core/error.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

// The kernels of one elementwise activation on both backends (backend/cpu/elementwise.h and
// backend/gpu_ops.h declare them with identical signatures).
struct ElementwiseKernels {
  const char* type;
  void (*cpu_forward)(const float* x, float* y, int64_t n);
  void (*cpu_backward)(const float* y, const float* dy, float* dx, int64_t n);
  void (*gpu_forward)(const float* x, float* y, int64_t n);
  void (*gpu_backward)(const float* y, const float* dy, float* dx, int64_t n);
};

const ElementwiseKernels kRelu{"Relu", &cpu::relu_forward, &cpu::relu_backward, &gpu::relu_forward,
                               &gpu::relu_backward};
const ElementwiseKernels kSigmoid{"Sigmoid", &cpu::sigmoid_forward, &cpu::sigmoid_backward, &gpu::sigmoid_forward,
                                  &gpu::sigmoid_backward};
const ElementwiseKernels kTanh{"Tanh", &cpu::tanh_forward, &cpu::tanh_backward, &gpu::tanh_forward,
                               &gpu::tanh_backward};

class Elementwise final : public Layer {
 public:
  explicit Elementwise(const ElementwiseKernels& k) : k_(k) {}
  std::string type() const override { return k_.type; }
  Shape build(const Shape& in, const BuildContext& ctx) override {
    forward_ = ctx.gpu() ? k_.gpu_forward : k_.cpu_forward;
    backward_ = ctx.gpu() ? k_.gpu_backward : k_.cpu_backward;
    return out_sample_ = in;
  }
  bool can_run_in_place() const override { return true; }
  bool backward_reads_output() const override { return true; }
  void forward(const Tensor& x, const Tensor& y, Mode) override { forward_(x.data(), y.data(), x.numel()); }
  void backward(const Tensor&, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    if (!dx.empty()) backward_(y.data(), dy.data(), dx.data(), y.numel());
  }

 private:
  const ElementwiseKernels& k_;
  decltype(ElementwiseKernels::cpu_forward) forward_ = nullptr;
  decltype(ElementwiseKernels::cpu_backward) backward_ = nullptr;
};

class Softmax final : public Layer {
 public:
  std::string type() const override { return "Softmax"; }
  bool backward_reads_output() const override { return true; }
  Shape build(const Shape& in, const BuildContext& ctx) override {
    DTNN_CHECK(in.rank() == 1, "Softmax needs a flat input (add Flatten/FC first), got ", in.str());
    forward_ = ctx.gpu() ? &gpu::softmax_forward : &cpu::softmax_forward;
    backward_ = ctx.gpu() ? &gpu::softmax_backward : &cpu::softmax_backward;
    return out_sample_ = in;
  }
  void forward(const Tensor& x, const Tensor& y, Mode) override {
    forward_(x.data(), y.data(), x.dim(0), out_sample_[0]);
  }
  void backward(const Tensor&, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    if (!dx.empty()) backward_(y.data(), dy.data(), dx.data(), y.dim(0), out_sample_[0]);
  }

 private:
  decltype(&cpu::softmax_forward) forward_ = nullptr;
  decltype(&cpu::softmax_backward) backward_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> make_activation(const std::string& name) {
  if (name == "relu") return std::make_unique<Elementwise>(kRelu);
  if (name == "sigmoid") return std::make_unique<Elementwise>(kSigmoid);
  if (name == "tanh") return std::make_unique<Elementwise>(kTanh);
  if (name == "softmax") return std::make_unique<Softmax>();
  fail("unknown activation '", name, "' (known: relu, sigmoid, tanh, softmax)");
}

}  // namespace dtnn
