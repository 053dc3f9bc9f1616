#include "conv/reference/conv_reference.h"

namespace dtnn {

// The workspace holds dx in double while it is scattered into (2 floats per element).
int64_t ConvReference::workspace_floats(const ConvProblem& p) const { return 2 * p.x_numel(); }

void ConvReference::forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
                            float*) const {
  const int64_t P = p.p(), Q = p.q(), cpg = p.c / p.groups, kpg = p.k / p.groups;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k) {
      const int64_t g = k / kpg;
      for (int64_t oh = 0; oh < P; ++oh)
        for (int64_t ow = 0; ow < Q; ++ow) {
          double acc = bias ? bias[k] : 0.0;
          for (int64_t cg = 0; cg < cpg; ++cg)
            for (int64_t r = 0; r < p.r; ++r) {
              const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
              if (ih < 0 || ih >= p.h) continue;
              for (int64_t s = 0; s < p.s; ++s) {
                const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
                if (iw < 0 || iw >= p.w) continue;
                acc += static_cast<double>(x[act_index(p.layout, p.c, p.h, p.w, n, g * cpg + cg, ih, iw)]) *
                       w[conv_weight_index(p, k, cg, r, s)];
              }
            }
          y[act_index(p.layout, p.k, P, Q, n, k, oh, ow)] = static_cast<float>(acc);
        }
    }
}

void ConvReference::backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx,
                                  float* ws) const {
  const int64_t P = p.p(), Q = p.q(), cpg = p.c / p.groups, kpg = p.k / p.groups;
  double* acc = reinterpret_cast<double*>(ws);
  for (int64_t i = 0; i < p.x_numel(); ++i) acc[i] = 0.0;
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k) {
      const int64_t g = k / kpg;
      for (int64_t oh = 0; oh < P; ++oh)
        for (int64_t ow = 0; ow < Q; ++ow) {
          const double d = dy[act_index(p.layout, p.k, P, Q, n, k, oh, ow)];
          for (int64_t cg = 0; cg < cpg; ++cg)
            for (int64_t r = 0; r < p.r; ++r) {
              const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
              if (ih < 0 || ih >= p.h) continue;
              for (int64_t s = 0; s < p.s; ++s) {
                const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
                if (iw < 0 || iw >= p.w) continue;
                acc[act_index(p.layout, p.c, p.h, p.w, n, g * cpg + cg, ih, iw)] +=
                    d * w[conv_weight_index(p, k, cg, r, s)];
              }
            }
        }
    }
  for (int64_t i = 0; i < p.x_numel(); ++i) dx[i] = static_cast<float>(acc[i]);
}

void ConvReference::backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                                    float*) const {
  const int64_t P = p.p(), Q = p.q(), cpg = p.c / p.groups, kpg = p.k / p.groups;
  if (db)
    for (int64_t k = 0; k < p.k; ++k) {
      double acc = 0.0;
      for (int64_t n = 0; n < p.n; ++n)
        for (int64_t oh = 0; oh < P; ++oh)
          for (int64_t ow = 0; ow < Q; ++ow) acc += dy[act_index(p.layout, p.k, P, Q, n, k, oh, ow)];
      db[k] = static_cast<float>(acc);
    }
  for (int64_t k = 0; k < p.k; ++k) {
    const int64_t g = k / kpg;
    for (int64_t cg = 0; cg < cpg; ++cg)
      for (int64_t r = 0; r < p.r; ++r)
        for (int64_t s = 0; s < p.s; ++s) {
          double acc = 0.0;
          for (int64_t n = 0; n < p.n; ++n)
            for (int64_t oh = 0; oh < P; ++oh) {
              const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
              if (ih < 0 || ih >= p.h) continue;
              for (int64_t ow = 0; ow < Q; ++ow) {
                const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
                if (iw < 0 || iw >= p.w) continue;
                acc += static_cast<double>(dy[act_index(p.layout, p.k, P, Q, n, k, oh, ow)]) *
                       x[act_index(p.layout, p.c, p.h, p.w, n, g * cpg + cg, ih, iw)];
              }
            }
          dw[conv_weight_index(p, k, cg, r, s)] = static_cast<float>(acc);
        }
  }
}

}  // namespace dtnn
