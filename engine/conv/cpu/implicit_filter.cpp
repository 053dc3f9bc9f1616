#include "conv/cpu/implicit_filter.h"

#include <algorithm>
#include <cstring>
#include <immintrin.h>


namespace dtnn {


bool implicit_filter_supported(const ConvProblem& p) {
  return p.layout == Layout::nhwc && p.groups == 1 && p.c == 1 && p.r == 3 && p.s == 3 &&
         (p.k == 8 || (p.k == 4 && p.stride_w == 1));
}

int64_t implicit_filter_workspace(const ConvProblem& p) {
  // x padded, each value repeated K times, plus one spare pixel row so 8-float loads past the last pixel of a
  // row (K = 4, odd widths) stay inside the buffer.
  return (p.n * (p.h + 2 * p.pad_h) + 1) * (p.w + 2 * p.pad_w + 2) * p.k;
}

namespace {

// Sums 8 lanes into K outputs (lanes k and k + 4 when two pixels share a vector).
void fold(__m256 v, int64_t K, double* out) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  for (int64_t i = 0; i < 8; ++i) out[i % K] += lanes[i];
}

}  // namespace

void implicit_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db, float* ws) {
  const int64_t K = p.k, P = p.p(), Q = p.q(), Hp = p.h + 2 * p.pad_h, Wp = p.w + 2 * p.pad_w + 2;
  const int64_t ppv = 8 / K;  // pixels per vector
  // xd[n, hp, wp, 0..K) = xpad[n, hp, wp], so tap (r, s) of pixels ow .. ow+ppv-1 is one contiguous load.
  float* xd = ws;
  std::memset(xd, 0, implicit_filter_workspace(p) * sizeof(float));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t h = 0; h < p.h; ++h) {
      float* dst = xd + ((n * Hp + h + p.pad_h) * Wp + p.pad_w) * K;
      const float* src = x + (n * p.h + h) * p.w;
      if (K == 8)
        for (int64_t w = 0; w < p.w; ++w) _mm256_storeu_ps(dst + w * 8, _mm256_set1_ps(src[w]));
      else
        for (int64_t w = 0; w < p.w; ++w) _mm_storeu_ps(dst + w * 4, _mm_set1_ps(src[w]));
    }
  double dw_sum[9 * 8] = {0}, db_sum[8] = {0};
  const int64_t step = p.stride_w * K;  // xd floats between neighbouring output pixels (K = 8)
  const int64_t full = Q / ppv * ppv;   // pixels handled by whole vectors; a K = 4 odd width leaves one
  for (int64_t n = 0; n < p.n; ++n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           ab = a0;
    for (int64_t oh = 0; oh < P; ++oh) {
      const float* d = dy + (n * P + oh) * Q * K;
      const float* x0 = xd + (n * Hp + oh * p.stride_h) * Wp * K;
      const float* x1 = x0 + p.dil_h * Wp * K;
      const float* x2 = x1 + p.dil_h * Wp * K;
      const int64_t s1 = p.dil_w * K, s2 = 2 * p.dil_w * K;
      for (int64_t ow = 0; ow < full; ow += ppv, d += 8) {
        const __m256 g = _mm256_loadu_ps(d);
        const int64_t o = ow * (K == 8 ? step : K);
        ab = _mm256_add_ps(ab, g);
        a0 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x0 + o), a0);
        a1 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x0 + o + s1), a1);
        a2 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x0 + o + s2), a2);
        a3 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x1 + o), a3);
        a4 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x1 + o + s1), a4);
        a5 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x1 + o + s2), a5);
        a6 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x2 + o), a6);
        a7 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x2 + o + s1), a7);
        a8 = _mm256_fmadd_ps(g, _mm256_loadu_ps(x2 + o + s2), a8);
      }
      for (int64_t ow = full; ow < Q; ++ow, d += K) {  // the odd last pixel of a K = 4 row
        const float* rows[3] = {x0, x1, x2};
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t s = 0; s < 3; ++s)
            for (int64_t k = 0; k < K; ++k)
              dw_sum[(r * 3 + s) * K + k] += static_cast<double>(d[k]) * rows[r][(ow + s * p.dil_w) * K];
        for (int64_t k = 0; k < K; ++k) db_sum[k] += d[k];
      }
    }
    const __m256 acc[9] = {a0, a1, a2, a3, a4, a5, a6, a7, a8};
    for (int64_t t = 0; t < 9; ++t) fold(acc[t], K, dw_sum + t * K);
    fold(ab, K, db_sum);
  }
  for (int64_t i = 0; i < 9 * K; ++i) dw[i] = static_cast<float>(dw_sum[i]);  // (C=1, R, S, K) = (R, S, K)
  if (db)
    for (int64_t k = 0; k < K; ++k) db[k] = static_cast<float>(db_sum[k]);
}


}  // namespace dtnn
