#include "layers/layer.h"

#include <cmath>

#include "backend/gpu_ops.h"
#include "core/error.h"

namespace dtnn {

Tensor BuildContext::zeros(const Shape& shape, Layout layout) const {
  if (counters) counters->floats += shape.numel();
  if (plan_only) return Tensor::wrap(nullptr, shape, layout, device);
  if (device == Device::cpu) return Tensor::zeros(shape, layout);
  DTNN_ASSERT(arena != nullptr);
  return Tensor::wrap(arena->allocate_floats(shape.numel()), shape, layout, Device::gpu);
}

void SharedWorkspace::grow_cpu(int64_t f) {
  DTNN_ASSERT(storage.device() == Device::cpu);
  if (f <= floats) return;
  storage = Tensor::zeros(Shape{f});
  data = storage.data();
  floats = f;
}

GradientBuffer BuildContext::gradient(int at_level, int slot, const Shape& full, Layout layout) const {
  if (gradients == nullptr) {
    if (counters) counters->private_gradients += full.numel();
    return GradientBuffer::own(zeros(full, layout));
  }
  return gradients->reserve(at_level, slot, full, layout, device);
}

Init parse_init(const std::string& name) {
  static const std::pair<const char*, Init> table[] = {
      {"zeros", Init::zeros}, {"ones", Init::ones}, {"glorot_uniform", Init::glorot_uniform},
      {"glorot_normal", Init::glorot_normal}, {"he_uniform", Init::he_uniform}, {"he_normal", Init::he_normal},
      {"lecun_uniform", Init::lecun_uniform}, {"lecun_normal", Init::lecun_normal}, {"normal_0.01", Init::normal_0_01}};
  for (const auto& [n, init] : table)
    if (name == n) return init;
  fail("unknown initializer '", name, "'");
}

const char* init_name(Init init) {
  switch (init) {
    case Init::zeros: return "zeros";
    case Init::ones: return "ones";
    case Init::glorot_uniform: return "glorot_uniform";
    case Init::glorot_normal: return "glorot_normal";
    case Init::he_uniform: return "he_uniform";
    case Init::he_normal: return "he_normal";
    case Init::lecun_uniform: return "lecun_uniform";
    case Init::lecun_normal: return "lecun_normal";
    case Init::normal_0_01: return "normal_0.01";
  }
  return "?";
}

void init_fill(Init init, int64_t fan_in, int64_t fan_out, Rng& rng, float* dst, int64_t n) {
  if (init == Init::zeros || init == Init::ones) {
    for (int64_t i = 0; i < n; ++i) dst[i] = init == Init::ones ? 1.0f : 0.0f;
    return;
  }
  if (init == Init::normal_0_01) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(0.01 * rng.normal());
    return;
  }
  double scale = 1.0, fan = static_cast<double>(fan_in);
  switch (init) {
    case Init::glorot_uniform:
    case Init::glorot_normal: fan = 0.5 * static_cast<double>(fan_in + fan_out); break;
    case Init::he_uniform:
    case Init::he_normal: scale = 2.0; break;
    default: break;
  }
  DTNN_CHECK(fan > 0, "initializer ", init_name(init), " needs positive fans");
  const bool uniform = init == Init::glorot_uniform || init == Init::he_uniform || init == Init::lecun_uniform;
  if (uniform) {
    const double limit = std::sqrt(3.0 * scale / fan);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(rng.uniform(-limit, limit));
  } else {
    // Keras' truncated normal: the stddev is corrected for the truncation at +-2 sigma.
    const double stddev = std::sqrt(scale / fan) / 0.87962566103423978;
    for (int64_t i = 0; i < n; ++i) {
      double z = rng.normal();
      while (std::fabs(z) > 2.0) z = rng.normal();
      dst[i] = static_cast<float>(z * stddev);
    }
  }
}

void Layer::init_params(Rng& rng) {
  for (Param& p : params_) init_fill(p.init, p.fan_in, p.fan_out, rng, p.value.data(), p.value.numel());
  for (Param& b : buffers_) init_fill(b.init, b.fan_in, b.fan_out, rng, b.value.data(), b.value.numel());
}

int64_t Layer::num_params() const {
  int64_t n = 0;
  for (const Param& p : params_) n += p.shape.numel();
  for (const Layer* child : children()) n += child->num_own_params();  // children() lists every descendant
  return n;
}

int64_t Layer::num_own_params() const {
  int64_t n = 0;
  for (const Param& p : params_) n += p.shape.numel();
  return n;
}

}  // namespace dtnn
