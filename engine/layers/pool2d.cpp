// MaxPool2D and AveragePool2D with PyDTNN's semantics:
//  - output size uses the convolution formula (floor); a pool dimension of 0 means the whole input extent;
//  - padded positions never win a max and are not counted in an average (count_include_pad = false);
//  - max: strict '>' scan in (r, s) order, so the first maximum wins; backward routes dy to it.
// A window that lies entirely in padding outputs 0 and passes no gradient.
#include <cstdio>
#include <cstring>
#ifdef __AVX2__
#include <immintrin.h>
#endif
#include <limits>
#include <vector>

#include "backend/gpu_ops.h"
#include "conv/conv_problem.h"
#include "core/error.h"
#include "layers/layers.h"

namespace dtnn {
namespace {

struct Geometry {
  int64_t c, h, w, r, s, p, q, sh, sw, ph, pw, dh, dw;
  // Element strides of an activation in the layout (per sample, channel, row, column).
  int64_t xs_n, xs_c, xs_h, xs_w, ys_n, ys_c, ys_h, ys_w;
};

class Pool2D : public Layer {
 public:
  explicit Pool2D(const Pool2DSpec& spec) : spec_(spec) {}

  Shape build(const Shape& in, const BuildContext& ctx) override {
    layout_ = ctx.layout;
    DTNN_CHECK(in.rank() == 3, type(), " needs a 3-D per-sample input, got ", in.str());
    Geometry& g = g_;
    const bool nhwc = layout_ == Layout::nhwc;
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
    const int64_t HW = g.h * g.w, PQ = g.p * g.q;
    g.xs_n = g.c * HW; g.ys_n = g.c * PQ;
    if (nhwc) {
      g.xs_c = 1; g.xs_h = g.w * g.c; g.xs_w = g.c;
      g.ys_c = 1; g.ys_h = g.q * g.c; g.ys_w = g.c;
    } else {
      g.xs_c = HW; g.xs_h = g.w; g.xs_w = 1;
      g.ys_c = PQ; g.ys_h = g.q; g.ys_w = 1;
    }
    out_sample_ = nhwc ? Shape{g.p, g.q, g.c} : Shape{g.c, g.p, g.q};
    taps_.assign(g.r * g.s, 0);
    gpu_ = ctx.gpu();
    if (gpu_) {
      gg_.max = type() == "MaxPool2D";
      gg_.layout = layout_;
      gg_.c = g.c; gg_.h = g.h; gg_.w = g.w; gg_.r = g.r; gg_.s = g.s; gg_.p = g.p; gg_.q = g.q;
      gg_.sh = g.sh; gg_.sw = g.sw; gg_.ph = g.ph; gg_.pw = g.pw; gg_.dh = g.dh; gg_.dw = g.dw;
      if (gg_.max) argmax_dev_ = ctx.zeros(Shape{ctx.max_batch * g.ys_n});  // int32 indices in float storage
      return out_sample_;
    }
    on_build(ctx.max_batch * g.ys_n);
    return out_sample_;
  }

  std::string describe() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, "pool=(%lld,%lld), padd=(%lld,%lld), stride=(%lld,%lld)", (long long)g_.r,
                  (long long)g_.s, (long long)g_.ph, (long long)g_.pw, (long long)g_.sh, (long long)g_.sw);
    return buf;
  }

 protected:
  virtual void on_build(int64_t) {}

  // Calls fn(y_offset, x_offsets of the in-bounds window taps) for every output element of n samples.
  template <typename Fn>
  void for_each_window(int64_t n, Fn&& fn) {
    for_each_window_impl(n, [&](int64_t y0, const int64_t* tap, int64_t count) {
      for (int64_t c = 0; c < g_.c; ++c) fn(y0 + c * g_.ys_c, tap, count, c * g_.xs_c);
    });
  }

  // Visits every output pixel (b, oh, ow) with the input offsets of its in-bounds window taps.
  template <typename Fn>
  void for_each_window_impl(int64_t n, Fn&& fn) {
    const Geometry& g = g_;
    int64_t* tap = taps_.data();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oh = 0; oh < g.p; ++oh)
        for (int64_t ow = 0; ow < g.q; ++ow) {
          int64_t count = 0;
          for (int64_t r = 0; r < g.r; ++r) {
            const int64_t ih = oh * g.sh - g.ph + r * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            for (int64_t s = 0; s < g.s; ++s) {
              const int64_t iw = ow * g.sw - g.pw + s * g.dw;
              if (iw >= 0 && iw < g.w) tap[count++] = b * g.xs_n + ih * g.xs_h + iw * g.xs_w;
            }
          }
          fn(b * g.ys_n + oh * g.ys_h + ow * g.ys_w, tap, count);
        }
  }

  // GPU: the kernels of backend/gpu/pool.cu (max pooling keeps its argmax in argmax_dev_).
  bool gpu_forward(const Tensor& x, const Tensor& y) {
    if (gpu_) gpu::pool_forward(gg_, x.dim(0), x.data(), y.data(), argmax());
    return gpu_;
  }
  bool gpu_backward(const Tensor& x, const Tensor& dy, const Tensor& dx) {
    if (gpu_ && !dx.empty()) gpu::pool_backward(gg_, x.dim(0), dy.data(), argmax(), dx.data());
    return gpu_;
  }
  int32_t* argmax() const { return argmax_dev_.empty() ? nullptr : reinterpret_cast<int32_t*>(argmax_dev_.data()); }

  Pool2DSpec spec_;
  Geometry g_{};
  std::vector<int64_t> taps_;  // input offsets of one window's in-bounds taps
  bool gpu_ = false;
  gpu::PoolGeometry gg_;
  Tensor argmax_dev_;
};

