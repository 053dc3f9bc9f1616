// AVX-512 versions of convgemm's two register-tile kernels (contracts in convgemm_kernels.h), chosen at run
// time by tile_gather / tile_segments_any on CPUs with AVX-512F (convgemm_kernels.cpp). This file alone is
// compiled with -mavx512f (engine/CMakeLists.txt), so the rest of dtnn stays x86-64-v3.
//
// A 6 x 16 tile is six zmm rows. Six FMA chains cannot hide the FMA latency of two 512-bit pipes (eight
// in flight are needed), so each row has two accumulators that take alternate reduction steps (even and
// odd u, or even and odd input channels) and are added once at the end: twelve independent chains, as in
// the AVX2 kernels' twelve ymm accumulators. The summation order differs from the AVX2 kernels' (results
// agree within float rounding), and is the same for every thread count.
#include "conv/cpu/convgemm_kernels.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

namespace dtnn::convgemm::avx512 {

#define DTNN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

void tile_gather(int ntaps, const float* const* rows, const int* btap, int64_t C, const float* b,
                 const float* init, float* out, int64_t ldo) {
  const __m512 i0 = init ? _mm512_loadu_ps(init) : _mm512_setzero_ps();
#define DTNN_DECL(i) __m512 c##i = i0, d##i = _mm512_setzero_ps();
  DTNN_ROWS(DTNN_DECL)
#undef DTNN_DECL
  for (int t = 0; t < ntaps; ++t) {
    const float* const* r = rows + 6 * t;
    const float *a0 = r[0], *a1 = r[1], *a2 = r[2], *a3 = r[3], *a4 = r[4], *a5 = r[5];
    const float* bp = b + static_cast<int64_t>(btap[t]) * C * 16;
    int64_t c = 0;
    for (; c + 2 <= C; c += 2) {
      const __m512 b0 = _mm512_loadu_ps(bp + 16 * c), b1 = _mm512_loadu_ps(bp + 16 * c + 16);
#define DTNN_FMA(i)                                                 \
  c##i = _mm512_fmadd_ps(_mm512_set1_ps(a##i[c]), b0, c##i);        \
  d##i = _mm512_fmadd_ps(_mm512_set1_ps(a##i[c + 1]), b1, d##i);
      DTNN_ROWS(DTNN_FMA)
#undef DTNN_FMA
    }
    if (c < C) {
      const __m512 b0 = _mm512_loadu_ps(bp + 16 * c);
#define DTNN_FMA(i) c##i = _mm512_fmadd_ps(_mm512_set1_ps(a##i[c]), b0, c##i);
      DTNN_ROWS(DTNN_FMA)
#undef DTNN_FMA
    }
  }
#define DTNN_STORE(i) _mm512_storeu_ps(out + (i) * ldo, _mm512_add_ps(c##i, d##i));
  DTNN_ROWS(DTNN_STORE)
#undef DTNN_STORE
}

template <int MR, bool kMasked>
void tile_segments(const Segment* segs, int nsegs, int64_t a_off, int64_t b_off, int64_t astep, int64_t bstep,
                   int nb, bool accumulate, float* out, int64_t ldo) {
  static_assert(MR >= 1 && MR <= 6, "tile_segments: 1 <= MR <= 6");
  const __mmask16 mask = kMasked ? static_cast<__mmask16>((1u << nb) - 1u) : static_cast<__mmask16>(0xFFFF);
  auto load_b = [&](const float* p) {
    if constexpr (kMasked) return _mm512_maskz_loadu_ps(mask, p);
    return _mm512_loadu_ps(p);
  };
#define DTNN_DECL(i)                                                                                     \
  __m512 c##i = accumulate && (i) < MR ? _mm512_loadu_ps(out + (i) * ldo) : _mm512_setzero_ps();       \
  __m512 d##i = _mm512_setzero_ps();
  DTNN_ROWS(DTNN_DECL)
#undef DTNN_DECL
  for (int g = 0; g < nsegs; ++g) {
    const float* a = segs[g].a + a_off;
    const float* bb = segs[g].b + b_off;
    const int64_t count = segs[g].count;
    int64_t u = 0;
    for (; u + 2 <= count; u += 2) {
      const __m512 b0 = load_b(bb), b1 = load_b(bb + bstep);
#define DTNN_FMA(i)                                                     \
  if constexpr ((i) < MR) {                                             \
    c##i = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b0, c##i);             \
    d##i = _mm512_fmadd_ps(_mm512_set1_ps(a[astep + (i)]), b1, d##i);   \
  }
      DTNN_ROWS(DTNN_FMA)
#undef DTNN_FMA
      a += 2 * astep;
      bb += 2 * bstep;
    }
    if (u < count) {
      const __m512 b0 = load_b(bb);
#define DTNN_FMA(i) \
  if constexpr ((i) < MR) c##i = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b0, c##i);
      DTNN_ROWS(DTNN_FMA)
#undef DTNN_FMA
    }
  }
#define DTNN_STORE(i) _mm512_storeu_ps(out + (i) * ldo, _mm512_add_ps(c##i, d##i));
  DTNN_ROWS(DTNN_STORE)
#undef DTNN_STORE
}

#undef DTNN_ROWS

#define DTNN_INSTANTIATE(MR)                                                                                  \
  template void tile_segments<MR, false>(const Segment*, int, int64_t, int64_t, int64_t, int64_t, int, bool, float*, \
                                         int64_t);                                                            \
  template void tile_segments<MR, true>(const Segment*, int, int64_t, int64_t, int64_t, int64_t, int, bool, float*,  \
                                        int64_t);
DTNN_INSTANTIATE(1)
DTNN_INSTANTIATE(2)
DTNN_INSTANTIATE(3)
DTNN_INSTANTIATE(4)
DTNN_INSTANTIATE(5)
DTNN_INSTANTIATE(6)
#undef DTNN_INSTANTIATE

}  // namespace dtnn::convgemm::avx512

#endif
