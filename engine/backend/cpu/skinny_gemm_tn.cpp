// skinny_gemm_tn, C[k x n] = beta * C + A[m x k]^T . B[m x n] (contract: skinny_gemm.h; overview:
// skinny_gemm.cpp).
//   n >= 8 (or k < 8)  R rows of C (R x NV vectors) stay in registers for the whole sweep over m; per m
//                      row one load of the B row and R broadcasts from the A row.
//   n < 8              vectorized over k instead (C^T[j][8 columns] += B[i][j] * A[i][8 columns]), so
//                      n*k/8 full-width FMAs per m row; the k % 8 leftover rows of C use the kernel above.
#include "backend/cpu/skinny_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "backend/cpu/skinny_gemm_vec.h"

namespace dtnn::cpu {

using namespace skinny;

namespace {

// f(std::integral_constant<int, u>) for u = 0 .. U-1, fully unrolled (array indices stay compile-time
// constants, so accumulator arrays live in registers).
template <class F, int... Us>
__attribute__((always_inline)) inline void static_for(F&& f, std::integer_sequence<int, Us...>) {
  (f(std::integral_constant<int, Us>{}), ...);
}

// Independent accumulator sets for a block of `acc` accumulators: about 12 in flight in all (2 FMA pipes
// x 4 cycles latency, plus slack), at most 8 sets.
constexpr int unroll_for(int acc) { return acc >= 12 ? 1 : std::min(8, 12 / acc); }

// R rows of C (columns of A starting at a), all n columns, reduced over the m rows. With few
// accumulators, U consecutive m rows go to separate accumulator sets (summed at the end) so the FMA
// latency does not bound the sweep.
// PART: the last of the NV vectors holds nlast < W columns (masked loads of B; no branch in the loop).
template <class V, int R, int NV, bool PART>
void tn_block(int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc, int nlast) {
  using T = typename V::T;
  constexpr int W = V::W;
  const typename V::M msk = V::mask(PART ? nlast : W);
  constexpr int U = unroll_for(R * NV);
  T acc[U][R][NV];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[u][r][v] = V::zero();
  auto step = [&](T(&accu)[R][NV], int64_t i) __attribute__((always_inline)) {
    const float* brow = b + i * ldb;
    const float* arow = a + i * lda;
    T bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = PART && v == NV - 1 ? V::maskload(brow + v * W, msk) : V::load(brow + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const T av = V::bcast(arow + r);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) accu[r][v] = V::fma(av, bv[v], accu[r][v]);
    }
  };
  int64_t i = 0;
  for (; i + U <= m; i += U) static_for([&](auto u) { step(acc[u], i + u); }, std::make_integer_sequence<int, U>{});
  for (; i < m; ++i) step(acc[0], i);
#pragma GCC unroll 4
  for (int u = 1; u < U; ++u)
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[0][r][v] = V::add(acc[0][r][v], acc[u][r][v]);
  const T vbeta = V::set1(beta);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int cnt = v == NV - 1 ? nlast : W;
      float* cp = c + r * ldc + v * W;
      T out = acc[0][r][v];
      if (beta != 0.0f) out = V::fma(vbeta, V::load_part(cp, cnt), out);
      V::store_part(cp, out, cnt);
    }
}

// tn for n = N < 8, vectorized over k instead: C^T[j][t0 + 8v .. +8] += B[i][j] * A[i][t0 + 8v .. +8] for
// all N columns j and TV full 8-float column vectors of A, then a transposed store into C. Uses n*k/8
// full-width FMAs per m row instead of k partly-empty ones; the k % 8 leftover rows of C go to tn_block.
template <int N, int TV>
void tn_tvec_block(int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc) {
  constexpr int U = unroll_for(N * TV);
  __m256 acc[U][N][TV];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j)
