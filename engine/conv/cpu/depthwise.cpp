// cpu.depthwise: direct depthwise convolution (groups == C, K = C * m for a channel multiplier m), both
// layouts, any stride, padding and dilation. MobileNet's 3x3 depthwise layers are memory-bound: a GEMM
// formulation has one input channel per group (K = m rows of C/G = 1), so direct loops that stream each
// input pixel once are the fast path.
//
//   NHWC  one output pixel's K channels are contiguous: forward and backward_data vectorise over channels
//         (x[..., c] * w[r, s, c*m + j]); the forward keeps blocks of 64 (32) channels in registers across
//         the taps (m == 1); threads split samples (forward: output rows). The weight gradient
//         sums over N*P*Q pixels: kChunks fixed slices of the samples write partial (R, S, K) sums into the
//         workspace, added in chunk order, so results do not depend on the thread count.
//   NCHW  one (sample, channel) plane at a time: rows vectorise along the output width (stride 1 runs
//         contiguous); threads split planes (backward_data: input planes, each gathering its m output
//         planes; weight gradient: output channels, each summing over the batch in order).
// Weights: dtnn's layouts, NHWC (1, R, S, K), NCHW (K, 1, R, S).
#include <algorithm>
#include <cstring>

#include "conv/cpu/cpu_algorithms.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

constexpr int64_t kChunks = 16;

// Output positions o (of `out`) whose tap t lands inside [0, in): o*stride - pad + t*dil in [0, in).
inline void valid_range(int64_t t, int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t dil, int64_t* lo,
                        int64_t* hi) {
  const int64_t off = t * dil - pad;  // input index = o*stride + off
  *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  *hi = off >= in ? -1 : std::min(out - 1, (in - 1 - off) / stride);
}

