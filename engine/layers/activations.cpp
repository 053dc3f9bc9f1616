// Activation layers. Backward passes use the layer's output y (ReLU's mask is y > 0, so the gradient at
// 0 is 0 as in PyDTNN). Tanh uses tanh (PyDTNN's CPU Tanh used tan: fixed here).
// Softmax works on (N, classes), max-subtracted; when it ends a model trained with categorical cross
// entropy the Model skips its backward and uses the fused (p - y) / B gradient instead.
#include <cmath>

#include "backend/gpu_ops.h"
#include "core/error.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

class Elementwise : public Layer {
 public:
  Shape build(const Shape& in, const BuildContext& ctx) override {
    gpu_ = ctx.gpu();
    return out_sample_ = in;
  }
  bool can_run_in_place() const override { return true; }
  bool backward_reads_output() const override { return true; }

 protected:
  bool gpu_ = false;
};

class Relu final : public Elementwise {
 public:
  std::string type() const override { return "Relu"; }
  void forward(const Tensor& x, const Tensor& y, Mode) override {
    if (gpu_) return gpu::relu_forward(x.data(), y.data(), x.numel());
    const float* in = x.data();
    float* out = y.data();
    const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  }
  void backward(const Tensor&, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    if (dx.empty()) return;
    if (gpu_) return gpu::relu_backward(y.data(), dy.data(), dx.data(), y.numel());
    const float* out = y.data();
    const float* g = dy.data();
    float* d = dx.data();
    const int64_t n = y.numel();
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) d[i] = out[i] > 0.0f ? g[i] : 0.0f;
  }
};

class Sigmoid final : public Elementwise {
 public:
  std::string type() const override { return "Sigmoid"; }
  void forward(const Tensor& x, const Tensor& y, Mode) override {
    if (gpu_) return gpu::sigmoid_forward(x.data(), y.data(), x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) y.data()[i] = 1.0f / (1.0f + std::exp(-x.data()[i]));
  }
  void backward(const Tensor&, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    if (dx.empty()) return;
    if (gpu_) return gpu::sigmoid_backward(y.data(), dy.data(), dx.data(), y.numel());
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float s = y.data()[i];
      dx.data()[i] = dy.data()[i] * s * (1.0f - s);
    }
  }
};

class Tanh final : public Elementwise {
 public:
  std::string type() const override { return "Tanh"; }
  void forward(const Tensor& x, const Tensor& y, Mode) override {
    if (gpu_) return gpu::tanh_forward(x.data(), y.data(), x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) y.data()[i] = std::tanh(x.data()[i]);
  }
  void backward(const Tensor&, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    if (dx.empty()) return;
    if (gpu_) return gpu::tanh_backward(y.data(), dy.data(), dx.data(), y.numel());
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float t = y.data()[i];
      dx.data()[i] = dy.data()[i] * (1.0f - t * t);
    }
  }
};

class Softmax final : public Layer {
 public:
  std::string type() const override { return "Softmax"; }
  bool backward_reads_output() const override { return true; }
  Shape build(const Shape& in, const BuildContext& ctx) override {
    DTNN_CHECK(in.rank() == 1, "Softmax needs a flat input (add Flatten/FC first), got ", in.str());
    gpu_ = ctx.gpu();
    return out_sample_ = in;
  }
  void forward(const Tensor& x, const Tensor& y, Mode) override {
    const int64_t n = x.dim(0), k = out_sample_[0];
    if (gpu_) return gpu::softmax_forward(x.data(), y.data(), n, k);
    for (int64_t b = 0; b < n; ++b) {
      const float* z = x.data() + b * k;
      float* p = y.data() + b * k;
      float m = z[0];
      for (int64_t j = 1; j < k; ++j) m = std::max(m, z[j]);
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) sum += (p[j] = std::exp(z[j] - m));
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < k; ++j) p[j] *= inv;
    }
  }
  void backward(const Tensor&, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    if (dx.empty()) return;
    const int64_t n = y.dim(0), k = out_sample_[0];
    if (gpu_) return gpu::softmax_backward(y.data(), dy.data(), dx.data(), n, k);
    for (int64_t b = 0; b < n; ++b) {
      const float* p = y.data() + b * k;
      const float* g = dy.data() + b * k;
      float dot = 0.0f;
      for (int64_t j = 0; j < k; ++j) dot += g[j] * p[j];
      for (int64_t j = 0; j < k; ++j) dx.data()[b * k + j] = p[j] * (g[j] - dot);
    }
  }

 private:
  bool gpu_ = false;
};

}  // namespace

std::unique_ptr<Layer> make_activation(const std::string& name) {
  if (name == "relu") return std::make_unique<Relu>();
  if (name == "sigmoid") return std::make_unique<Sigmoid>();
  if (name == "tanh") return std::make_unique<Tanh>();
  if (name == "softmax") return std::make_unique<Softmax>();
  fail("unknown activation '", name, "' (known: relu, sigmoid, tanh, softmax)");
}

}  // namespace dtnn
