// The accumulators are twelve named __m256 variables, not an array: GCC keeps named vectors in registers
// across the runtime-length loops (an array was spilled in implicit_forward.cpp, 3x slower). With six
// broadcasts and two loads feeding twelve independent FMA chains, the loop is FMA-bound like a BLIS 6x16
// kernel. Every build has AVX2 and FMA (CMakeLists.txt checks DTNN_ARCH_FLAGS).
#include "conv/cpu/convgemm_kernels.h"

#include "conv/cpu/cpu_algorithms.h"

#include <immintrin.h>

#include <cstdlib>
#include <cstring>

namespace dtnn::convgemm {

#if DTNN_AVX512_KERNELS
namespace avx512 {  // convgemm_kernels_avx512.cpp
void tile_gather(int ntaps, const float* const* rows, const int* btap, int64_t C, const float* b,
                 const float* init, float* out, int64_t ldo);
template <int MR, bool kMasked>
void tile_segments(const Segment* segs, int nsegs, int64_t a_off, int64_t b_off, int64_t astep, int64_t bstep,
                   int nb, bool accumulate, float* out, int64_t ldo);
}  // namespace avx512
#endif

bool avx512_kernels() {
#if DTNN_AVX512_KERNELS
  static const bool use = [] {
    const char* cap = std::getenv("DTNN_MAX_CPU_ISA");
    if (cap && (std::strcmp(cap, "AVX2") == 0 || std::strcmp(cap, "avx2") == 0)) return false;
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return use;
#else
  return false;
#endif
}

}  // namespace dtnn::convgemm

std::string dtnn::cpu_kernel_isa() {
  if (convgemm::avx512_kernels()) return "AVX-512";
  return "AVX2";
}

namespace dtnn::convgemm {


#define DTNN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

void tile_gather(int ntaps, const float* const* rows, const int* btap, int64_t C, const float* b,
                 const float* init, float* out, int64_t ldo) {
#if DTNN_AVX512_KERNELS
  if (avx512_kernels()) return avx512::tile_gather(ntaps, rows, btap, C, b, init, out, ldo);
#endif
  const __m256 i0 = init ? _mm256_loadu_ps(init) : _mm256_setzero_ps();
  const __m256 i1 = init ? _mm256_loadu_ps(init + 8) : _mm256_setzero_ps();
#define DTNN_DECL(i) __m256 c##i##0 = i0, c##i##1 = i1;
  DTNN_ROWS(DTNN_DECL)
#undef DTNN_DECL
  for (int t = 0; t < ntaps; ++t) {
    const float* const* r = rows + 6 * t;
    const float *a0 = r[0], *a1 = r[1], *a2 = r[2], *a3 = r[3], *a4 = r[4], *a5 = r[5];
    const float* bp = b + static_cast<int64_t>(btap[t]) * C * 16;
#pragma GCC unroll 4
    for (int64_t c = 0; c < C; ++c) {
      const __m256 b0 = _mm256_loadu_ps(bp + 16 * c), b1 = _mm256_loadu_ps(bp + 16 * c + 8);
#define DTNN_FMA(i)                                  \
  {                                                  \
    const __m256 a = _mm256_broadcast_ss(a##i + c);  \
    c##i##0 = _mm256_fmadd_ps(a, b0, c##i##0);       \
    c##i##1 = _mm256_fmadd_ps(a, b1, c##i##1);       \
  }
      DTNN_ROWS(DTNN_FMA)
#undef DTNN_FMA
    }
  }
#define DTNN_STORE(i)                                 \
  _mm256_storeu_ps(out + (i) * ldo, c##i##0);         \
  _mm256_storeu_ps(out + (i) * ldo + 8, c##i##1);
  DTNN_ROWS(DTNN_STORE)
#undef DTNN_STORE
}

template <int MR, bool kMasked>
void tile_segments(const Segment* segs, int nsegs, int64_t a_off, int64_t b_off, int64_t astep, int64_t bstep,
                   int nb, bool accumulate, float* out, int64_t ldo) {
  static_assert(MR >= 1 && MR <= 6, "tile_segments: 1 <= MR <= 6");
  __m256i m0 = _mm256_set1_epi32(-1), m1 = m0;
  if constexpr (kMasked) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nb), lane);
    m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nb - 8), lane);
  }
#define DTNN_DECL(i)                                                                     \
  __m256 c##i##0 = accumulate && (i) < MR ? _mm256_loadu_ps(out + (i) * ldo) : _mm256_setzero_ps(); \
  __m256 c##i##1 = accumulate && (i) < MR ? _mm256_loadu_ps(out + (i) * ldo + 8) : _mm256_setzero_ps();
  DTNN_ROWS(DTNN_DECL)
#undef DTNN_DECL
  for (int g = 0; g < nsegs; ++g) {
    const float* a = segs[g].a + a_off;
    const float* bb = segs[g].b + b_off;
    const int64_t count = segs[g].count;
#pragma GCC unroll 2
    for (int64_t u = 0; u < count; ++u) {
      __m256 b0, b1;
      if constexpr (kMasked) {
        b0 = _mm256_maskload_ps(bb, m0);
        b1 = _mm256_maskload_ps(bb + 8, m1);
      } else {
        b0 = _mm256_loadu_ps(bb);
        b1 = _mm256_loadu_ps(bb + 8);
      }
#define DTNN_FMA(i)                                  \
  if constexpr ((i) < MR) {                          \
    const __m256 av = _mm256_broadcast_ss(a + (i));  \
    c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0);      \
    c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1);      \
  }
      DTNN_ROWS(DTNN_FMA)
#undef DTNN_FMA
      a += astep;
      bb += bstep;
    }
  }