class MaxPool2D final : public Pool2D {
 public:
  using Pool2D::Pool2D;
  std::string type() const override { return "MaxPool2D"; }

  void forward(const Tensor& x, const Tensor& y, Mode) override {
    if (gpu_forward(x, y)) return;
    const float* in = x.data();
    float* out = y.data();
    int32_t* arg = argmax_.data();
    if (layout_ == Layout::nhwc) {
      forward_nhwc(in, out, arg, x.dim(0));
      return;
    }
    // The first in-bounds tap starts the comparison (as in the NHWC path and the GPU kernels), so a window
    // of -inf gives -inf and a leading NaN wins, the same on every path; no taps: 0 and argmax -1.
    for_each_window(x.dim(0), [&](int64_t yo, const int64_t* tap, int64_t count, int64_t co) {
      float best = 0.0f;
      int64_t where = -1;
      for (int64_t t = 0; t < count; ++t) {
        const float v = in[tap[t] + co];
        if (where < 0 || v > best) { best = v; where = tap[t] + co; }
      }
      out[yo] = best;
      arg[yo] = static_cast<int32_t>(where);
    });
  }

  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx) override {
    if (gpu_backward(x, dy, dx) || dx.empty()) return;
#ifdef __AVX2__
    if (tiles_exactly()) return backward_nhwc_2x2_avx2(dy.data(), dx.data(), x.dim(0));
#endif
    std::memset(dx.data(), 0, dx.numel() * sizeof(float));
    const int32_t* arg = argmax_.data();
    for (int64_t i = 0; i < y.numel(); ++i)
      if (arg[i] >= 0) dx.data()[arg[i]] += dy.data()[i];
  }

 private:
  // NHWC: channels are contiguous, so each window tap is compared as a whole C-vector (vectorises over
  // c); the first maximum in (r, s) order wins, as in the generic path.
  void forward_nhwc(const float* in, float* out, int32_t* arg, int64_t n) const {
    const Geometry& g = g_;
    const int64_t C = g.c;
#ifdef __AVX2__
    if (g.r == 2 && g.s == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1 && C % 8 == 0)
      return forward_nhwc_2x2_avx2(in, out, arg, n);
#endif
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oh = 0; oh < g.p; ++oh)
        for (int64_t ow = 0; ow < g.q; ++ow) {
          float* best = out + b * g.ys_n + (oh * g.q + ow) * C;
          int32_t* where = arg + b * g.ys_n + (oh * g.q + ow) * C;
          bool first = true;
          for (int64_t r = 0; r < g.r; ++r) {
            const int64_t ih = oh * g.sh - g.ph + r * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            for (int64_t s = 0; s < g.s; ++s) {
              const int64_t iw = ow * g.sw - g.pw + s * g.dw;
              if (iw < 0 || iw >= g.w) continue;
              const int32_t base = static_cast<int32_t>(b * g.xs_n + (ih * g.w + iw) * C);
              const float* src = in + base;
              if (first) {
                for (int64_t c = 0; c < C; ++c) {
                  best[c] = src[c];
                  where[c] = base + static_cast<int32_t>(c);
                }
                first = false;
                continue;
              }
              for (int64_t c = 0; c < C; ++c) {
                const bool better = src[c] > best[c];
                best[c] = better ? src[c] : best[c];
                where[c] = better ? base + static_cast<int32_t>(c) : where[c];
              }
            }
          }
          if (first)  // the window lies entirely in padding
            for (int64_t c = 0; c < C; ++c) {
              best[c] = 0.0f;
              where[c] = -1;
            }
        }
  }

