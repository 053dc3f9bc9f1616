// OpenBLAS SGEMM rate on square and convolution-shaped problems: the ceiling every GEMM-based
// convolution is measured against (% of this figure at the same thread count).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backend/cpu/blas_core.h"
#include "backend/cpu/blas.h"
#include "backend/cpu/gemm_bf16.h"
#include "backend/cpu/skinny_gemm.h"
#include "conv/cpu/cpu_algorithms.h"

namespace {

void BM_sgemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  dtnn::cpu::set_threads(static_cast<int>(state.range(3)));
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  for (auto _ : state) {
    dtnn::cpu::sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<float> random_floats(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = u(rng);
  return v;
}

// The three im2row GEMM shapes, single-threaded, OpenBLAS (impl 0) vs the skinny AVX2 kernels (impl 1).
// nn: Y[m x n] = rows[m x k] . W[k x n]        args (m, n, k, impl)
void BM_skinny_nn(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool skinny = state.range(3) != 0;
  dtnn::cpu::set_threads(1);
  const std::vector<float> a = random_floats(m * k, 1), b = random_floats(k * n, 2);
  std::vector<float> c(m * n);
  for (auto _ : state) {
    if (skinny) dtnn::cpu::skinny_gemm_nn(m, n, k, a.data(), k, b.data(), n, c.data(), n);
    else dtnn::cpu::sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(skinny ? "skinny" : "openblas");
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

// nt: drows[m x k] = dY[m x n] . W[k x n]^T    args (m, k, n, impl)
void BM_skinny_nt(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool skinny = state.range(3) != 0;
  dtnn::cpu::set_threads(1);
  const std::vector<float> a = random_floats(m * n, 3), b = random_floats(k * n, 4);
  std::vector<float> c(m * k);
  for (auto _ : state) {
    if (skinny) dtnn::cpu::skinny_gemm_nt(m, k, n, a.data(), n, b.data(), n, c.data(), k);
    else dtnn::cpu::sgemm(false, true, m, k, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), k);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(skinny ? "skinny" : "openblas");
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

// tn: dW[k x n] += rows[m x k]^T . dY[m x n]   args (k, n, m, impl); beta = 1 as in every chunk but the first
void BM_skinny_tn(benchmark::State& state) {
  const int64_t k = state.range(0), n = state.range(1), m = state.range(2);
  const bool skinny = state.range(3) != 0;
  dtnn::cpu::set_threads(1);
  const std::vector<float> a = random_floats(m * k, 5), b = random_floats(m * n, 6);
  std::vector<float> c(k * n, 0.0f);
  for (auto _ : state) {
    if (skinny) dtnn::cpu::skinny_gemm_tn(k, n, m, a.data(), k, b.data(), n, 1.0f, c.data(), n);
    else dtnn::cpu::sgemm(true, false, k, n, m, 1.0f, a.data(), k, b.data(), n, 1.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(skinny ? "skinny" : "openblas");
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

// (m, n, k, threads). The skinny ones are simplecnn's convolutions as im2row GEMMs (batch 64).
// The three GEMMs of an FC layer (transposes as the layer calls them), 1 thread:
// (m, n, k, trans_a, trans_b). simplecnn's FC 1568 -> 128 at batch 64:
//   forward y = x.W (64x128x1568), dW = x^T.dy (1568x128x64), dx = dy.W^T (64x1568x128).
void BM_sgemm_fc(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool ta = state.range(3) != 0, tb = state.range(4) != 0;
  dtnn::cpu::set_threads(1);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  for (auto _ : state) {
    dtnn::cpu::sgemm(ta, tb, m, n, k, 1.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_sgemm_fc)->Args({64, 128, 1568, 0, 0})->Args({1568, 128, 64, 1, 0})->Args({64, 1568, 128, 0, 1})
    ->UseRealTime();

// --dtype=bfloat16's GEMM (operands rounded to bf16 on every call, as the FC layers call it; oneDNN's
// AVX512-BF16/AMX kernels) on the same shapes as BM_sgemm and BM_sgemm_fc: its rate against SGEMM's is what
// bf16 can gain on this CPU. Reported as an error where the CPU has no bf16 kernels.
void BM_gemm_bf16(benchmark::State& state) {
  if (const std::string why = dtnn::cpu_bf16_support(); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool ta = state.range(3) != 0, tb = state.range(4) != 0;
  dtnn::cpu::set_threads(static_cast<int>(state.range(5)));
  const std::vector<float> a = random_floats(m * k, 7), b = random_floats(k * n, 8);
  std::vector<float> c(m * n);
  for (auto _ : state) {
    dtnn::cpu::gemm_bf16(ta, tb, m, n, k, 1.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_gemm_bf16)->ArgNames({"m", "n", "k", "ta", "tb", "threads"})->Args({1024, 1024, 1024, 0, 0, 1})
    ->Args({1024, 1024, 1024, 0, 0, 2})->Args({64, 128, 1568, 0, 0, 1})->Args({1568, 128, 64, 1, 0, 1})
    ->Args({64, 1568, 128, 0, 1, 1})->UseRealTime();

// Named arguments: the thread count is "threads:T" in the case name, which `dtnn ingest` stores as the row's
// threads (a positional 2 was stored as Google Benchmark's own thread count, 1).
BENCHMARK(BM_sgemm)->ArgNames({"m", "n", "k", "threads"})->Args({1024, 1024, 1024, 1})->Args({1024, 1024, 1024, 2})
    ->Args({50176, 8, 36, 1})->Args({50176, 4, 9, 1})->Args({64, 128, 1568, 1})->UseRealTime();

// simplecnn's im2row GEMMs (conv 1->4 and 4->8, 3x3, 28x28, batch 64): one ~256 KB chunk, and the
// whole batch for nn. Last argument: 0 = OpenBLAS, 1 = skinny kernels.
BENCHMARK(BM_skinny_nn)->ArgsProduct({{1820}, {8}, {36}, {0, 1}})->ArgsProduct({{7281}, {4}, {9}, {0, 1}})
    ->ArgsProduct({{50176}, {8}, {36}, {0, 1}})->UseRealTime();
BENCHMARK(BM_skinny_nt)->ArgsProduct({{1820}, {36}, {8}, {0, 1}})->ArgsProduct({{7281}, {9}, {4}, {0, 1}})
    ->UseRealTime();
BENCHMARK(BM_skinny_tn)->ArgsProduct({{36}, {8}, {1820}, {0, 1}})->ArgsProduct({{9}, {4}, {7281}, {0, 1}})
    ->UseRealTime();

int main(int argc, char** argv) {
  dtnn::cpu::ensure_blas_core(argv);  // OpenBLAS's right kernels where its CPU detection fails
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
