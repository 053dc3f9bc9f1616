// Max and average pooling with dtnn's CPU semantics (layers/pool2d.cpp), both layouts, any padding,
// stride and dilation. Forward: one thread per output. Backward: one thread per input element, gathering
// from the windows that contain it (found arithmetically, at most ceil(R/sh) x ceil(S/sw) of them for
// dilation 1): no atomics, deterministic.
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

// The output positions p (of P) whose window, with taps p*stride - pad + r*dil (r < R), covers input i:
// [lo, hi], exact for dil == 1 (a superset otherwise, checked per tap by the caller).
__device__ inline void windows_covering(int64_t i, int64_t pad, int64_t stride, int64_t dil, int64_t R, int64_t P,
                                        int64_t* lo, int64_t* hi) {
  const int64_t t = i + pad;  // = p*stride + r*dil
  if (dil != 1) {
    *lo = 0;
    *hi = min(P - 1, t / stride);
    return;
  }
  const int64_t first = t - (R - 1);  // p*stride >= t - (R-1)
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  *hi = min(P - 1, t / stride);
}

// In-bounds taps along one axis of the window starting at p*stride - pad.
__device__ inline int taps_in(int64_t p, int64_t pad, int64_t stride, int64_t dil, int64_t R, int64_t size) {
  const int64_t start = p * stride - pad;
  if (dil == 1) {
    const int64_t end = start + R < size ? start + R : size, begin = start > 0 ? start : 0;
    return end > begin ? static_cast<int>(end - begin) : 0;
  }
  int n = 0;
  for (int64_t r = 0; r < R; ++r) n += start + r * dil >= 0 && start + r * dil < size;
  return n;
}

__global__ void pool_bwd(G g, int64_t total, const float* dy, const int32_t* argmax, float* dx, bool is_max) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)blockDim.x * gridDim.x) {
    int64_t n, c, ih, iw;
    split(g, i, g.h, g.w, &n, &c, &ih, &iw);
    const int32_t me = static_cast<int32_t>(ih * g.w + iw);
    int64_t p0, p1, q0, q1;
    windows_covering(ih, g.ph, g.sh, g.dh, g.r, g.p, &p0, &p1);
    windows_covering(iw, g.pw, g.sw, g.dw, g.s, g.q, &q0, &q1);
    float acc = 0.0f;
    for (int64_t p = p0; p <= p1; ++p) {
      const int64_t tr = ih + g.ph - p * g.sh;
      if (tr < 0 || tr % g.dh || tr / g.dh >= g.r) continue;
      for (int64_t q = q0; q <= q1; ++q) {
        const int64_t ts = iw + g.pw - q * g.sw;
        if (ts < 0 || ts % g.dw || ts / g.dw >= g.s) continue;
        const int64_t o = y_index(g, n, c, p, q);
        if (is_max) {
          if (argmax[o] == me) acc += dy[o];
        } else {
          acc += dy[o] / (taps_in(p, g.ph, g.sh, g.dh, g.r, g.h) * taps_in(q, g.pw, g.sw, g.dw, g.s, g.w));
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
