// Small utilities shared by the tests: deterministic random fills and error measures.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/rng.h"
#include "tensor/tensor.h"

namespace dtnn::test {

// A convolution workspace as ConvAlgorithm's contract gives it: at least one float, 64-byte aligned (oneDNN's
// Winograd kernels use aligned stores into their scratchpad), every float set to `fill`.
class Workspace {
 public:
  explicit Workspace(int64_t floats, float fill = 0.0f) : n_(std::max<int64_t>(1, floats)), p_(aligned_alloc_floats(n_)) {
    std::fill(p_, p_ + n_, fill);
  }
  ~Workspace() { aligned_free(p_); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  float* data() const { return p_; }

 private:
  int64_t n_;
  float* p_;
};

inline void fill_uniform(const Tensor& t, Rng& rng, float lo = -1.0f, float hi = 1.0f) {
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = lo + (hi - lo) * rng.uniform_f();
}

inline void fill_uniform(std::vector<float>& v, Rng& rng, float lo = -1.0f, float hi = 1.0f) {
  for (float& x : v) x = lo + (hi - lo) * rng.uniform_f();
}

// max |a - b| / max(max |b|, tiny): one number per tensor, robust to individual tiny elements. A NaN or
// infinity on either side gives +inf (std::max would skip a NaN difference and let a NaN output pass).
inline double max_rel_error(const float* a, const float* b, int64_t n) {
  double err = 0.0, scale = 1e-30;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return std::numeric_limits<double>::infinity();
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return err / scale;
}

inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  return max_rel_error(a.data(), b.data(), static_cast<int64_t>(a.size()));
}

inline std::string temp_path(const std::string& name) {
  return "/tmp/dtnn_test_" + std::to_string(::getpid()) + "_" + name;
}

}  // namespace dtnn::test
