// OpenBLAS SGEMM rate on square and convolution-shaped problems: the ceiling every GEMM-based
// convolution is measured against (% of this figure at the same thread count).
#include <benchmark/benchmark.h>

#include <vector>

#include "backend/cpu/blas.h"

namespace {

void BM_sgemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  dtnn::cpu::set_threads(static_cast<int>(state.range(3)));
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  for (auto _ : state) {
    dtnn::cpu::sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// (m, n, k, threads). The skinny ones are simplecnn's convolutions as im2row GEMMs (batch 64).
BENCHMARK(BM_sgemm)->Args({1024, 1024, 1024, 1})->Args({1024, 1024, 1024, 2})
    ->Args({50176, 8, 36, 1})->Args({50176, 4, 9, 1})->Args({64, 128, 1568, 1})->UseRealTime();

BENCHMARK_MAIN();
