// Max and average pooling with dtnn's semantics (backend/pool.h, as backend/cpu/pool.cpp), both layouts, any padding,
// stride and dilation. Forward: one thread per output. Backward: one thread per input element, gathering
// from the windows that contain it (found arithmetically, at most ceil(R/sh) x ceil(S/sw) of them for
// dilation 1): no atomics, deterministic.
//
// 32-bit index arithmetic whenever both tensors have fewer than 2^30 elements (every model here; 64-bit
// division costs several times as much and made resnet50's 112x112 max-pool backward 2.1 ms on an H100),
// 64-bit otherwise. NCHW has its own plane-wise kernels (below); NHWC and huge tensors take the generic
// ones, instantiated per layout and index type.
#include <algorithm>
#include <limits>

#include "backend/gpu/gpu_check.h"
#include "backend/gpu_ops.h"

namespace dtnn::gpu {
namespace {

template <typename I>
struct G {
  I c, h, w, r, s, p, q, sh, sw, ph, pw, dh, dw;
};

template <bool NHWC, typename I>
__device__ inline I x_index(const G<I>& g, I n, I c, I h, I w) {
  return NHWC ? ((n * g.h + h) * g.w + w) * g.c + c : ((n * g.c + c) * g.h + h) * g.w + w;
}
template <bool NHWC, typename I>
__device__ inline I y_index(const G<I>& g, I n, I c, I p, I q) {
  return NHWC ? ((n * g.p + p) * g.q + q) * g.c + c : ((n * g.c + c) * g.p + p) * g.q + q;
}
// Splits a linear index in the layout's order into (n, c, a, b) for an (N, C, A, B)-sized tensor.
template <bool NHWC, typename I>
__device__ inline void split(const G<I>& g, I i, I A, I B, I* n, I* c, I* a, I* b) {
  if (NHWC) {
    *c = i % g.c; i /= g.c;
    *b = i % B; i /= B;
    *a = i % A; *n = i / A;
  } else {
    *b = i % B; i /= B;
    *a = i % A; i /= A;
    *c = i % g.c; *n = i / g.c;
  }
}

template <bool NHWC, typename I>
__global__ void pool_fwd(G<I> g, I total, const float* __restrict__ x, float* __restrict__ y,
                         int32_t* __restrict__ argmax, bool is_max) {
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)blockDim.x * gridDim.x) {
    I n, c, p, q;
    split<NHWC>(g, i, g.p, g.q, &n, &c, &p, &q);
    float best = 0.0f, sum = 0.0f;
    int32_t where = -1;
    int count = 0;
    for (I r = 0; r < g.r; ++r) {
      const I ih = p * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      for (I s = 0; s < g.s; ++s) {
        const I iw = q * g.sw - g.pw + s * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        const float v = __ldg(x + x_index<NHWC>(g, n, c, ih, iw));
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
    // Forward's output index is i itself: the linear index in the layout's order.
    if (is_max) {
      y[i] = where < 0 ? 0.0f : best;
      if (argmax) argmax[i] = where;
    } else {
      y[i] = count ? sum / count : 0.0f;
    }
  }
}

// The output positions p (of P) whose window, with taps p*stride - pad + r*dil (r < R), covers input i:
// [lo, hi], exact for dil == 1 (a superset otherwise, checked per tap by the caller).
template <typename I>
__device__ inline void windows_covering(I i, I pad, I stride, I dil, I R, I P, I* lo, I* hi) {
  const I t = i + pad;  // = p*stride + r*dil
  *hi = min(P - 1, t / stride);
  if (dil != 1) {
    *lo = 0;
    return;
  }
  const I first = t - (R - 1);  // p*stride >= t - (R-1)
  *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
}

// In-bounds taps along one axis of the window starting at p*stride - pad.
template <typename I>
__device__ inline int taps_in(I p, I pad, I stride, I dil, I R, I size) {
  const I start = p * stride - pad;
  if (dil == 1) {
    const I end = start + R < size ? start + R : size, begin = start > 0 ? start : 0;
    return end > begin ? static_cast<int>(end - begin) : 0;
  }
  int n = 0;
  for (I r = 0; r < R; ++r) n += start + r * dil >= 0 && start + r * dil < size;
  return n;
}

template <bool NHWC, typename I>
__global__ void pool_bwd(G<I> g, I total, const float* __restrict__ dy, const int32_t* __restrict__ argmax,
                         float* __restrict__ dx, bool is_max) {
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)blockDim.x * gridDim.x) {
    I n, c, ih, iw;
    split<NHWC>(g, i, g.h, g.w, &n, &c, &ih, &iw);
    const int32_t me = static_cast<int32_t>(ih * g.w + iw);
    I p0, p1, q0, q1;
    windows_covering(ih, g.ph, g.sh, g.dh, g.r, g.p, &p0, &p1);
    windows_covering(iw, g.pw, g.sw, g.dw, g.s, g.q, &q0, &q1);
    float acc = 0.0f;
    for (I p = p0; p <= p1; ++p) {
      const I tr = ih + g.ph - p * g.sh;
      if (tr < 0 || tr % g.dh || tr / g.dh >= g.r) continue;
      for (I q = q0; q <= q1; ++q) {
        const I ts = iw + g.pw - q * g.sw;
        if (ts < 0 || ts % g.dw || ts / g.dw >= g.s) continue;
        const I o = y_index<NHWC>(g, n, c, p, q);
        if (is_max) {
          if (__ldg(argmax + o) == me) acc += __ldg(dy + o);
        } else {
          acc += __ldg(dy + o) / (taps_in(p, g.ph, g.sh, g.dh, g.r, g.h) * taps_in(q, g.pw, g.sw, g.dw, g.s, g.w));
        }
      }
    }
    dx[i] = acc;  // the linear index in the layout's order is x_index(n, c, ih, iw)
  }
}