#pragma GCC unroll 8
      for (int v = 0; v < TV; ++v) acc[u][j][v] = _mm256_setzero_ps();
  auto step = [&](__m256(&accu)[N][TV], int64_t i) __attribute__((always_inline)) {
    const float* arow = a + i * lda;
    const float* brow = b + i * ldb;
    __m256 av[TV];
#pragma GCC unroll 8
    for (int v = 0; v < TV; ++v) av[v] = _mm256_loadu_ps(arow + v * 8);
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) {
      const __m256 bj = _mm256_broadcast_ss(brow + j);
#pragma GCC unroll 8
      for (int v = 0; v < TV; ++v) accu[j][v] = _mm256_fmadd_ps(bj, av[v], accu[j][v]);
    }
  };
  int64_t i = 0;
  for (; i + U <= m; i += U) static_for([&](auto u) { step(acc[u], i + u); }, std::make_integer_sequence<int, U>{});
  for (; i < m; ++i) step(acc[0], i);
  alignas(32) float tmp[N][TV * 8];
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j)
#pragma GCC unroll 8
    for (int v = 0; v < TV; ++v) {
      __m256 sum = acc[0][j][v];
#pragma GCC unroll 4
      for (int u = 1; u < U; ++u) sum = _mm256_add_ps(sum, acc[u][j][v]);
      _mm256_store_ps(&tmp[j][v * 8], sum);
    }
  for (int t = 0; t < TV * 8; ++t) {
    float* crow = c + t * ldc;
    if (beta == 0.0f) {
      for (int j = 0; j < N; ++j) crow[j] = tmp[j][t];
    } else {
      for (int j = 0; j < N; ++j) crow[j] = beta * crow[j] + tmp[j][t];
    }
  }
}

// Column vectors per pass for tn_tvec_block: N * TV <= 12 accumulators.
constexpr int tvec_max(int n) { return n <= 3 ? 4 : n == 4 ? 3 : n <= 6 ? 2 : 1; }

template <class V, int NV>
void tn_dispatch(int rows, int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, int nlast) {
  const bool part = nlast != V::W;
#define DTNN_TN_CASE(R)                                                           \
  case R:                                                                         \
    return part ? tn_block<V, R, NV, true>(m, a, lda, b, ldb, beta, c, ldc, nlast) \
                : tn_block<V, R, NV, false>(m, a, lda, b, ldb, beta, c, ldc, nlast);
  switch (rows) {
    DTNN_TN_CASE(1) DTNN_TN_CASE(2) DTNN_TN_CASE(3) DTNN_TN_CASE(4) DTNN_TN_CASE(5) DTNN_TN_CASE(6)
    DTNN_TN_CASE(7) DTNN_TN_CASE(8) DTNN_TN_CASE(9) DTNN_TN_CASE(10) DTNN_TN_CASE(11) DTNN_TN_CASE(12)
    default: return;
  }
#undef DTNN_TN_CASE
}

template <class V, int NV>
void tn_run(int64_t k, int64_t n, int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
            float* c, int64_t ldc) {
  constexpr int64_t kMaxRows = NV == 1 ? 12 : 6;  // accumulators: kMaxRows * NV <= 12
  const int nlast = static_cast<int>(n - (NV - 1) * V::W);
  // Split k into equal-ish blocks of at most kMaxRows rows (e.g. 27 -> 9+9+9, not 12+12+3).
  const int64_t blocks = (k + kMaxRows - 1) / kMaxRows;
  int64_t t0 = 0;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t rows = k / blocks + (blk < k % blocks ? 1 : 0);
    tn_dispatch<V, NV>(static_cast<int>(rows), m, a + t0, lda, b, ldb, beta, c + t0 * ldc, ldc, nlast);
    t0 += rows;
  }
}

template <int N>
void tn_tvec_run(int64_t k, int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  constexpr int kMaxTv = tvec_max(N);
  const int64_t tvt = k / 8;  // full column vectors of A
  const int64_t passes = (tvt + kMaxTv - 1) / kMaxTv;
  int64_t v0 = 0;
  for (int64_t pass = 0; pass < passes; ++pass) {
    const int tv = static_cast<int>(tvt / passes + (pass < tvt % passes ? 1 : 0));
    const float* ap = a + v0 * 8;
    float* cp = c + v0 * 8 * ldc;
    switch (tv) {
      case 1: tn_tvec_block<N, 1>(m, ap, lda, b, ldb, beta, cp, ldc); break;
      case 2: if constexpr (kMaxTv >= 2) tn_tvec_block<N, 2>(m, ap, lda, b, ldb, beta, cp, ldc); break;
      case 3: if constexpr (kMaxTv >= 3) tn_tvec_block<N, 3>(m, ap, lda, b, ldb, beta, cp, ldc); break;
      default: if constexpr (kMaxTv >= 4) tn_tvec_block<N, 4>(m, ap, lda, b, ldb, beta, cp, ldc); break;
    }
    v0 += tv;
  }
  const int tail = static_cast<int>(k - tvt * 8);
  if (tail > 0) {
    if constexpr (N <= 4) tn_dispatch<V4, 1>(tail, m, a + tvt * 8, lda, b, ldb, beta, c + tvt * 8 * ldc, ldc, N);
    else tn_dispatch<V8, 1>(tail, m, a + tvt * 8, lda, b, ldb, beta, c + tvt * 8 * ldc, ldc, N);
  }
}

