// cpu::set_flush_denormals: with it on, a denormal operand reads as zero and a product that would be
// denormal is zero, on the calling thread and on every OpenMP thread; off, IEEE denormals come back.
#include <omp.h>

#include <catch2/catch.hpp>
#include <cfloat>
#include <vector>

#include "backend/cpu/blas.h"

namespace {

// On every thread of a 2-thread team: x * 1 (x denormal) and FLT_MIN * 0.5 (a denormal result).
std::vector<float> products(float x) {
  std::vector<float> out(4, -1.0f);
#pragma omp parallel num_threads(2)
  {
    volatile float v = x, one = 1.0f, small = FLT_MIN, half = 0.5f;
    const int t = omp_get_thread_num();
    out[2 * t] = v * one;
    out[2 * t + 1] = small * half;
  }
  return out;
}

}  // namespace

TEST_CASE("cpu: flushing denormals to zero on every thread, and back", "[backend][denormals]") {
  const float denormal = FLT_MIN / 4;  // 2^-128
  REQUIRE(denormal > 0.0f);
  const int threads = dtnn::cpu::threads();
  dtnn::cpu::set_threads(2);
  dtnn::cpu::set_flush_denormals(true);
  CHECK(products(denormal) == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
  dtnn::cpu::set_flush_denormals(false);
  CHECK(products(denormal) == std::vector<float>{denormal, FLT_MIN / 2, denormal, FLT_MIN / 2});
  dtnn::cpu::set_threads(threads);
}
