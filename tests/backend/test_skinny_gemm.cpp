// Tests for engine/backend/cpu/skinny_gemm: every kernel against a double-precision reference, over
// skinny shapes (all n in 1..16), tails in m, padded leading dimensions, and beta = 1 accumulation. Each
// operand sits inside a guard-filled buffer whose guards must survive (no out-of-bounds writes), and
// the padding between rows of C must be left untouched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/skinny_gemm.h"

namespace {

constexpr float kGuard = 12345.0f;
int64_t g_guard_len = 64;  // 0: exact-size heap buffers, so AddressSanitizer sees any over-read

// rows x cols matrix with leading dimension ld, inside [guard | data | guard]; the data span ends right
// after the last row's cols (no trailing padding), and the padding columns between rows hold kGuard.
struct Mat {
  int64_t rows, cols, ld, guard;
  std::vector<float> buf;
  Mat(int64_t r, int64_t c, int64_t ld_)
      : rows(r), cols(c), ld(ld_), guard(g_guard_len),
        buf(2 * g_guard_len + (r > 0 ? (r - 1) * ld_ + c : 0), kGuard) {}
  float* data() { return buf.data() + guard; }
  const float* data() const { return buf.data() + guard; }
  float& at(int64_t i, int64_t j) { return data()[i * ld + j]; }
  float at(int64_t i, int64_t j) const { return data()[i * ld + j]; }
  void randomize(std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) at(i, j) = u(rng);
  }
  void fill(float v) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) at(i, j) = v;
  }
  // Everything outside the rows x cols window still holds kGuard.
  bool guards_intact() const {
    for (int64_t x = 0; x < static_cast<int64_t>(buf.size()); ++x) {
      const int64_t off = x - guard;
      const bool inside = off >= 0 && off < rows * ld && off % ld < cols;
      if (!inside && buf[x] != kGuard) return false;
    }
    return true;
  }
};

constexpr double kTol = 1e-5;

// Error check: max |got - ref| / max |ref| <= 1e-5. A result that is tiny through cancellation (e.g. one
// 7-term dot product close to 0) is instead held to the usual float-summation bound relative to the sum
// of the magnitudes of the terms: max |got - ref| <= 1e-6 * max_ij sum_p |a_ip b_pj|.
struct Ref {
  std::vector<double> val, mag;  // reference value and sum of |terms|, per C entry
  explicit Ref(int64_t count) : val(count, 0.0), mag(count, 0.0) {}
  void add(int64_t idx, double term) {
    val[idx] += term;
    mag[idx] += std::abs(term);
  }
};

bool close_enough(const Mat& got, const Ref& ref) {
  double err = 0.0, scale = 0.0, mag = 0.0;
  for (int64_t i = 0; i < got.rows; ++i)
    for (int64_t j = 0; j < got.cols; ++j) {
      const int64_t idx = i * got.cols + j;
      const double g = got.at(i, j);
      if (!std::isfinite(g)) return false;
      err = std::max(err, std::abs(g - ref.val[idx]));
      scale = std::max(scale, std::abs(ref.val[idx]));
      mag = std::max(mag, ref.mag[idx]);
    }
  if (err <= kTol * scale) return true;
  if (err <= 1e-6 * mag) return true;
  UNSCOPED_INFO("max abs err " << err << ", max |ref| " << scale << ", max sum|terms| " << mag);
  return false;
}

const int64_t kMs[] = {0, 1, 3, 7, 8, 9, 63, 1000, 5001};
const int64_t kKs[] = {1, 4, 8, 9, 27, 36, 72, 100};

// Leading-dimension padding: 0 (dense) or a few extra floats.
int64_t pad_for(int64_t variant, int64_t salt) { return variant == 0 ? 0 : 1 + (salt % 7); }

void check_nn(std::mt19937& rng, int64_t m, int64_t n, int64_t k, int64_t pad) {
  Mat a(m, k, k + pad), b(k, n, n + pad), c(m, n, n + pad);
  a.randomize(rng);
  b.randomize(rng);
  c.fill(std::numeric_limits<float>::quiet_NaN());  // beta = 0 must not read C
  dtnn::cpu::skinny_gemm_nn(m, n, k, a.data(), a.ld, b.data(), b.ld, c.data(), c.ld);
  Ref ref(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) ref.add(i * n + j, double(a.at(i, p)) * double(b.at(p, j)));
  INFO("nn m=" << m << " n=" << n << " k=" << k << " pad=" << pad);
  CHECK(close_enough(c, ref));
  CHECK(c.guards_intact());
}

void check_nt(std::mt19937& rng, int64_t m, int64_t k, int64_t n, int64_t pad) {
  Mat a(m, n, n + pad), b(k, n, n + pad), c(m, k, k + pad);
  a.randomize(rng);
  b.randomize(rng);
  c.fill(std::numeric_limits<float>::quiet_NaN());
  dtnn::cpu::skinny_gemm_nt(m, k, n, a.data(), a.ld, b.data(), b.ld, c.data(), c.ld);
  Ref ref(m * k);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t t = 0; t < k; ++t)
      for (int64_t j = 0; j < n; ++j) ref.add(i * k + t, double(a.at(i, j)) * double(b.at(t, j)));
  INFO("nt m=" << m << " k=" << k << " n=" << n << " pad=" << pad);
  CHECK(close_enough(c, ref));
  CHECK(c.guards_intact());
}