#ifdef __AVX2__
  // The common 2x2 unpadded window (simplecnn, VGG): four C-vectors per output pixel, compared eight
  // channels at a time with the argmax carried in a vector of int32 offsets. Same semantics as above.
  void forward_nhwc_2x2_avx2(const float* in, float* out, int32_t* arg, int64_t n) const {
    const Geometry& g = g_;
    const int64_t C = g.c;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oh = 0; oh < g.p; ++oh)
        for (int64_t ow = 0; ow < g.q; ++ow) {
          const int64_t y0 = b * g.ys_n + (oh * g.q + ow) * C;
          const int64_t t0 = b * g.xs_n + (oh * g.sh * g.w + ow * g.sw) * C;
          const int64_t taps[3] = {t0 + C, t0 + g.w * C, t0 + g.w * C + C};
          for (int64_t c = 0; c < C; c += 8) {
            __m256 best = _mm256_loadu_ps(in + t0 + c);
            __m256i where = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(t0 + c)), lane);
            for (int64_t t : taps) {
              const __m256 v = _mm256_loadu_ps(in + t + c);
              const __m256 better = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
              best = _mm256_blendv_ps(best, v, better);
              const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(t + c)), lane);
              where = _mm256_castps_si256(
                  _mm256_blendv_ps(_mm256_castsi256_ps(where), _mm256_castsi256_ps(idx), better));
            }
            _mm256_storeu_ps(out + y0 + c, best);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(arg + y0 + c), where);
          }
        }
  }
#endif

#ifdef __AVX2__
  // 2x2 windows with stride 2 over an even-sized NHWC input cover every input element exactly once,
  // so dx is written directly (dy where the argmax is, 0 elsewhere) with no clearing pass and no scatter.
  bool tiles_exactly() const {
    const Geometry& g = g_;
    return layout_ == Layout::nhwc && g.r == 2 && g.s == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
           g.dh == 1 && g.dw == 1 && g.h % 2 == 0 && g.w % 2 == 0 && g.c % 8 == 0;
  }

  void backward_nhwc_2x2_avx2(const float* dy, float* dx, int64_t n) const {
    const Geometry& g = g_;
    const int64_t C = g.c;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int32_t* arg = argmax_.data();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oh = 0; oh < g.p; ++oh)
        for (int64_t ow = 0; ow < g.q; ++ow) {
          const int64_t y0 = b * g.ys_n + (oh * g.q + ow) * C;
          const int64_t t0 = b * g.xs_n + (oh * 2 * g.w + ow * 2) * C;
          const int64_t taps[4] = {t0, t0 + C, t0 + g.w * C, t0 + g.w * C + C};
          for (int64_t c = 0; c < C; c += 8) {
            const __m256 grad = _mm256_loadu_ps(dy + y0 + c);
            const __m256i where = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(arg + y0 + c));
            for (int64_t t : taps) {
              const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(t + c)), lane);
              const __m256 hit = _mm256_castsi256_ps(_mm256_cmpeq_epi32(where, idx));
              _mm256_storeu_ps(dx + t + c, _mm256_and_ps(hit, grad));
            }
          }
        }
  }
#endif

  void on_build(int64_t max_outputs) override {
    DTNN_CHECK(g_.xs_n * (max_outputs / std::max<int64_t>(1, g_.ys_n)) < (int64_t{1} << 31),
               "MaxPool2D: batch too large for 32-bit argmax indices");
    argmax_.assign(max_outputs, -1);
  }
  std::vector<int32_t> argmax_;
};

class AveragePool2D final : public Pool2D {
 public:
  using Pool2D::Pool2D;
  std::string type() const override { return "AveragePool2D"; }

  void forward(const Tensor& x, const Tensor& y, Mode) override {
    if (gpu_forward(x, y)) return;
    const float* in = x.data();
    float* out = y.data();
    for_each_window(x.dim(0), [&](int64_t yo, const int64_t* tap, int64_t count, int64_t co) {
      float sum = 0.0f;
      for (int64_t t = 0; t < count; ++t) sum += in[tap[t] + co];
      out[yo] = count ? sum / static_cast<float>(count) : 0.0f;
    });
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, const Tensor& dx) override {
    if (gpu_backward(x, dy, dx) || dx.empty()) return;
    std::memset(dx.data(), 0, dx.numel() * sizeof(float));
    const float* g = dy.data();
    float* d = dx.data();
    for_each_window(x.dim(0), [&](int64_t yo, const int64_t* tap, int64_t count, int64_t co) {
      if (!count) return;
      const float share = g[yo] / static_cast<float>(count);
      for (int64_t t = 0; t < count; ++t) d[tap[t] + co] += share;
    });
  }
};

}  // namespace

std::unique_ptr<Layer> make_max_pool2d(const Pool2DSpec& spec) { return std::make_unique<MaxPool2D>(spec); }
std::unique_ptr<Layer> make_avg_pool2d(const Pool2DSpec& spec) { return std::make_unique<AveragePool2D>(spec); }

}  // namespace dtnn
