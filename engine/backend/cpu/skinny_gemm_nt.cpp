// skinny_gemm_nt, C[m x k] = A[m x n] . B[k x n]^T (contract: skinny_gemm.h; overview: skinny_gemm.cpp).
// B^T is packed (n x k, rows zero-padded to a multiple of 8); R rows x NV ymm columns of C accumulate
// broadcast(A[i][j]) * B^T[j][cols] over the n inner steps.
#include "backend/cpu/skinny_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/skinny_gemm_vec.h"

namespace dtnn::cpu {

using namespace skinny;

namespace {

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

}  // namespace

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

}  // namespace dtnn::cpu
