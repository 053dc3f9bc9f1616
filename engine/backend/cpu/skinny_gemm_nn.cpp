// skinny_gemm_nn, C[m x n] = A[m x k] . B[k x n] (contract: skinny_gemm.h; overview: skinny_gemm.cpp).
//   n <= 4  two C rows per ymm: [A[i][p..p+3] | A[i+1][p..p+3]] times the 4 "diagonals" of the 4x4 block
//           of B, rotated back into place once per row pair (nn4_* below); full-width FMAs and no
//           broadcasts. k = 9 (3x3 taps, one channel) has a fully unrolled instance.
//   n > 4   R rows x NV ymm of C; per k step one load of the packed, zero-padded B row (L1) and one
//           broadcast of A per row.
#include "backend/cpu/skinny_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/skinny_gemm_vec.h"

namespace dtnn::cpu {

using namespace skinny;

namespace {

constexpr int64_t kNnKc = 512;  // k block: packed B is kNnKc x 16 floats = 32 KiB at most

// R rows of C, k steps [0, kc) of the packed B (row stride NV*W). acc_c: C += instead of C =.
template <class V, int R, int NV>
inline void nn_block(int64_t kc, const float* a, int64_t lda, const float* bp, float* c, int64_t ldc, int nlast,
                     bool acc_c) {
  using T = typename V::T;
  constexpr int W = V::W;
  T acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = acc_c ? V::load_part(c + r * ldc + v * W, v == NV - 1 ? nlast : W) : V::zero();
  for (int64_t p = 0; p < kc; ++p) {
    T bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = V::load(bp + p * (NV * W) + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const T av = V::bcast(a + r * lda + p);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) V::store_part(c + r * ldc + v * W, acc[r][v], v == NV - 1 ? nlast : W);
}

template <class V, int R, int NV>
void nn_run(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
            int64_t ldc) {
  constexpr int W = V::W, NW = NV * W;
  alignas(32) float bp[kNnKc * NW];
  const int nlast = static_cast<int>(n - (NV - 1) * W);
  for (int64_t p0 = 0; p0 < k; p0 += kNnKc) {
    const int64_t kc = std::min(kNnKc, k - p0);
    for (int64_t p = 0; p < kc; ++p) {
      float* dst = bp + p * NW;
      const float* src = b + (p0 + p) * ldb;
      for (int j = 0; j < NW; ++j) dst[j] = j < n ? src[j] : 0.0f;
    }
    const bool acc_c = p0 > 0;
    const float* ap = a + p0;
    int64_t i = 0;
    for (; i + R <= m; i += R) nn_block<V, R, NV>(kc, ap + i * lda, lda, bp, c + i * ldc, ldc, nlast, acc_c);
    if constexpr (R > 4)
      for (; i + 4 <= m; i += 4) nn_block<V, 4, NV>(kc, ap + i * lda, lda, bp, c + i * ldc, ldc, nlast, acc_c);
    for (; i < m; ++i) nn_block<V, 1, NV>(kc, ap + i * lda, lda, bp, c + i * ldc, ldc, nlast, acc_c);
  }
}

// nn for n <= 4: two rows of C per ymm (row i in the low half, row i+1 in the high half), so the FMAs
// run at full width. For a group of 4 k steps p0..p0+3, X = [A[i][p0..p0+3] | A[i+1][p0..p0+3]] is
// multiplied by the 4 "diagonals" D_s[q] = B[p0+q][(q+s)%4] (packed, duplicated into both halves):
// lane q of acc_s sums products belonging to C column (q+s)%4, so at the end
// C row = sum_s rotate(acc_s, s). The k % 4 leftover steps multiply a pair-broadcast of A by the plain
// B row into acc_0 (no rotation). No broadcasts in the main loop: 2 loads per 4 FMAs.
//
// Packed B for kc steps: kc/4 groups of 4 diagonals x 8 floats, then kc%4 rows of [B[p][0..3] | same].
void nn4_pack(int64_t kc, int64_t n, const float* b, int64_t ldb, float* bp) {
  const int64_t groups = kc / 4;
  for (int64_t g = 0; g < groups; ++g)
    for (int s = 0; s < 4; ++s)
      for (int q = 0; q < 4; ++q) {
        const int j = (q + s) % 4;
        const float v = j < n ? b[(4 * g + q) * ldb + j] : 0.0f;
        bp[(g * 4 + s) * 8 + q] = v;
        bp[(g * 4 + s) * 8 + q + 4] = v;
      }
  for (int64_t q = 0; q < kc % 4; ++q)
    for (int j = 0; j < 4; ++j) {
      const float v = j < n ? b[(4 * groups + q) * ldb + j] : 0.0f;
      bp[(groups * 4 + q) * 8 + j] = v;
      bp[(groups * 4 + q) * 8 + j + 4] = v;
    }
}

inline __m256 pair128(__m128 lo, __m128 hi) { return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1); }

// 2*RP rows of C starting at c (SINGLE: one row only, RP = 1; the high half duplicates it, unstored).
// KC > 0: kc == KC known at compile time (fully unrolled).
template <int RP, bool SINGLE, int KC>
inline void nn4_block(int64_t kc_rt, const float* a, int64_t lda, const float* bp, float* c, int64_t ldc, int n,
                      bool acc_c) {
  const int64_t kc = KC > 0 ? KC : kc_rt;
  const int64_t groups = kc / 4, tail = kc % 4;
  __m256 acc[RP][4];
#pragma GCC unroll 4
  for (int rp = 0; rp < RP; ++rp) {
    if (acc_c) {
      const __m128 lo = V4::load_part(c + 2 * rp * ldc, n);
      acc[rp][0] = pair128(lo, SINGLE ? _mm_setzero_ps() : V4::load_part(c + (2 * rp + 1) * ldc, n));
    } else {
      acc[rp][0] = _mm256_setzero_ps();
    }
    acc[rp][1] = acc[rp][2] = acc[rp][3] = _mm256_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    const float* bg = bp + g * 32;
    __m256 d[4];
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) d[s] = _mm256_load_ps(bg + s * 8);
#pragma GCC unroll 4
    for (int rp = 0; rp < RP; ++rp) {
      const float* lo = a + 2 * rp * lda + 4 * g;
      const float* hi = SINGLE ? lo : lo + lda;
      const __m256 x = pair128(_mm_loadu_ps(lo), _mm_loadu_ps(hi));
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) acc[rp][s] = _mm256_fmadd_ps(x, d[s], acc[rp][s]);
    }
  }
#pragma GCC unroll 4
  for (int64_t q = 0; q < tail; ++q) {
    const int64_t p = groups * 4 + q;
    const __m256 bq = _mm256_load_ps(bp + (groups * 4 + q) * 8);
#pragma GCC unroll 4
    for (int rp = 0; rp < RP; ++rp) {
      const float* lo = a + 2 * rp * lda + p;
      const float* hi = SINGLE ? lo : lo + lda;
      const __m256 x = pair128(_mm_broadcast_ss(lo), _mm_broadcast_ss(hi));
      acc[rp][0] = _mm256_fmadd_ps(x, bq, acc[rp][0]);
    }
  }
#pragma GCC unroll 4
  for (int rp = 0; rp < RP; ++rp) {
    // Output lane j of rotate(acc_s, s) is lane (j - s) % 4 of acc_s.
    const __m256 r1 = _mm256_permute_ps(acc[rp][1], _MM_SHUFFLE(2, 1, 0, 3));
    const __m256 r2 = _mm256_permute_ps(acc[rp][2], _MM_SHUFFLE(1, 0, 3, 2));
    const __m256 r3 = _mm256_permute_ps(acc[rp][3], _MM_SHUFFLE(0, 3, 2, 1));
    const __m256 out = _mm256_add_ps(_mm256_add_ps(acc[rp][0], r1), _mm256_add_ps(r2, r3));
    store4_part(c + 2 * rp * ldc, _mm256_castps256_ps128(out), n);
    if (!SINGLE) store4_part(c + (2 * rp + 1) * ldc, _mm256_extractf128_ps(out, 1), n);
  }
}