class Depthwise final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.depthwise"; }
  Support supports(const ConvProblem& p) const override {
    if (p.groups != p.c || p.c == 1) return Support::no("cpu.depthwise: needs a depthwise layer (groups == C > 1)");
    return Support::yes();  // k % c == 0 holds for every valid grouped problem with groups == c
  }
  int64_t workspace_floats(const ConvProblem& p) const override {
    return p.layout == Layout::nhwc ? kChunks * p.r * p.s * p.k : 0;
  }

  // Tracing (trace/op_trace.h): one event per direction (bias included).
  int64_t op_events(const ConvProblem&, ConvDir) const override { return 1; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float*) const override {
    const OpScope op(OpCode::fwd_depthwise);
    if (p.layout == Layout::nhwc) return forward_nhwc(p, x, w, bias, y);
    forward_nchw(p, x, w, bias, y);
  }
  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float*) const override {
    const OpScope op(OpCode::bwd_dx_depthwise);
    if (p.layout == Layout::nhwc) return backward_data_nhwc(p, dy, w, dx);
    backward_data_nchw(p, dy, w, dx);
  }
  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    const OpScope op(OpCode::bwd_dw_depthwise);
    if (p.layout == Layout::nhwc) return backward_filter_nhwc(p, x, dy, dw, db, ws);
    backward_filter_nchw(p, x, dy, dw, db);
  }

 private:
  // ---- NHWC ----
  // Channel blocks of kBlock floats stay in registers across the R*S taps of one output pixel (m == 1).
  static constexpr int64_t kBlock = 64;

  static void forward_nhwc(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y) {
    const int64_t C = p.c, K = p.k, m = K / C, P = p.p(), Q = p.q();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t oh = 0; oh < P; ++oh)
        for (int64_t ow = 0; ow < Q; ++ow) {
          float* out = y + ((n * P + oh) * Q + ow) * K;
          if (m == 1) {
            for (int64_t k0 = 0; k0 < K;) {
              if (K - k0 >= kBlock) {
                pixel_channels<kBlock>(p, x, w, bias, out, n, oh, ow, k0, kBlock);
                k0 += kBlock;
              } else if (K - k0 >= 32) {
                pixel_channels<32>(p, x, w, bias, out, n, oh, ow, k0, 32);
                k0 += 32;
              } else {
                pixel_channels<0>(p, x, w, bias, out, n, oh, ow, k0, K - k0);
                k0 = K;
              }
            }
            continue;
          }
          if (bias)
            std::memcpy(out, bias, K * sizeof(float));
          else
            std::memset(out, 0, K * sizeof(float));
          for (int64_t r = 0; r < p.r; ++r) {
            const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
            if (ih < 0 || ih >= p.h) continue;
            for (int64_t s = 0; s < p.s; ++s) {
              const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
              if (iw < 0 || iw >= p.w) continue;
              const float* in = x + ((n * p.h + ih) * p.w + iw) * C;
              const float* wt = w + (r * p.s + s) * K;
              for (int64_t c = 0; c < C; ++c)
                for (int64_t j = 0; j < m; ++j) out[c * m + j] += in[c] * wt[c * m + j];
            }
          }
        }
  }

  // One output pixel's channels [k0, k0 + n) with m == 1, n = B when B > 0 (a compile-time block the
  // compiler keeps in vector registers) or `count` (the tail, B == 0); one store per channel at the end.
  template <int64_t B>
  static void pixel_channels(const ConvProblem& p, const float* x, const float* w, const float* bias, float* out,
                             int64_t n, int64_t oh, int64_t ow, int64_t k0, int64_t count) {
    const int64_t K = p.k, nb = B > 0 ? B : count;
    float acc[B > 0 ? B : kBlock];
    for (int64_t j = 0; j < nb; ++j) acc[j] = bias ? bias[k0 + j] : 0.0f;
    for (int64_t r = 0; r < p.r; ++r) {
      const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
      if (ih < 0 || ih >= p.h) continue;
      for (int64_t s = 0; s < p.s; ++s) {
        const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
        if (iw < 0 || iw >= p.w) continue;
        const float* in = x + ((n * p.h + ih) * p.w + iw) * K + k0;
        const float* wt = w + (r * p.s + s) * K + k0;
#pragma omp simd
        for (int64_t j = 0; j < nb; ++j) acc[j] += in[j] * wt[j];
      }
    }
    for (int64_t j = 0; j < nb; ++j) out[k0 + j] = acc[j];
  }

  static void backward_data_nhwc(const ConvProblem& p, const float* dy, const float* w, float* dx) {
    const int64_t C = p.c, K = p.k, m = K / C, P = p.p(), Q = p.q();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < p.n; ++n) {
      std::memset(dx + n * p.h * p.w * C, 0, p.h * p.w * C * sizeof(float));
      for (int64_t oh = 0; oh < P; ++oh)
        for (int64_t ow = 0; ow < Q; ++ow) {
          const float* g = dy + ((n * P + oh) * Q + ow) * K;
          for (int64_t r = 0; r < p.r; ++r) {
            const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
            if (ih < 0 || ih >= p.h) continue;
            for (int64_t s = 0; s < p.s; ++s) {
              const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
              if (iw < 0 || iw >= p.w) continue;
              float* d = dx + ((n * p.h + ih) * p.w + iw) * C;
              const float* wt = w + (r * p.s + s) * K;
              if (m == 1) {
#pragma omp simd
                for (int64_t c = 0; c < C; ++c) d[c] += g[c] * wt[c];
              } else {
                for (int64_t c = 0; c < C; ++c) {
                  float acc = 0.0f;
                  for (int64_t j = 0; j < m; ++j) acc += g[c * m + j] * wt[c * m + j];
                  d[c] += acc;
                }
              }
            }
          }
        }
    }
  }

  static void backward_filter_nhwc(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                                   float* ws) {
    const int64_t C = p.c, K = p.k, m = K / C, P = p.p(), Q = p.q(), RSK = p.r * p.s * K;
    const int64_t chunks = std::min(kChunks, p.n);
#pragma omp parallel for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      float* part = ws + chunk * RSK;
      std::memset(part, 0, RSK * sizeof(float));
      const int64_t n0 = p.n * chunk / chunks, n1 = p.n * (chunk + 1) / chunks;
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t oh = 0; oh < P; ++oh)
          for (int64_t ow = 0; ow < Q; ++ow) {
            const float* g = dy + ((n * P + oh) * Q + ow) * K;
            for (int64_t r = 0; r < p.r; ++r) {
              const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
              if (ih < 0 || ih >= p.h) continue;
              for (int64_t s = 0; s < p.s; ++s) {
                const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
                if (iw < 0 || iw >= p.w) continue;
                const float* in = x + ((n * p.h + ih) * p.w + iw) * C;
                float* acc = part + (r * p.s + s) * K;
                if (m == 1) {
#pragma omp simd
                  for (int64_t k = 0; k < K; ++k) acc[k] += in[k] * g[k];
                } else {
                  for (int64_t c = 0; c < C; ++c)
                    for (int64_t j = 0; j < m; ++j) acc[c * m + j] += in[c] * g[c * m + j];
                }
              }
            }
          }
    }
    if (chunks == 0) {  // an empty batch: no partial sums were zeroed, and the gradient is zero
      std::memset(dw, 0, RSK * sizeof(float));
      if (db) std::memset(db, 0, K * sizeof(float));
      return;
    }
    std::memcpy(dw, ws, RSK * sizeof(float));
    for (int64_t chunk = 1; chunk < chunks; ++chunk) {
      const float* part = ws + chunk * RSK;
#pragma omp simd
      for (int64_t i = 0; i < RSK; ++i) dw[i] += part[i];
    }
    if (db) conv_sum_bias(p, dy, db, 0, p.n * P * Q, false);
  }

  // ---- NCHW ----
  static void forward_nchw(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y) {
    const int64_t C = p.c, K = p.k, m = K / C, P = p.p(), Q = p.q();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t k = 0; k < K; ++k) {
        const float* plane = x + (n * C + k / m) * p.h * p.w;
        float* out = y + (n * K + k) * P * Q;
        std::fill(out, out + P * Q, bias ? bias[k] : 0.0f);
        for (int64_t r = 0; r < p.r; ++r) {
          int64_t oh0, oh1;
          valid_range(r, p.h, P, p.stride_h, p.pad_h, p.dil_h, &oh0, &oh1);
          for (int64_t s = 0; s < p.s; ++s) {
            int64_t ow0, ow1;
            valid_range(s, p.w, Q, p.stride_w, p.pad_w, p.dil_w, &ow0, &ow1);
            const float wt = w[(k * p.r + r) * p.s + s];
            for (int64_t oh = oh0; oh <= oh1; ++oh) {
              const float* row = plane + (oh * p.stride_h - p.pad_h + r * p.dil_h) * p.w + (s * p.dil_w - p.pad_w);
              float* o = out + oh * Q;
              if (p.stride_w == 1) {
#pragma omp simd
                for (int64_t ow = ow0; ow <= ow1; ++ow) o[ow] += row[ow] * wt;
              } else {
                for (int64_t ow = ow0; ow <= ow1; ++ow) o[ow] += row[ow * p.stride_w] * wt;
              }
            }
          }
        }
      }
  }

  static void backward_data_nchw(const ConvProblem& p, const float* dy, const float* w, float* dx) {
    const int64_t C = p.c, K = p.k, m = K / C, P = p.p(), Q = p.q();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t c = 0; c < C; ++c) {
        float* plane = dx + (n * C + c) * p.h * p.w;
        std::memset(plane, 0, p.h * p.w * sizeof(float));
        for (int64_t k = c * m; k < (c + 1) * m; ++k) {
          const float* g = dy + (n * K + k) * P * Q;
          for (int64_t r = 0; r < p.r; ++r) {
            int64_t oh0, oh1;
            valid_range(r, p.h, P, p.stride_h, p.pad_h, p.dil_h, &oh0, &oh1);
            for (int64_t s = 0; s < p.s; ++s) {
              int64_t ow0, ow1;
              valid_range(s, p.w, Q, p.stride_w, p.pad_w, p.dil_w, &ow0, &ow1);
              const float wt = w[(k * p.r + r) * p.s + s];
              for (int64_t oh = oh0; oh <= oh1; ++oh) {
                float* row = plane + (oh * p.stride_h - p.pad_h + r * p.dil_h) * p.w + (s * p.dil_w - p.pad_w);
                const float* gr = g + oh * Q;
                if (p.stride_w == 1) {
#pragma omp simd
                  for (int64_t ow = ow0; ow <= ow1; ++ow) row[ow] += gr[ow] * wt;
                } else {
                  for (int64_t ow = ow0; ow <= ow1; ++ow) row[ow * p.stride_w] += gr[ow] * wt;
                }
              }
            }
          }
        }
      }
  }

  static void backward_filter_nchw(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db) {
    const int64_t C = p.c, K = p.k, m = K / C, P = p.p(), Q = p.q();
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < K; ++k) {
      float* wk = dw + k * p.r * p.s;
      std::fill(wk, wk + p.r * p.s, 0.0f);
      float bsum = 0.0f;
      for (int64_t n = 0; n < p.n; ++n) {
        const float* plane = x + (n * C + k / m) * p.h * p.w;
        const float* g = dy + (n * K + k) * P * Q;
        for (int64_t r = 0; r < p.r; ++r) {
          int64_t oh0, oh1;
          valid_range(r, p.h, P, p.stride_h, p.pad_h, p.dil_h, &oh0, &oh1);
          for (int64_t s = 0; s < p.s; ++s) {
            int64_t ow0, ow1;
            valid_range(s, p.w, Q, p.stride_w, p.pad_w, p.dil_w, &ow0, &ow1);
            float acc = 0.0f;
            for (int64_t oh = oh0; oh <= oh1; ++oh) {
              const float* row = plane + (oh * p.stride_h - p.pad_h + r * p.dil_h) * p.w + (s * p.dil_w - p.pad_w);
              const float* gr = g + oh * Q;
              if (p.stride_w == 1) {
#pragma omp simd reduction(+ : acc)
                for (int64_t ow = ow0; ow <= ow1; ++ow) acc += row[ow] * gr[ow];
              } else {
                for (int64_t ow = ow0; ow <= ow1; ++ow) acc += row[ow * p.stride_w] * gr[ow];
              }
            }
            wk[r * p.s + s] += acc;
          }
        }
        if (db) {
          float b = 0.0f;
#pragma omp simd reduction(+ : b)
          for (int64_t i = 0; i < P * Q; ++i) b += g[i];
          bsum += b;
        }
      }
      if (db) db[k] = bsum;
    }
  }
};

}  // namespace

const ConvAlgorithm& conv_depthwise() {
  static const Depthwise algo;
  return algo;
}

}  // namespace dtnn