#define DTNN_STORE(i)                                 \
  _mm256_storeu_ps(out + (i) * ldo, c##i##0);         \
  _mm256_storeu_ps(out + (i) * ldo + 8, c##i##1);
  DTNN_ROWS(DTNN_STORE)
#undef DTNN_STORE
}

#undef DTNN_ROWS


#define DTNN_INSTANTIATE(MR)                                                                          \
  template void tile_segments<MR, false>(const Segment*, int, int64_t, int64_t, int64_t, int64_t, int, bool, float*, int64_t); \
  template void tile_segments<MR, true>(const Segment*, int, int64_t, int64_t, int64_t, int64_t, int, bool, float*, int64_t);
DTNN_INSTANTIATE(1)
DTNN_INSTANTIATE(2)
DTNN_INSTANTIATE(3)
DTNN_INSTANTIATE(4)
DTNN_INSTANTIATE(5)
DTNN_INSTANTIATE(6)
#undef DTNN_INSTANTIATE

namespace {
template <int MR>
void segments_mr(bool masked, const Segment* segs, int nsegs, int64_t a_off, int64_t b_off, int64_t astep,
                 int64_t bstep, int nb, bool accumulate, float* out, int64_t ldo) {
#if DTNN_AVX512_KERNELS
  if (avx512_kernels()) {
    if (masked) avx512::tile_segments<MR, true>(segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
    else avx512::tile_segments<MR, false>(segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
    return;
  }
#endif
  if (masked) tile_segments<MR, true>(segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
  else tile_segments<MR, false>(segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
}
}  // namespace

void tile_segments_any(int mr, bool masked, const Segment* segs, int nsegs, int64_t a_off, int64_t b_off,
                       int64_t astep, int64_t bstep, int nb, bool accumulate, float* out, int64_t ldo) {
  switch (mr) {
    case 1: return segments_mr<1>(masked, segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
    case 2: return segments_mr<2>(masked, segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
    case 3: return segments_mr<3>(masked, segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
    case 4: return segments_mr<4>(masked, segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
    case 5: return segments_mr<5>(masked, segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
    default: return segments_mr<6>(masked, segs, nsegs, a_off, b_off, astep, bstep, nb, accumulate, out, ldo);
  }
}

}  // namespace dtnn::convgemm
