// AVX2/FMA kernels for skinny row-major SGEMMs (see skinny_gemm.h for the contract).
//
// Register blocking (R rows x NV vectors of accumulators, about 8-12 of them to cover 2 FMA pipes x
// 4 cycles of latency; fewer when a small block is unrolled over independent accumulator sets):
//   nn, n <= 4  two C rows per ymm: [A[i][p..p+3] | A[i+1][p..p+3]] times the 4 "diagonals" of the
//               4x4 block of B, rotated back into place once per row pair (nn4_* below); full-width
//               FMAs and no broadcasts. k = 9 (3x3 taps, one channel) has a fully unrolled instance.
//   nn, n > 4   R rows x NV ymm of C; per k step one load of the packed, zero-padded B row (L1) and
//               one broadcast of A per row.
//   nt          B^T is packed (n x k, rows zero-padded to a multiple of 8); R rows x NV ymm columns of C
//               accumulate broadcast(A[i][j]) * B^T[j][cols] over the n inner steps.
//   tn, n >= 8  R rows of C (R x NV vectors) stay in registers for the whole sweep over m; per m row one
//   (or k < 8)  load of the B row and R broadcasts from the A row.
//   tn, n < 8   vectorized over k instead (C^T[j][8 columns] += B[i][j] * A[i][8 columns]), so n*k/8
//               full-width FMAs per m row; the k % 8 leftover rows of C use the kernel above.
// Partial vectors are read with maskload and written lane-exactly (xmm / 64-bit / scalar stores, no
// vmaskmovps stores), so nothing outside the matrices is touched. Operands are repacked into fixed
// stack buffers (<= 32 KiB), in blocks of 512 along k where needed; no heap allocation.
#include "backend/cpu/skinny_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

namespace dtnn::cpu {
namespace {

alignas(32) constexpr int32_t kMaskTable[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

// First cnt lanes of a 4-float vector, 1 <= cnt <= 4.
inline void store4_part(float* p, __m128 v, int cnt) {
  switch (cnt) {
    case 4: _mm_storeu_ps(p, v); return;
    case 3:
      _mm_storel_pi(reinterpret_cast<__m64*>(p), v);
      _mm_store_ss(p + 2, _mm_movehl_ps(v, v));
      return;
    case 2: _mm_storel_pi(reinterpret_cast<__m64*>(p), v); return;
    default: _mm_store_ss(p, v); return;
  }
}

struct V4 {
  using T = __m128;
  static constexpr int W = 4;
  static T zero() { return _mm_setzero_ps(); }
  static T load(const float* p) { return _mm_loadu_ps(p); }
  static T bcast(const float* p) { return _mm_broadcast_ss(p); }
  static T set1(float x) { return _mm_set1_ps(x); }
  static T fma(T a, T b, T c) { return _mm_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm_add_ps(a, b); }
  using M = __m128i;
  static M mask(int cnt) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMaskTable + 8 - cnt)); }
  static T maskload(const float* p, M msk) { return _mm_maskload_ps(p, msk); }
  static T load_part(const float* p, int cnt) {
    if (cnt == 4) return _mm_loadu_ps(p);
    return _mm_maskload_ps(p, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMaskTable + 8 - cnt)));
  }
  static void store_part(float* p, T v, int cnt) { store4_part(p, v, cnt); }
};

struct V8 {
  using T = __m256;
  static constexpr int W = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  using M = __m256i;
  static M mask(int cnt) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskTable + 8 - cnt)); }
  static T maskload(const float* p, M msk) { return _mm256_maskload_ps(p, msk); }
  static T load_part(const float* p, int cnt) {
    if (cnt == 8) return _mm256_loadu_ps(p);
    return _mm256_maskload_ps(p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskTable + 8 - cnt)));
  }
  static void store_part(float* p, T v, int cnt) {
    if (cnt == 8) {
      _mm256_storeu_ps(p, v);
    } else if (cnt > 4) {
      _mm_storeu_ps(p, _mm256_castps256_ps128(v));
      store4_part(p + 4, _mm256_extractf128_ps(v, 1), cnt - 4);
    } else {
      store4_part(p, _mm256_castps256_ps128(v), cnt);
    }
  }
};

// ---------------------------------------------------------------------------------------------------
// nn: C[m x n] = A[m x k] . B[k x n]

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