// tn for n == 4, vectorized over k like tn_tvec_block but without the per-column broadcasts of B:
// bb = [B[i][0..3] | B[i][0..3]] is loaded once per m row and rotated in-lane (rot_s(bb)[t] =
// B[i][(t+s)%4]), and acc_s[v] += A[i][8v..8v+8] * rot_s(bb), so lane t of acc_s belongs to
// C[8v+t][(t+s)%4]. TT leftover rows of C (k % 8) are folded into the same sweep: C[8TV+q][0..3] +=
// A[i][8TV+q] * B[i][0..3] in xmm accumulators. Per m row: 2 + TT loads, 3 shuffles, 4*TV + TT FMAs.
template <int TV, int TT>
void tn4_block(int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc) {
  // Registers: accumulators + bb, its 3 rotations and the A vector must fit the 16 ymm without spills.
  static_assert(4 * TV + TT <= 10, "too many accumulators");
  constexpr int U = 10 / (4 * TV + TT);
  constexpr int TTA = TT > 0 ? TT : 1;
  __m256 acc[U][4][TV];
  __m128 tacc[U][TTA];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s)
#pragma GCC unroll 4
      for (int v = 0; v < TV; ++v) acc[u][s][v] = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int q = 0; q < TTA; ++q) tacc[u][q] = _mm_setzero_ps();
  }
  auto step = [&](__m256(&accu)[4][TV], __m128(&taccu)[TTA], int64_t i) __attribute__((always_inline)) {
    const float* arow = a + i * lda;
    const __m256 bb = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(b + i * ldb));
    const __m256 rot[4] = {bb, _mm256_permute_ps(bb, _MM_SHUFFLE(0, 3, 2, 1)),
                           _mm256_permute_ps(bb, _MM_SHUFFLE(1, 0, 3, 2)),
                           _mm256_permute_ps(bb, _MM_SHUFFLE(2, 1, 0, 3))};
#pragma GCC unroll 4
    for (int v = 0; v < TV; ++v) {
      const __m256 av = _mm256_loadu_ps(arow + 8 * v);
#pragma GCC unroll 4
      for (int s = 0; s < 4; ++s) accu[s][v] = _mm256_fmadd_ps(av, rot[s], accu[s][v]);
    }
#pragma GCC unroll 8
    for (int q = 0; q < TT; ++q)
      taccu[q] = _mm_fmadd_ps(_mm_broadcast_ss(arow + 8 * TV + q), _mm256_castps256_ps128(bb), taccu[q]);
  };
  int64_t i = 0;
  for (; i + U <= m; i += U)
    static_for([&](auto u) { step(acc[u], tacc[u], i + u); }, std::make_integer_sequence<int, U>{});
  for (; i < m; ++i) step(acc[0], tacc[0], i);
  alignas(32) float tmp[4][TV * 8];
#pragma GCC unroll 4
  for (int s = 0; s < 4; ++s)
#pragma GCC unroll 4
    for (int v = 0; v < TV; ++v) {
      __m256 sum = acc[0][s][v];
#pragma GCC unroll 4
      for (int u = 1; u < U; ++u) sum = _mm256_add_ps(sum, acc[u][s][v]);
      _mm256_store_ps(&tmp[s][v * 8], sum);
    }
  for (int t = 0; t < TV * 8; ++t) {
    float out[4];
    for (int s = 0; s < 4; ++s) out[(t + s) % 4] = tmp[s][t];
    float* crow = c + t * ldc;
    for (int j = 0; j < 4; ++j) crow[j] = beta == 0.0f ? out[j] : beta * crow[j] + out[j];
  }
  const __m128 vbeta = _mm_set1_ps(beta);
#pragma GCC unroll 8
  for (int q = 0; q < TT; ++q) {
    __m128 sum = tacc[0][q];
#pragma GCC unroll 4
    for (int u = 1; u < U; ++u) sum = _mm_add_ps(sum, tacc[u][q]);
    float* crow = c + (8 * TV + q) * ldc;
    if (beta != 0.0f) sum = _mm_fmadd_ps(vbeta, _mm_loadu_ps(crow), sum);
    _mm_storeu_ps(crow, sum);
  }
}

