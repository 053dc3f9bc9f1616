// Internal to the skinny SGEMM kernels (skinny_gemm_nn/nt/tn.cpp): V4 / V8, one xmm / ymm of floats behind
// one interface, so a kernel template is written once for both widths. Partial vectors (the last cnt < W
// columns of a row) are read with maskload and written lane-exactly (store_part: xmm / 64-bit / scalar
// stores, never vmaskmovps), so nothing outside the matrices is read or touched; 1 <= cnt <= W.
// Needs AVX2/FMA (DTNN_ARCH_FLAGS).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dtnn::cpu::skinny {

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

}  // namespace dtnn::cpu::skinny
