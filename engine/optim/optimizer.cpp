#include "optim/optimizer.h"

#include <cmath>

#include "backend/gpu_ops.h"
#include "core/error.h"

namespace dtnn {
namespace {

Tensor state_slab(int64_t n, Device device) { return Tensor::zeros(Shape{std::max<int64_t>(n, 1)}, Layout::flat, device); }

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimizerOptions& o, int64_t n, Device device)
      : momentum_(static_cast<float>(o.momentum)), decay_(static_cast<float>(o.decay)), nesterov_(o.nesterov),
        velocity_(state_slab(n, device)) {
    lr_ = o.learning_rate;
    size_ = n;
  }
  const char* name() const override { return "sgd"; }
  std::vector<std::pair<std::string, Tensor*>> state() override { return {{"velocity", &velocity_}}; }

 protected:
  void update(float* w, const float* g, int64_t offset, int64_t n) override {
    const float lr = static_cast<float>(lr_), mu = momentum_, decay = decay_;
    float* v = velocity_.data() + offset;
    if (velocity_.on_gpu()) return gpu::sgd_update(w, g, v, n, lr, mu, decay, nesterov_);
    if (nesterov_) {
      for (int64_t i = 0; i < n; ++i) {
        v[i] = mu * v[i] + g[i];
        w[i] -= lr * (decay * w[i] + g[i] + mu * v[i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        v[i] = mu * v[i] + g[i];
        w[i] -= lr * (decay * w[i] + v[i]);
      }
    }
  }

 private:
  float momentum_, decay_;
  bool nesterov_;
  Tensor velocity_;
};

class RmsProp final : public Optimizer {
 public:
  RmsProp(const OptimizerOptions& o, int64_t n, Device device)
      : rho_(static_cast<float>(o.rho)), epsilon_(static_cast<float>(o.epsilon)),
        decay_(static_cast<float>(o.decay)), cache_(state_slab(n, device)) {
    lr_ = o.learning_rate;
    size_ = n;
  }
  const char* name() const override { return "rmsprop"; }
  std::vector<std::pair<std::string, Tensor*>> state() override { return {{"cache", &cache_}}; }

 protected:
  void update(float* w, const float* g, int64_t offset, int64_t n) override {
    const float lr = static_cast<float>(lr_), rho = rho_, eps = epsilon_, decay = decay_;
    float* c = cache_.data() + offset;
    if (cache_.on_gpu()) return gpu::rmsprop_update(w, g, c, n, lr, rho, eps, decay);
    for (int64_t i = 0; i < n; ++i) {
      c[i] = rho * c[i] + (1.0f - rho) * g[i] * g[i];
      w[i] -= lr * (decay * w[i] + g[i] / std::sqrt(c[i] + eps));
    }
  }

 private:
  float rho_, epsilon_, decay_;
  Tensor cache_;
};

// adam and nadam differ only in the bias-corrected numerator.
class Adam final : public Optimizer {
 public:
  Adam(const OptimizerOptions& o, int64_t n, bool nesterov, Device device)
      : nesterov_(nesterov), beta1_(o.beta1), beta2_(o.beta2), epsilon_(static_cast<float>(o.epsilon)),
        decay_(static_cast<float>(o.decay)), m_(state_slab(n, device)), v_(state_slab(n, device)) {
    lr_ = o.learning_rate;
    size_ = n;
  }
  const char* name() const override { return nesterov_ ? "nadam" : "adam"; }
  std::vector<std::pair<std::string, Tensor*>> state() override { return {{"m", &m_}, {"v", &v_}}; }

 protected:
  void update(float* w, const float* g, int64_t offset, int64_t n) override {
    const double t = static_cast<double>(steps_);
    const float b1 = static_cast<float>(beta1_), b2 = static_cast<float>(beta2_);
    const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(beta1_, t)));
    const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(beta2_, t)));
    const float lr = static_cast<float>(lr_), eps = epsilon_, decay = decay_;
    float* m = m_.data() + offset;
    float* v = v_.data() + offset;
    if (m_.on_gpu()) return gpu::adam_update(w, g, m, v, n, lr, b1, b2, c1, c2, eps, decay, nesterov_);
    if (nesterov_) {
      for (int64_t i = 0; i < n; ++i) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= lr * (decay * w[i] + ((m[i] + (1.0f - b1) * g[i]) * c1) / std::sqrt(v[i] * c2 + eps));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= lr * (decay * w[i] + (m[i] * c1) / std::sqrt(v[i] * c2 + eps));
      }
    }
  }

 private:
  bool nesterov_;
  double beta1_, beta2_;
  float epsilon_, decay_;
  Tensor m_, v_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& o, int64_t size, Device device) {
  DTNN_CHECK(o.learning_rate > 0, "--learning_rate must be positive (got ", o.learning_rate, ")");
  DTNN_CHECK(o.decay >= 0, "--decay must be non-negative (got ", o.decay, ")");
  if (o.name == "sgd") {
    DTNN_CHECK(o.momentum >= 0 && o.momentum < 1, "--momentum must be in [0, 1) (got ", o.momentum, ")");
    return std::make_unique<Sgd>(o, size, device);
  }
  if (o.name == "rmsprop") {
    DTNN_CHECK(o.rho >= 0 && o.rho < 1, "--rho must be in [0, 1) (got ", o.rho, ")");
    DTNN_CHECK(o.epsilon > 0, "--epsilon must be positive (got ", o.epsilon, ")");
    return std::make_unique<RmsProp>(o, size, device);
  }
  if (o.name == "adam" || o.name == "nadam") {
    DTNN_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, "--beta1 and --beta2 must be in [0, 1)");
    DTNN_CHECK(o.epsilon > 0, "--epsilon must be positive (got ", o.epsilon, ")");
    return std::make_unique<Adam>(o, size, o.name == "nadam", device);
  }
  fail("unknown optimizer '", o.name, "' (known: sgd, rmsprop, adam, nadam)");
}

}  // namespace dtnn