// NCHW with 32-bit indices (the GPU's default layout): a 2-D grid, blockIdx.y over the N*C planes, so a
// thread finds its position in the plane with one division; with dilation 1 the covering windows are
// exact and need no per-tap checks. The same results as pool_fwd / pool_bwd.
template <bool DIL1>
__global__ void pool_fwd_planes(G<int> g, int planes, const float* __restrict__ x, float* __restrict__ y,
                                int32_t* __restrict__ argmax, bool is_max) {
  const int pq = g.p * g.q, hw = g.h * g.w;
  for (int plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float* xp = x + static_cast<size_t>(plane) * hw;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < pq; e += blockDim.x * gridDim.x) {
      const int p = e / g.q, q = e - p * g.q;
      float best = 0.0f, sum = 0.0f;
      int32_t where = -1;
      int count = 0;
      for (int r = 0; r < g.r; ++r) {
        const int ih = p * g.sh - g.ph + r * (DIL1 ? 1 : g.dh);
        if (ih < 0 || ih >= g.h) continue;
        for (int s = 0; s < g.s; ++s) {
          const int iw = q * g.sw - g.pw + s * (DIL1 ? 1 : g.dw);
          if (iw < 0 || iw >= g.w) continue;
          const float v = __ldg(xp + ih * g.w + iw);
          if (is_max) {
            if (where < 0 || v > best) {  // strict: the first maximum in (r, s) order wins
              best = v;
              where = ih * g.w + iw;
            }
          } else {
            sum += v;
            ++count;
          }
        }
      }
      const size_t o = static_cast<size_t>(plane) * pq + e;
      if (is_max) {
        y[o] = where < 0 ? 0.0f : best;
        if (argmax) argmax[o] = where;
      } else {
        y[o] = count ? sum / count : 0.0f;
      }
    }
  }
}

template <bool DIL1>
__global__ void pool_bwd_planes(G<int> g, int planes, const float* __restrict__ dy,
                                const int32_t* __restrict__ argmax, float* __restrict__ dx, bool is_max) {
  const int pq = g.p * g.q, hw = g.h * g.w;
  for (int plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const float* dyp = dy + static_cast<size_t>(plane) * pq;
    const int32_t* ap = argmax ? argmax + static_cast<size_t>(plane) * pq : nullptr;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < hw; e += blockDim.x * gridDim.x) {
      const int ih = e / g.w, iw = e - ih * g.w;
      int p0, p1, q0, q1;
      windows_covering(ih, g.ph, g.sh, DIL1 ? 1 : g.dh, g.r, g.p, &p0, &p1);
      windows_covering(iw, g.pw, g.sw, DIL1 ? 1 : g.dw, g.s, g.q, &q0, &q1);
      float acc = 0.0f;
      for (int p = p0; p <= p1; ++p) {
        if (!DIL1) {
          const int tr = ih + g.ph - p * g.sh;
          if (tr < 0 || tr % g.dh || tr / g.dh >= g.r) continue;
        }
        for (int q = q0; q <= q1; ++q) {
          if (!DIL1) {
            const int ts = iw + g.pw - q * g.sw;
            if (ts < 0 || ts % g.dw || ts / g.dw >= g.s) continue;
          }
          const int o = p * g.q + q;
          if (is_max) {
            if (__ldg(ap + o) == e) acc += __ldg(dyp + o);
          } else {
            acc += __ldg(dyp + o) / (taps_in(p, g.ph, g.sh, g.dh, g.r, g.h) * taps_in(q, g.pw, g.sw, g.dw, g.s, g.w));
          }
        }
      }
      dx[static_cast<size_t>(plane) * hw + e] = acc;
    }
  }
}