template <int TV>
void tn4_dispatch(int tt, int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc) {
  switch (tt) {
    case 0: return tn4_block<TV, 0>(m, a, lda, b, ldb, beta, c, ldc);
    case 1: if constexpr (4 * TV + 1 <= 10) return tn4_block<TV, 1>(m, a, lda, b, ldb, beta, c, ldc); break;
    case 2: if constexpr (4 * TV + 2 <= 10) return tn4_block<TV, 2>(m, a, lda, b, ldb, beta, c, ldc); break;
    case 3: if constexpr (4 * TV + 3 <= 10) return tn4_block<TV, 3>(m, a, lda, b, ldb, beta, c, ldc); break;
    case 4: if constexpr (4 * TV + 4 <= 10) return tn4_block<TV, 4>(m, a, lda, b, ldb, beta, c, ldc); break;
    case 5: if constexpr (4 * TV + 5 <= 10) return tn4_block<TV, 5>(m, a, lda, b, ldb, beta, c, ldc); break;
    case 6: if constexpr (4 * TV + 6 <= 10) return tn4_block<TV, 6>(m, a, lda, b, ldb, beta, c, ldc); break;
    case 7: if constexpr (4 * TV + 7 <= 10) return tn4_block<TV, 7>(m, a, lda, b, ldb, beta, c, ldc); break;
  }
}

// n == 4, k >= 8: passes of <= 2 column vectors; the k % 8 leftover rows ride along with the last pass
// when its accumulators allow (4*TV + tail <= 10), else get their own tn_block pass.
void tn4_run(int64_t k, int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) {
  const int64_t tvt = k / 8;
  const int tail = static_cast<int>(k % 8);
  const int64_t passes = (tvt + 1) / 2;
  int64_t v0 = 0;
  for (int64_t pass = 0; pass < passes; ++pass) {
    const int tv = static_cast<int>(tvt / passes + (pass < tvt % passes ? 1 : 0));
    const bool last = pass == passes - 1;
    const int tt = last && 4 * tv + tail <= 10 ? tail : 0;
    const float* ap = a + v0 * 8;
    float* cp = c + v0 * 8 * ldc;
    if (tv == 1) tn4_dispatch<1>(tt, m, ap, lda, b, ldb, beta, cp, ldc);
    else tn4_dispatch<2>(tt, m, ap, lda, b, ldb, beta, cp, ldc);
    v0 += tv;
    if (last && tail > 0 && tt == 0)
      tn_dispatch<V4, 1>(tail, m, a + tvt * 8, lda, b, ldb, beta, c + tvt * 8 * ldc, ldc, 4);
  }
}

}  // namespace

void skinny_gemm_tn(int64_t k, int64_t n, int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float beta, float* c, int64_t ldc) {
  if (k <= 0 || n <= 0) return;
  if (k >= 8 && n == 4) return tn4_run(k, m, a, lda, b, ldb, beta, c, ldc);
  if (k >= 8 && n < 8) {
    switch (n) {
      case 1: return tn_tvec_run<1>(k, m, a, lda, b, ldb, beta, c, ldc);
      case 2: return tn_tvec_run<2>(k, m, a, lda, b, ldb, beta, c, ldc);
      case 3: return tn_tvec_run<3>(k, m, a, lda, b, ldb, beta, c, ldc);
      case 4: return tn_tvec_run<4>(k, m, a, lda, b, ldb, beta, c, ldc);
      case 5: return tn_tvec_run<5>(k, m, a, lda, b, ldb, beta, c, ldc);
      case 6: return tn_tvec_run<6>(k, m, a, lda, b, ldb, beta, c, ldc);
      default: return tn_tvec_run<7>(k, m, a, lda, b, ldb, beta, c, ldc);
    }
  }
  if (n <= 4) return tn_run<V4, 1>(k, n, m, a, lda, b, ldb, beta, c, ldc);
  if (n <= 8) return tn_run<V8, 1>(k, n, m, a, lda, b, ldb, beta, c, ldc);
  if (n <= 16) return tn_run<V8, 2>(k, n, m, a, lda, b, ldb, beta, c, ldc);
  for (int64_t t = 0; t < k; ++t)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t i = 0; i < m; ++i) s += a[i * lda + t] * b[i * ldb + j];
      float& out = c[t * ldc + j];
      out = beta == 0.0f ? s : beta * out + s;
    }
}

}  // namespace dtnn::cpu
