// cpu.winograd_x16's and cpu.winograd_x16_f4's AVX2 kernels: the tile code (winograd_x16_tiles.h) over two ymm
// registers per 16 channels, for CPUs without AVX-512F (and under DTNN_MAX_CPU_ISA=AVX2). AVX2 and FMA are the
// build's baseline (DTNN_ARCH_FLAGS), so this file needs no flags of its own.
//
// With 16 ymm registers instead of 32 zmm, the GEMM kernels block smaller than the AVX-512 ones: 4 tiles x 16
// channels (8 accumulators) in the point GEMMs, 4 x 16 sums at a time in the weight gradient. Both keep eight
// independent FMA chains, which two FMA pipes of 4-5 cycles' latency need, and load 6 operands per 8 FMAs.
#include "conv/cpu/winograd_x16.h"

#if !defined(__AVX2__) || !defined(__FMA__)
#error "dtnn builds for AVX2 and FMA at least (DTNN_ARCH_FLAGS, e.g. -march=x86-64-v3)"
#endif
#include <immintrin.h>

#include "conv/cpu/winograd_x16_tiles.h"

namespace dtnn::winograd_x16 {
namespace {

struct V {
  __m256 lo, hi;  // channels 0-7, 8-15
  static V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V splat(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v.lo), _mm256_storeu_ps(p + 8, v.hi); }
  static void stream(float* p, V v) { _mm256_stream_ps(p, v.lo), _mm256_stream_ps(p + 8, v.hi); }

  // m[t * ko + 0:16] for 4 tiles at a time; CI > 0: ci known when compiled (as the AVX-512 kernel's).
  template <int CI>
  static void point_gemm(const float* v, int64_t ci_runtime, const float* u, int64_t ko, float* m) {
    const int64_t ci = CI > 0 ? CI : ci_runtime;
    for (int t0 = 0; t0 < kTiles; t0 += 4) {
      const float* vt = v + t0 * ci;
      __m256 lo[4], hi[4];
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) lo[t] = hi[t] = _mm256_setzero_ps();
      for (int64_t c = 0; c < ci; ++c) {
        const __m256 ul = _mm256_loadu_ps(u + c * ko), uh = _mm256_loadu_ps(u + c * ko + 8);
#pragma GCC unroll 4
        for (int t = 0; t < 4; ++t) {
          const __m256 b = _mm256_broadcast_ss(vt + t * ci + c);
          lo[t] = _mm256_fmadd_ps(b, ul, lo[t]);
          hi[t] = _mm256_fmadd_ps(b, uh, hi[t]);
        }
      }
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        _mm256_storeu_ps(m + (t0 + t) * ko, lo[t]);
        _mm256_storeu_ps(m + (t0 + t) * ko + 8, hi[t]);
      }
    }
  }
  using PointGemm = void (*)(const float*, int64_t, const float*, int64_t, float*);
  static PointGemm point_gemm_for(int64_t ci) {
    return ci == 16 ? point_gemm<16> : ci == 32 ? point_gemm<32> : ci == 64 ? point_gemm<64> : point_gemm<0>;
  }

  // The 16 x 16 sums 4 rows at a time, each in registers for the whole block.
  static void accumulate(float* s, int64_t lds, const float* v, int64_t ldv, const float* e, int64_t lde, int count) {
    for (int r0 = 0; r0 < 16; r0 += 4) {
      float* sr = s + r0 * lds;
      __m256 lo[4], hi[4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) lo[r] = _mm256_loadu_ps(sr + r * lds), hi[r] = _mm256_loadu_ps(sr + r * lds + 8);
      for (int t = 0; t < count; ++t) {
        const __m256 el = _mm256_loadu_ps(e + t * lde), eh = _mm256_loadu_ps(e + t * lde + 8);
        const float* vt = v + t * ldv + r0;
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          const __m256 b = _mm256_broadcast_ss(vt + r);
          lo[r] = _mm256_fmadd_ps(b, el, lo[r]);
          hi[r] = _mm256_fmadd_ps(b, eh, hi[r]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) _mm256_storeu_ps(sr + r * lds, lo[r]), _mm256_storeu_ps(sr + r * lds + 8, hi[r]);
    }
  }
};

inline V operator+(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline V operator-(V a, V b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
inline V operator*(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline V fmadd(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
inline V fmsub(V a, V b, V c) { return {_mm256_fmsub_ps(a.lo, b.lo, c.lo), _mm256_fmsub_ps(a.hi, b.hi, c.hi)}; }
inline V fnmadd(V a, V b, V c) { return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)}; }

}  // namespace

const Kernels& avx2_kernels() {
  static const Kernels k{forward_tiles_on<V, 2>, forward_tiles_on<V, 4>, filter_tiles_on<V, 2>, filter_tiles_on<V, 4>};
  return k;
}

}  // namespace dtnn::winograd_x16