// Planes of fewer elements than a block (a global average pool's 1x1 outputs) leave most threads idle: they
// take the generic kernels.
constexpr int64_t kMinPlane = 256;

dim3 plane_grid(int64_t per_plane, int64_t planes) {
  const int64_t x = std::min<int64_t>((per_plane + 255) / 256, 1024);
  return dim3(static_cast<unsigned>(std::max<int64_t>(x, 1)), static_cast<unsigned>(std::min<int64_t>(planes, 65535)));
}

template <typename I>
G<I> to_g(const PoolGeometry& pg) {
  return G<I>{static_cast<I>(pg.c),  static_cast<I>(pg.h),  static_cast<I>(pg.w),  static_cast<I>(pg.r),
              static_cast<I>(pg.s),  static_cast<I>(pg.p),  static_cast<I>(pg.q),  static_cast<I>(pg.sh),
              static_cast<I>(pg.sw), static_cast<I>(pg.ph), static_cast<I>(pg.pw), static_cast<I>(pg.dh),
              static_cast<I>(pg.dw)};
}

// 32-bit indices when every index of both tensors (and a grid-stride step past the end) fits.
bool small_indices(const PoolGeometry& pg, int64_t n) {
  const int64_t limit = std::numeric_limits<int32_t>::max() / 2;
  return n * pg.c * pg.h * pg.w < limit && n * pg.c * pg.p * pg.q < limit;
}

template <typename I, bool NHWC>
void launch_forward(const PoolGeometry& pg, int64_t total, const float* x, float* y, int32_t* argmax) {
  pool_fwd<NHWC, I><<<blocks_for(total), 256, 0, stream()>>>(to_g<I>(pg), static_cast<I>(total), x, y, argmax, pg.max);
  DTNN_LAUNCH_CHECK();
}

template <typename I, bool NHWC>
void launch_backward(const PoolGeometry& pg, int64_t total, const float* dy, const int32_t* argmax, float* dx) {
  pool_bwd<NHWC, I><<<blocks_for(total), 256, 0, stream()>>>(to_g<I>(pg), static_cast<I>(total), dy, argmax, dx, pg.max);
  DTNN_LAUNCH_CHECK();
}

}  // namespace

void pool_forward(const PoolGeometry& pg, int64_t n, const float* x, float* y, int32_t* argmax) {
  const int64_t total = n * pg.c * pg.p * pg.q;
  if (total == 0) return;
  const bool nhwc = pg.layout == Layout::nhwc;
  if (!nhwc && small_indices(pg, n) && pg.p * pg.q >= kMinPlane) {
    const int planes = static_cast<int>(n * pg.c);
    const dim3 grid = plane_grid(pg.p * pg.q, planes);
    if (pg.dh == 1 && pg.dw == 1)
      pool_fwd_planes<true><<<grid, 256, 0, stream()>>>(to_g<int>(pg), planes, x, y, argmax, pg.max);
    else
      pool_fwd_planes<false><<<grid, 256, 0, stream()>>>(to_g<int>(pg), planes, x, y, argmax, pg.max);
    DTNN_LAUNCH_CHECK();
  } else if (small_indices(pg, n))
    nhwc ? launch_forward<int32_t, true>(pg, total, x, y, argmax) : launch_forward<int32_t, false>(pg, total, x, y, argmax);
  else
    nhwc ? launch_forward<int64_t, true>(pg, total, x, y, argmax) : launch_forward<int64_t, false>(pg, total, x, y, argmax);
}

void pool_backward(const PoolGeometry& pg, int64_t n, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t total = n * pg.c * pg.h * pg.w;
  if (total == 0) return;
  const bool nhwc = pg.layout == Layout::nhwc;
  if (!nhwc && small_indices(pg, n) && pg.h * pg.w >= kMinPlane) {
    const int planes = static_cast<int>(n * pg.c);
    const dim3 grid = plane_grid(pg.h * pg.w, planes);
    if (pg.dh == 1 && pg.dw == 1)
      pool_bwd_planes<true><<<grid, 256, 0, stream()>>>(to_g<int>(pg), planes, dy, argmax, dx, pg.max);
    else
      pool_bwd_planes<false><<<grid, 256, 0, stream()>>>(to_g<int>(pg), planes, dy, argmax, dx, pg.max);
    DTNN_LAUNCH_CHECK();
  } else if (small_indices(pg, n))
    nhwc ? launch_backward<int32_t, true>(pg, total, dy, argmax, dx) : launch_backward<int32_t, false>(pg, total, dy, argmax, dx);
  else
    nhwc ? launch_backward<int64_t, true>(pg, total, dy, argmax, dx) : launch_backward<int64_t, false>(pg, total, dy, argmax, dx);
}

}  // namespace dtnn::gpu
