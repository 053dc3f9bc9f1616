#include "backend/cpu/pool.h"

#include <algorithm>
#include <cstring>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "core/error.h"

namespace dtnn::cpu {
namespace {

// Element strides of the input and output activations in the geometry's layout (per sample, channel,
// row, column).
struct Strides {
  int64_t xn, xc, xh, xw, yn, yc, yh, yw;
};

Strides strides(const PoolGeometry& g) {
  const int64_t hw = g.h * g.w, pq = g.p * g.q;
  if (g.layout == Layout::nhwc) return {g.c * hw, 1, g.w * g.c, g.c, g.c * pq, 1, g.q * g.c, g.c};
  return {g.c * hw, hw, g.w, 1, g.c * pq, pq, g.q, 1};
}

// Taps [*lo, *hi) of one window dimension whose input position o*stride - pad + t*dil lies in
// [0, extent): positions grow with t, so the in-bounds taps are one contiguous range.
void tap_range(int64_t o, int64_t stride, int64_t pad, int64_t dil, int64_t taps, int64_t extent, int64_t* lo,
               int64_t* hi) {
  const int64_t first = o * stride - pad;
  *lo = first >= 0 ? 0 : (-first + dil - 1) / dil;
  *hi = first >= extent ? 0 : std::min(taps, (extent - first + dil - 1) / dil);
  if (*hi < *lo) *hi = *lo;
}

// The in-bounds taps of one output element: rows x cols taps from input offset x, row_step and col_step
// apart, in (i, j) order.
struct Window {
  int64_t x, rows, cols, row_step, col_step;
  int64_t count() const { return rows * cols; }
  int64_t tap(int64_t i, int64_t j) const { return x + i * row_step + j * col_step; }
};

// Calls fn(y offset, window) for every output pixel (b, oh, ow) of n samples, in order; both describe
// channel 0 (the channel stride is the layout's).
template <typename Fn>
void for_each_pixel(const PoolGeometry& g, const Strides& st, int64_t n, Fn&& fn) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oh = 0; oh < g.p; ++oh)
      for (int64_t ow = 0; ow < g.q; ++ow) {
        int64_t r0, r1, s0, s1;
        tap_range(oh, g.sh, g.ph, g.dh, g.r, g.h, &r0, &r1);
        tap_range(ow, g.sw, g.pw, g.dw, g.s, g.w, &s0, &s1);
        const int64_t x0 = b * st.xn + (oh * g.sh - g.ph + r0 * g.dh) * st.xh + (ow * g.sw - g.pw + s0 * g.dw) * st.xw;
        fn(b * st.yn + oh * st.yh + ow * st.yw, Window{x0, r1 - r0, s1 - s0, g.dh * st.xh, g.dw * st.xw});
      }
}

// Calls fn(y offset, window) for every output element of n samples: the channels of one output pixel
// one after the other.
template <typename Fn>
void for_each_window(const PoolGeometry& g, int64_t n, Fn&& fn) {
  const Strides st = strides(g);
  for_each_pixel(g, st, n, [&](int64_t y0, const Window& win) {
    for (int64_t c = 0; c < g.c; ++c)
      fn(y0 + c * st.yc, Window{win.x + c * st.xc, win.rows, win.cols, win.row_step, win.col_step});
  });
}

// Max pooling, any layout: the first in-bounds tap starts the comparison (as in the NHWC paths and the
// GPU kernels), so a window of -inf gives -inf and a leading NaN wins; no taps: 0 and argmax -1.
void max_forward_windows(const PoolGeometry& g, int64_t n, const float* x, float* y, int32_t* argmax) {
  for_each_window(g, n, [&](int64_t yo, const Window& win) {
    float best = 0.0f;
    int64_t where = -1;
    for (int64_t i = 0; i < win.rows; ++i)
      for (int64_t j = 0; j < win.cols; ++j) {
        const int64_t t = win.tap(i, j);
        if (where < 0 || x[t] > best) {
          best = x[t];
          where = t;
        }
      }
    y[yo] = best;
    argmax[yo] = static_cast<int32_t>(where);
  });
}

// NHWC: channels are contiguous, so each window tap is compared as a whole C-vector (vectorises over c);
// the first maximum in (i, j) order wins, as in max_forward_windows.
void max_forward_nhwc(const PoolGeometry& g, int64_t n, const float* x, float* y, int32_t* argmax) {
  const int64_t C = g.c;
  for_each_pixel(g, strides(g), n, [&](int64_t y0, const Window& win) {
    float* best = y + y0;
    int32_t* where = argmax + y0;
    for (int64_t i = 0; i < win.rows; ++i)
      for (int64_t j = 0; j < win.cols; ++j) {
        const int32_t base = static_cast<int32_t>(win.tap(i, j));
        const float* src = x + base;
        if (i == 0 && j == 0) {
          for (int64_t c = 0; c < C; ++c) {
            best[c] = src[c];
            where[c] = base + static_cast<int32_t>(c);
          }
          continue;
        }
        for (int64_t c = 0; c < C; ++c) {
          const bool better = src[c] > best[c];
          best[c] = better ? src[c] : best[c];
          where[c] = better ? base + static_cast<int32_t>(c) : where[c];
        }
      }
    if (win.count() == 0)  // the window lies entirely in padding
      for (int64_t c = 0; c < C; ++c) {
        best[c] = 0.0f;
        where[c] = -1;
      }
  });
}

