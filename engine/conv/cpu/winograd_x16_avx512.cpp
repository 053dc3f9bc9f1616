// cpu.winograd_x16's and cpu.winograd_x16_f4's AVX-512 kernels: the tile code (winograd_x16_tiles.h) over one
// zmm register per 16 channels. This file alone of the algorithms is compiled with -mavx512f -mfma
// (engine/CMakeLists.txt); winograd_x16.cpp calls it only where AVX-512F runs. A compiler without -mavx512f
// builds no kernels here (avx512_kernels() is null).
#include "conv/cpu/winograd_x16.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#include "conv/cpu/winograd_x16_tiles.h"

namespace dtnn::winograd_x16 {
namespace {

struct V {
  __m512 r;
  static V load(const float* p) { return {_mm512_loadu_ps(p)}; }
  static V zero() { return {_mm512_setzero_ps()}; }
  static V splat(float x) { return {_mm512_set1_ps(x)}; }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v.r); }
  static void stream(float* p, V v) { _mm512_stream_ps(p, v.r); }

  // CI > 0: ci known when compiled, so every tile's broadcast is one base register plus a constant offset
  // (a runtime ci needs a register per tile row, more than x86-64 has for kTiles rows). kTiles accumulators.
  template <int CI>
  static void point_gemm(const float* v, int64_t ci_runtime, const float* u, int64_t ko, float* m) {
    const int64_t ci = CI > 0 ? CI : ci_runtime;
    __m512 acc[kTiles];
#pragma GCC unroll 16
    for (int t = 0; t < kTiles; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t c = 0; c < ci; ++c) {
      const __m512 uc = _mm512_loadu_ps(u + c * ko);
#pragma GCC unroll 16
      for (int t = 0; t < kTiles; ++t) acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(v[t * ci + c]), uc, acc[t]);
    }
#pragma GCC unroll 16
    for (int t = 0; t < kTiles; ++t) _mm512_storeu_ps(m + t * ko, acc[t]);
  }
  using PointGemm = void (*)(const float*, int64_t, const float*, int64_t, float*);
  static PointGemm point_gemm_for(int64_t ci) {
    return ci == 16 ? point_gemm<16> : ci == 32 ? point_gemm<32> : ci == 64 ? point_gemm<64> : point_gemm<0>;
  }

  // The 16 x 16 sums in 16 registers for the whole block.
  static void accumulate(float* s, int64_t lds, const float* v, int64_t ldv, const float* e, int64_t lde, int count) {
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) acc[r] = _mm512_loadu_ps(s + r * lds);
    for (int t = 0; t < count; ++t) {
      const __m512 et = _mm512_loadu_ps(e + t * lde);
      const float* vt = v + t * ldv;
#pragma GCC unroll 16
      for (int r = 0; r < 16; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(vt[r]), et, acc[r]);
    }
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) _mm512_storeu_ps(s + r * lds, acc[r]);
  }
};

inline V operator+(V a, V b) { return {_mm512_add_ps(a.r, b.r)}; }
inline V operator-(V a, V b) { return {_mm512_sub_ps(a.r, b.r)}; }
inline V operator*(V a, V b) { return {_mm512_mul_ps(a.r, b.r)}; }
inline V fmadd(V a, V b, V c) { return {_mm512_fmadd_ps(a.r, b.r, c.r)}; }
inline V fmsub(V a, V b, V c) { return {_mm512_fmsub_ps(a.r, b.r, c.r)}; }
inline V fnmadd(V a, V b, V c) { return {_mm512_fnmadd_ps(a.r, b.r, c.r)}; }

}  // namespace

const Kernels* avx512_kernels() {
  static const Kernels k{forward_tiles_on<V, 2>, forward_tiles_on<V, 4>, filter_tiles_on<V, 2>, filter_tiles_on<V, 4>};
  return &k;
}

}  // namespace dtnn::winograd_x16

#else
namespace dtnn::winograd_x16 {
const Kernels* avx512_kernels() { return nullptr; }
}  // namespace dtnn::winograd_x16
#endif