// ---------------------------------------------------------------------------------------------------
// nt: C[m x k] = A[m x n] . B[k x n]^T

constexpr int64_t kNtKt = 512;  // k (C column) block: packed B^T is 16 x kNtKt floats = 32 KiB at most

// R rows x NV ymm columns of C; bt points at the block's first column in the packed B^T (row stride ktp).
template <int R, int NV>
inline void nt_block(int64_t n, const float* a, int64_t lda, const float* bt, int64_t ktp, float* c, int64_t ldc,
                     int nlast) {
  __m256 acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; ++j) {
    __m256 bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = _mm256_load_ps(bt + j * ktp + v * 8);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + j);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) V8::store_part(c + r * ldc + v * 8, acc[r][v], v == NV - 1 ? nlast : 8);
}

template <int NV>
void nt_cols(int64_t m, int64_t n, const float* a, int64_t lda, const float* bt, int64_t ktp, float* c,
             int64_t ldc, int nlast) {
  constexpr int R = NV == 1 ? 12 : NV == 2 ? 6 : NV == 3 ? 4 : 2;  // R*NV <= 12 accumulators
  int64_t i = 0;
  for (; i + R <= m; i += R) nt_block<R, NV>(n, a + i * lda, lda, bt, ktp, c + i * ldc, ldc, nlast);
  for (; i < m; ++i) nt_block<1, NV>(n, a + i * lda, lda, bt, ktp, c + i * ldc, ldc, nlast);
}

void nt_dispatch(int nv, int64_t m, int64_t n, const float* a, int64_t lda, const float* bt, int64_t ktp, float* c,
                 int64_t ldc, int nlast) {
  switch (nv) {
    case 1: return nt_cols<1>(m, n, a, lda, bt, ktp, c, ldc, nlast);
    case 2: return nt_cols<2>(m, n, a, lda, bt, ktp, c, ldc, nlast);
    case 3: return nt_cols<3>(m, n, a, lda, bt, ktp, c, ldc, nlast);
    default: return nt_cols<4>(m, n, a, lda, bt, ktp, c, ldc, nlast);
  }
}

// ---------------------------------------------------------------------------------------------------
// tn: C[k x n] = beta * C + A[m x k]^T . B[m x n]

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

// ---------------------------------------------------------------------------------------------------
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

bool skinny_supported(int64_t n) { return n >= 1 && n <= 16; }

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

void skinny_gemm_nt(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda, const float* b, int64_t ldb,
                    float* c, int64_t ldc) {
  if (m <= 0 || k <= 0) return;
  if (n <= 0) {
    for (int64_t i = 0; i < m; ++i) std::memset(c + i * ldc, 0, k * sizeof(float));
    return;
  }
  if (n > 16) {  // C[i][t] = sum_j A[i][j] B[t][j]
    for (int64_t i = 0; i < m; ++i)
      for (int64_t t = 0; t < k; ++t) {
        float s = 0.0f;
        for (int64_t j = 0; j < n; ++j) s += a[i * lda + j] * b[t * ldb + j];
        c[i * ldc + t] = s;
      }
    return;
  }
  alignas(32) float bt[16 * kNtKt];
  for (int64_t t0 = 0; t0 < k; t0 += kNtKt) {
    const int64_t kt = std::min(kNtKt, k - t0);
    const int64_t ktp = (kt + 7) / 8 * 8;
    for (int64_t j = 0; j < n; ++j) {
      float* dst = bt + j * ktp;
      for (int64_t t = 0; t < kt; ++t) dst[t] = b[(t0 + t) * ldb + j];
      for (int64_t t = kt; t < ktp; ++t) dst[t] = 0.0f;
    }
    // Column groups of the block: one group of <= 4 vectors, else groups of 3 and a tail group.
    const int64_t nv = ktp / 8;
    const int group = nv <= 4 ? static_cast<int>(nv) : 3;
    for (int64_t v0 = 0; v0 < nv; v0 += group) {
      const int g = static_cast<int>(std::min<int64_t>(group, nv - v0));
      const int64_t col0 = v0 * 8;
      const int nlast = static_cast<int>(std::min<int64_t>(8, kt - (col0 + (g - 1) * 8)));
      nt_dispatch(g, m, n, a, lda, bt + col0, ktp, c + t0 + col0, ldc, nlast);
    }
  }
}

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