void nn4_run(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
             int64_t ldc) {
  constexpr int RP = 2;  // 4 rows, 8 accumulators, the 4 diagonals stay in registers
  alignas(32) float bp[kNnKc * 8];
  const int nn = static_cast<int>(n);
  for (int64_t p0 = 0; p0 < k; p0 += kNnKc) {
    const int64_t kc = std::min(kNnKc, k - p0);
    nn4_pack(kc, n, b + p0 * ldb, ldb, bp);
    const bool acc_c = p0 > 0;
    const float* ap = a + p0;
    int64_t i = 0;
    if (kc == 9) {
      for (; i + 2 * RP <= m; i += 2 * RP) nn4_block<RP, false, 9>(kc, ap + i * lda, lda, bp, c + i * ldc, ldc, nn, acc_c);
    } else {
      for (; i + 2 * RP <= m; i += 2 * RP) nn4_block<RP, false, 0>(kc, ap + i * lda, lda, bp, c + i * ldc, ldc, nn, acc_c);
    }
    for (; i + 2 <= m; i += 2) nn4_block<1, false, 0>(kc, ap + i * lda, lda, bp, c + i * ldc, ldc, nn, acc_c);
    if (i < m) nn4_block<1, true, 0>(kc, ap + i * lda, lda, bp, c + i * ldc, ldc, nn, acc_c);
  }
}

// Plain loops for n > 16 (correct, not fast).

void naive_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
              int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) crow[j] = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
      const float av = a[i * lda + p];
      for (int64_t j = 0; j < n; ++j) crow[j] += av * b[p * ldb + j];
    }
  }
}

}  // namespace

void skinny_gemm_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::memset(c + i * ldc, 0, n * sizeof(float));
    return;
  }
  if (n <= 4) return nn4_run(m, n, k, a, lda, b, ldb, c, ldc);
  if (n <= 8) return nn_run<V8, 8, 1>(m, n, k, a, lda, b, ldb, c, ldc);
  if (n <= 16) return nn_run<V8, 6, 2>(m, n, k, a, lda, b, ldb, c, ldc);
  naive_nn(m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace dtnn::cpu
