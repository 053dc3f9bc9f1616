// Max and average pooling with dtnn's CPU semantics (layers/pool2d.cpp), both layouts, any padding,
// stride and dilation. Forward: one thread per output. Backward: one thread per input element, gathering
// from the (at most ceil(R*dh/sh) x ceil(S*dw/sw)) windows that can contain it: no atomics, deterministic.
#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {
namespace {

struct G {
  int64_t c, h, w, r, s, p, q, sh, sw, ph, pw, dh, dw;
  bool nhwc;
};

__device__ inline int64_t x_index(const G& g, int64_t n, int64_t c, int64_t h, int64_t w) {
  return g.nhwc ? ((n * g.h + h) * g.w + w) * g.c + c : ((n * g.c + c) * g.h + h) * g.w + w;
}
__device__ inline int64_t y_index(const G& g, int64_t n, int64_t c, int64_t p, int64_t q) {
  return g.nhwc ? ((n * g.p + p) * g.q + q) * g.c + c : ((n * g.c + c) * g.p + p) * g.q + q;
}
// Splits a linear index in the layout's order into (n, c, a, b) for an (N, C, A, B)-sized tensor.
__device__ inline void split(const G& g, int64_t i, int64_t A, int64_t B, int64_t* n, int64_t* c, int64_t* a,
                             int64_t* b) {
  if (g.nhwc) {
    *c = i % g.c; i /= g.c;
    *b = i % B; i /= B;
    *a = i % A; *n = i / A;
  } else {
    *b = i % B; i /= B;
    *a = i % A; i /= A;
    *c = i % g.c; *n = i / g.c;
  }
}

__global__ void pool_fwd(G g, int64_t total, const float* x, float* y, int32_t* argmax, bool is_max) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)blockDim.x * gridDim.x) {
    int64_t n, c, p, q;
    split(g, i, g.p, g.q, &n, &c, &p, &q);
    float best = 0.0f, sum = 0.0f;
    int32_t where = -1;
    int count = 0;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t ih = p * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t iw = q * g.sw - g.pw + s * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        const float v = x[x_index(g, n, c, ih, iw)];
        if (is_max) {
          if (where < 0 || v > best) {  // strict: the first maximum in (r, s) order wins
            best = v;
            where = static_cast<int32_t>(ih * g.w + iw);
          }
        } else {
          sum += v;
          ++count;
        }
      }
    }
    const int64_t o = y_index(g, n, c, p, q);
    if (is_max) {
      y[o] = where < 0 ? 0.0f : best;
      if (argmax) argmax[o] = where;
    } else {
      y[o] = count ? sum / count : 0.0f;
    }
  }
}

__global__ void pool_bwd(G g, int64_t total, const float* dy, const int32_t* argmax, float* dx, bool is_max) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)blockDim.x * gridDim.x) {
    int64_t n, c, ih, iw;
    split(g, i, g.h, g.w, &n, &c, &ih, &iw);
    const int32_t me = static_cast<int32_t>(ih * g.w + iw);
    float acc = 0.0f;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t tp = ih + g.ph - r * g.dh;
      if (tp < 0 || tp % g.sh) continue;
      const int64_t p = tp / g.sh;
      if (p >= g.p) continue;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t tq = iw + g.pw - s * g.dw;
        if (tq < 0 || tq % g.sw) continue;
        const int64_t q = tq / g.sw;
        if (q >= g.q) continue;
        const int64_t o = y_index(g, n, c, p, q);
        if (is_max) {
          if (argmax[o] == me) acc += dy[o];
        } else {
          int rows = 0, cols = 0;  // in-bounds taps of window (p, q): rows x cols
          for (int64_t rr = 0; rr < g.r; ++rr) {
            const int64_t hh = p * g.sh - g.ph + rr * g.dh;
            rows += hh >= 0 && hh < g.h;
          }
          for (int64_t ss = 0; ss < g.s; ++ss) {
            const int64_t ww = q * g.sw - g.pw + ss * g.dw;
            cols += ww >= 0 && ww < g.w;
          }
          const int count = rows * cols;
          acc += dy[o] / count;
        }
      }
    }
    dx[x_index(g, n, c, ih, iw)] = acc;
  }
}

G to_g(const PoolGeometry& pg) {
  return G{pg.c, pg.h, pg.w, pg.r, pg.s, pg.p, pg.q, pg.sh, pg.sw, pg.ph, pg.pw, pg.dh, pg.dw,
           pg.layout == Layout::nhwc};
}

}  // namespace

void pool_forward(const PoolGeometry& pg, int64_t n, const float* x, float* y, int32_t* argmax) {
  const int64_t total = n * pg.c * pg.p * pg.q;
  if (total == 0) return;
  pool_fwd<<<blocks_for(total), 256, 0, stream()>>>(to_g(pg), total, x, y, argmax, pg.max);
  DTNN_LAUNCH_CHECK();
}

void pool_backward(const PoolGeometry& pg, int64_t n, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t total = n * pg.c * pg.h * pg.w;
  if (total == 0) return;
  pool_bwd<<<blocks_for(total), 256, 0, stream()>>>(to_g(pg), total, dy, argmax, dx, pg.max);
  DTNN_LAUNCH_CHECK();
}

}  // namespace dtnn::gpu