void check_tn(std::mt19937& rng, int64_t k, int64_t n, int64_t m, int64_t pad, float beta) {
  Mat a(m, k, k + pad), b(m, n, n + pad), c(k, n, n + pad);
  a.randomize(rng);
  b.randomize(rng);
  if (beta == 0.0f) c.fill(std::numeric_limits<float>::quiet_NaN());
  else c.randomize(rng);
  Ref ref(k * n);
  for (int64_t t = 0; t < k; ++t)
    for (int64_t j = 0; j < n; ++j)
      if (beta != 0.0f) ref.add(t * n + j, double(beta) * double(c.at(t, j)));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t t = 0; t < k; ++t)
      for (int64_t j = 0; j < n; ++j) ref.add(t * n + j, double(a.at(i, t)) * double(b.at(i, j)));
  dtnn::cpu::skinny_gemm_tn(k, n, m, a.data(), a.ld, b.data(), b.ld, beta, c.data(), c.ld);
  INFO("tn k=" << k << " n=" << n << " m=" << m << " pad=" << pad << " beta=" << beta);
  CHECK(close_enough(c, ref));
  CHECK(c.guards_intact());
}

}  // namespace

TEST_CASE("skinny_supported covers 1..16", "[skinny_gemm]") {
  CHECK_FALSE(dtnn::cpu::skinny_supported(0));
  for (int64_t n = 1; n <= 16; ++n) CHECK(dtnn::cpu::skinny_supported(n));
  CHECK_FALSE(dtnn::cpu::skinny_supported(17));
}

TEST_CASE("skinny_gemm_nn matches a double reference", "[skinny_gemm]") {
  std::mt19937 rng(1);
  for (int64_t variant = 0; variant < 2; ++variant)
    for (int64_t m : kMs)
      for (int64_t n = 1; n <= 16; ++n)
        for (int64_t k : kKs) {
          if (m >= 1000 && n % 4 != 0 && k > 36) continue;  // keep the run short; tails are covered by small m
          check_nn(rng, m, n, k, pad_for(variant, m + n + k));
        }
}

TEST_CASE("skinny_gemm_nt matches a double reference", "[skinny_gemm]") {
  std::mt19937 rng(2);
  for (int64_t variant = 0; variant < 2; ++variant)
    for (int64_t m : kMs)
      for (int64_t n = 1; n <= 16; ++n)
        for (int64_t k : kKs) {
          if (m >= 1000 && n % 4 != 0 && k > 36) continue;
          check_nt(rng, m, k, n, pad_for(variant, m + n + k));
        }
}

TEST_CASE("skinny_gemm_tn matches a double reference", "[skinny_gemm]") {
  std::mt19937 rng(3);
  for (float beta : {0.0f, 1.0f})
    for (int64_t variant = 0; variant < 2; ++variant)
      for (int64_t m : kMs)
        for (int64_t n = 1; n <= 16; ++n)
          for (int64_t k : kKs) {
            if (m >= 1000 && n % 4 != 0 && k > 36) continue;
            check_tn(rng, k, n, m, pad_for(variant, m + n + k), beta);
          }
}

TEST_CASE("skinny_gemm handles large k (blocked packing) and n > 16 (fallback)", "[skinny_gemm]") {
  std::mt19937 rng(4);
  for (int64_t n : {1, 4, 8, 13, 16, 17, 24}) {
    for (int64_t k : {511, 512, 513, 1100}) {
      check_nn(rng, 37, n, k, 0);
      check_nt(rng, 37, k, n, 3);
      check_tn(rng, k, n, 37, 2, 1.0f);
    }
    check_nn(rng, 13, n, 0, 1);  // k = 0: C = 0
    check_tn(rng, 9, n, 0, 1, 0.0f);  // m = 0: C = 0
    check_tn(rng, 9, n, 0, 1, 1.0f);  // m = 0: C unchanged
  }
}

TEST_CASE("skinny_gemm_tn accumulates in chunks like im2row backward_filter", "[skinny_gemm]") {
  std::mt19937 rng(5);
  const int64_t M = 7281, T = 36, K = 8, chunk = 1820;
  Mat a(M, T, T), b(M, K, K), c(T, K, K);
  a.randomize(rng);
  b.randomize(rng);
  for (int64_t m0 = 0; m0 < M; m0 += chunk) {
    const int64_t mc = std::min(chunk, M - m0);
    dtnn::cpu::skinny_gemm_tn(T, K, mc, a.data() + m0 * T, T, b.data() + m0 * K, K, m0 == 0 ? 0.0f : 1.0f,
                              c.data(), K);
  }
  Ref ref(T * K);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < K; ++j) ref.add(t * K + j, double(a.at(i, t)) * double(b.at(i, j)));
  CHECK(close_enough(c, ref));
  CHECK(c.guards_intact());
}

TEST_CASE("skinny_gemm reads nothing past exact-size operands", "[skinny_gemm]") {
  // No guard zone: the last element of each matrix is the last element of its heap block (run under
  // -fsanitize=address to make over-reads fatal).
  g_guard_len = 0;
  std::mt19937 rng(6);
  for (int64_t pad : {0, 3})
    for (int64_t m : {1, 2, 3, 5, 13})
      for (int64_t n = 1; n <= 16; ++n)
        for (int64_t k : {1, 3, 4, 5, 8, 9, 12, 17, 36}) {
          check_nn(rng, m, n, k, pad);
          check_nt(rng, m, k, n, pad);
          check_tn(rng, k, n, m, pad, 0.0f);
          check_tn(rng, k, n, m, pad, 1.0f);
        }
  g_guard_len = 64;
}
