// The core's arithmetic peaks, one thread: float32 FMAs in AVX-512 (vfmadd231ps zmm) and in AVX2 (ymm, the peak of
// CPUs without AVX-512 and of dtnn's AVX2 kernels) and AVX512-BF16 dot products (vdpbf16ps zmm: 16 lanes x 2 bf16
// products each), each as 12 independent accumulator chains (more than
// latency x ports on any x86 core), so the loop is bound by the instruction's throughput alone. FLOP/s counts a
// multiply-add as 2: what a step's GFLOP/s and the GEMM rates (bench_gemm) are compared against, and whether
// bf16 can pay on this CPU (Sapphire/Emerald Rapids give it half the FMA rate here: bf16's speed is AMX's there).
// Cases the CPU cannot run are reported as errors with the reason.
#include <benchmark/benchmark.h>
#include <immintrin.h>

namespace {

constexpr int kChains = 12;
constexpr long kIters = 1 << 20;
// Operands the compiler cannot see: a loop over constants may be folded.
volatile float g_one = 1.0f, g_tiny = 0x1p-30f;
volatile short g_bf16_one = 0x3f80, g_bf16_tiny = 0x3000;  // 1 and 2^-31 as bf16

float sum_chains(const float* lanes) {
  float s = 0;
  for (int i = 0; i < 16 * kChains; ++i) s += lanes[i];
  return s;
}

__attribute__((target("avx512f"))) float fma_loop(long n) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 x = _mm512_set1_ps(g_one), y = _mm512_set1_ps(g_tiny);
  for (long k = 0; k < n; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_fmadd_ps(x, y, a[i]);
  alignas(64) float lanes[16 * kChains];
  for (int i = 0; i < kChains; ++i) _mm512_store_ps(lanes + 16 * i, a[i]);
  return sum_chains(lanes);
}

float fma_loop_avx2(long n) {  // AVX2 and FMA: the build's baseline (DTNN_ARCH_FLAGS)
  __m256 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 x = _mm256_set1_ps(g_one), y = _mm256_set1_ps(g_tiny);
  for (long k = 0; k < n; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm256_fmadd_ps(x, y, a[i]);
  alignas(64) float lanes[16 * kChains] = {};
  for (int i = 0; i < kChains; ++i) _mm256_store_ps(lanes + 16 * i, a[i]);
  return sum_chains(lanes);
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop(long n) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512bh x = (__m512bh)_mm512_set1_epi16(g_bf16_one), y = (__m512bh)_mm512_set1_epi16(g_bf16_tiny);
  for (long k = 0; k < n; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_dpbf16_ps(a[i], x, y);
  alignas(64) float lanes[16 * kChains];
  for (int i = 0; i < kChains; ++i) _mm512_store_ps(lanes + 16 * i, a[i]);
  return sum_chains(lanes);
}

void BM_peak_fma_f32(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512F on this CPU");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(fma_loop(kIters));
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * 16 * kChains * kIters, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_peak_fma_f32_avx2(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(fma_loop_avx2(kIters));
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * 8 * kChains * kIters, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_peak_dpbf16(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512bf16")) {
    state.SkipWithError("no AVX512-BF16 on this CPU");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(dpbf16_loop(kIters));
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * 32 * kChains * kIters, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_peak_fma_f32)->UseRealTime();
BENCHMARK(BM_peak_fma_f32_avx2)->UseRealTime();
BENCHMARK(BM_peak_dpbf16)->UseRealTime();
BENCHMARK_MAIN();