#ifdef __AVX2__
// The common 2x2 unpadded window (simplecnn, VGG): four C-vectors per output pixel, compared eight
// channels at a time with the argmax carried in a vector of int32 offsets. Same semantics as above.
bool is_2x2_avx2(const PoolGeometry& g) {
  return g.layout == Layout::nhwc && g.r == 2 && g.s == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1 &&
         g.c % 8 == 0;
}

// Calls fn(y offset, offset of the top-left tap) for every output pixel of an unpadded 2x2 NHWC window.
template <typename Fn>
void for_each_2x2_pixel(const PoolGeometry& g, int64_t n, Fn&& fn) {
  const Strides st = strides(g);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oh = 0; oh < g.p; ++oh)
      for (int64_t ow = 0; ow < g.q; ++ow)
        fn(b * st.yn + (oh * g.q + ow) * g.c, b * st.xn + (oh * g.sh * g.w + ow * g.sw) * g.c);
}

void max_forward_nhwc_2x2_avx2(const PoolGeometry& g, int64_t n, const float* x, float* y, int32_t* argmax) {
  const int64_t C = g.c;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for_each_2x2_pixel(g, n, [&](int64_t y0, int64_t t0) {
    const int64_t taps[3] = {t0 + C, t0 + g.w * C, t0 + g.w * C + C};
    for (int64_t c = 0; c < C; c += 8) {
      __m256 best = _mm256_loadu_ps(x + t0 + c);
      __m256i where = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(t0 + c)), lane);
      for (int64_t t : taps) {
        const __m256 v = _mm256_loadu_ps(x + t + c);
        const __m256 better = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, v, better);
        const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(t + c)), lane);
        where = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(where), _mm256_castsi256_ps(idx), better));
      }
      _mm256_storeu_ps(y + y0 + c, best);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(argmax + y0 + c), where);
    }
  });
}

// 2x2 windows with stride 2 over an even-sized NHWC input cover every input element exactly once, so dx
// is written directly (dy where the argmax is, 0 elsewhere) with no clearing pass and no scatter.
bool tiles_exactly(const PoolGeometry& g) {
  return is_2x2_avx2(g) && g.sh == 2 && g.sw == 2 && g.h % 2 == 0 && g.w % 2 == 0;
}

void max_backward_nhwc_2x2_avx2(const PoolGeometry& g, int64_t n, const float* dy, const int32_t* argmax, float* dx) {
  const int64_t C = g.c;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for_each_2x2_pixel(g, n, [&](int64_t y0, int64_t t0) {
    const int64_t taps[4] = {t0, t0 + C, t0 + g.w * C, t0 + g.w * C + C};
    for (int64_t c = 0; c < C; c += 8) {
      const __m256 grad = _mm256_loadu_ps(dy + y0 + c);
      const __m256i where = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(argmax + y0 + c));
      for (int64_t t : taps) {
        const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(t + c)), lane);
        const __m256 hit = _mm256_castsi256_ps(_mm256_cmpeq_epi32(where, idx));
        _mm256_storeu_ps(dx + t + c, _mm256_and_ps(hit, grad));
      }
    }
  });
}
#endif

void avg_forward(const PoolGeometry& g, int64_t n, const float* x, float* y) {
  for_each_window(g, n, [&](int64_t yo, const Window& win) {
    float sum = 0.0f;
    for (int64_t i = 0; i < win.rows; ++i)
      for (int64_t j = 0; j < win.cols; ++j) sum += x[win.tap(i, j)];
    y[yo] = win.count() ? sum / static_cast<float>(win.count()) : 0.0f;
  });
}

void avg_backward(const PoolGeometry& g, int64_t n, const float* dy, float* dx) {
  for_each_window(g, n, [&](int64_t yo, const Window& win) {
    if (!win.count()) return;
    const float share = dy[yo] / static_cast<float>(win.count());
    for (int64_t i = 0; i < win.rows; ++i)
      for (int64_t j = 0; j < win.cols; ++j) dx[win.tap(i, j)] += share;
  });
}

}  // namespace

void pool_forward(const PoolGeometry& g, int64_t n, const float* x, float* y, int32_t* argmax) {
  if (!g.max) return avg_forward(g, n, x, y);
  DTNN_CHECK(n * g.c * g.h * g.w < (int64_t{1} << 31), "MaxPool2D: a batch of ", n, " samples of ", g.c * g.h * g.w,
             " values is too large for 32-bit argmax offsets");
  if (g.layout != Layout::nhwc) return max_forward_windows(g, n, x, y, argmax);
#ifdef __AVX2__
  if (is_2x2_avx2(g)) return max_forward_nhwc_2x2_avx2(g, n, x, y, argmax);
#endif
  max_forward_nhwc(g, n, x, y, argmax);
}

void pool_backward(const PoolGeometry& g, int64_t n, const float* dy, const int32_t* argmax, float* dx) {
#ifdef __AVX2__
  if (g.max && tiles_exactly(g)) return max_backward_nhwc_2x2_avx2(g, n, dy, argmax, dx);
#endif
  std::memset(dx, 0, static_cast<size_t>(n * g.c * g.h * g.w) * sizeof(float));
  if (!g.max) return avg_backward(g, n, dy, dx);
  const int64_t outputs = n * g.c * g.p * g.q;
  for (int64_t i = 0; i < outputs; ++i)
    if (argmax[i] >= 0) dx[argmax[i]] += dy[i];
}

}  // namespace dtnn::cpu
