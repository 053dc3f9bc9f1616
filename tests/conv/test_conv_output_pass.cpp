// What an algorithm's output pass computes besides its output. ConvAlgorithm::forward_moments: the forward pass's y
// and the per-channel moments of y, against moments computed in double from that y (two passes), at 1 and 2
// threads. ConvAlgorithm::backward_data_add: dx plus a tensor, against backward_data and an addition here.
#include <catch2/catch.hpp>
#include <cmath>

#include "backend/cpu/blas.h"
#include "conv/conv_algorithm.h"
#include "core/error.h"
#include "helpers.h"
#include "skip.h"

using namespace dtnn;

namespace {

struct Moments {
  std::vector<double> mean, m2;
};

// Two passes in double over y's N x P x Q values of each channel (NHWC): the mean, then the squared deviations.
Moments exact_moments(const ConvProblem& p, const std::vector<float>& y) {
  const int64_t rows = p.n * p.p() * p.q(), K = p.k;
  Moments m{std::vector<double>(K, 0.0), std::vector<double>(K, 0.0)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k) m.mean[k] += y[r * K + k];
  for (int64_t k = 0; k < K; ++k) m.mean[k] /= static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k) m.m2[k] += (y[r * K + k] - m.mean[k]) * (y[r * K + k] - m.mean[k]);
  return m;
}

// Partial tiles (P, Q not multiples of 2 or 4), a last block of fewer tiles, several blocks per thread, padding
// 0 to 2, K != C, 16 to 64 channels.
const char* const kProblems[] = {
    "n2_c16h7w9_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32",  "n3_c32h10w6_k16r3s3_st1x1_pd0x0_dl1x1_g1_nhwc_f32",
    "n1_c16h5w5_k48r3s3_st1x1_pd2x2_dl1x1_g1_nhwc_f32",  "n4_c16h32w32_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32",
    "n2_c64h8w8_k64r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32",
};

// Why cpu.winograd_x16 does not take these problems, or empty (its kernels run on every CPU dtnn builds for).
std::string x16_absent() {
  const ConvProblem p = ConvProblem::parse(kProblems[0]);
  const Support s = find_conv_algorithm("winograd_x16").supports(p);
  return s.ok() ? "" : "cpu.winograd_x16 does not run here: " + s.why;
}

const ConvAlgorithm* with_moments(const char* name, const ConvProblem& p) {
  const ConvAlgorithm& algo = find_conv_algorithm(name);
  return algo.has_forward_moments(p) ? &algo : nullptr;
}

}  // namespace

// kProblems with a bias of 1000 on half the channels: the mean far from zero next to a standard deviation near 1,
// where moments from unshifted sums (E[y^2] - E[y]^2) lose every digit of the variance in float.
TEST_CASE("conv: forward_moments writes forward's output and the moments of it", "[conv]") {
  if (const std::string why = x16_absent(); !why.empty()) DTNN_SKIP(why);
  Rng rng(5);
  int checked = 0;
  for (const char* text : kProblems) {
    const ConvProblem p = ConvProblem::parse(text);
    for (const char* name : {"winograd_x16", "winograd_x16_f4"}) {
      const ConvAlgorithm* algo = with_moments(name, p);
      REQUIRE(algo);
      INFO(name << " on " << text);
      std::vector<float> x(p.x_numel()), w(p.w_numel()), bias(p.k);
      test::fill_uniform(x, rng), test::fill_uniform(w, rng, -0.3f, 0.3f), test::fill_uniform(bias, rng);
      for (int64_t k = 0; k < p.k; k += 2) bias[k] += 1000.0f;
      std::vector<float> y(p.y_numel()), y_plain(p.y_numel());
      std::vector<double> mean[2], m2[2];
      for (int threads : {1, 2}) {
        cpu::set_threads(threads);
        const test::Workspace ws(algo->workspace_floats(p), std::nanf(""));  // nothing read before it is written
        mean[threads - 1].assign(p.k, -1.0), m2[threads - 1].assign(p.k, -1.0);
        REQUIRE(algo->forward_moments(p, x.data(), w.data(), bias.data(), y.data(), ws.data(),
                                      mean[threads - 1].data(), m2[threads - 1].data()));
        algo->forward(p, x.data(), w.data(), bias.data(), y_plain.data(), ws.data());
        CHECK(y == y_plain);
      }
      cpu::set_threads(1);
      CHECK(mean[0] == mean[1]);  // blocks merged in block order, whatever the threads
      CHECK(m2[0] == m2[1]);
      const Moments exact = exact_moments(p, y);
      const double count = static_cast<double>(p.n * p.p() * p.q());
      for (int64_t k = 0; k < p.k; ++k) {
        const double sd = std::sqrt(exact.m2[k] / count);
        // The float sums of a block (at most 128 values around one of them) round each term by 2^-24 relative.
        CHECK(std::abs(mean[0][k] - exact.mean[k]) <= 1e-6 * sd + 1e-12 * std::abs(exact.mean[k]));
        CHECK(std::abs(m2[0][k] - exact.m2[k]) <= 1e-5 * exact.m2[k]);
      }
      ++checked;
    }
  }
  CHECK(checked == 10);
}

TEST_CASE("conv: algorithms without an output pass for moments compute none", "[conv]") {
  const ConvProblem p = ConvProblem::parse("n2_c16h8w8_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  for (const char* name : {"im2row_gemm", "convgemm", "reference"}) {
    const ConvAlgorithm& algo = find_conv_algorithm(name);
    INFO(name);
    CHECK_FALSE(algo.has_forward_moments(p));
    double mean = -1.0, m2 = -1.0;
    CHECK_FALSE(algo.forward_moments(p, nullptr, nullptr, nullptr, nullptr, nullptr, &mean, &m2));
    CHECK(mean == -1.0);
  }
  // NCHW and stride 2 are outside cpu.winograd_x16's domain: no moments either.
  CHECK_FALSE(find_conv_algorithm("winograd_x16").has_forward_moments(
      ConvProblem::parse("n2_c16h8w8_k16r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32")));
  CHECK_FALSE(find_conv_algorithm("winograd_x16_f4").has_forward_moments(
      ConvProblem::parse("n2_c16h8w8_k16r3s3_st2x2_pd1x1_dl1x1_g1_nhwc_f32")));
}

// The identity path's gradient added where dx is written: bit for bit backward_data() and then dx += add, on
// kProblems, for 64-byte aligned outputs (non-temporal stores) and misaligned ones.
TEST_CASE("conv: backward_data_add gives backward_data's dx plus the tensor, bit for bit", "[conv]") {
  if (const std::string why = x16_absent(); !why.empty()) DTNN_SKIP(why);
  Rng rng(6);
  int checked = 0;
  for (const char* text : kProblems) {
    const ConvProblem p = ConvProblem::parse(text);
    for (const char* name : {"winograd_x16", "winograd_x16_f4"}) {
      const ConvAlgorithm& algo = find_conv_algorithm(name);
      REQUIRE(algo.has_backward_data_add(p));
      std::vector<float> dy(p.y_numel()), w(p.w_numel()), add(p.x_numel());
      test::fill_uniform(dy, rng), test::fill_uniform(w, rng), test::fill_uniform(add, rng);
      for (int offset : {0, 4}) {  // floats past a 64-byte boundary: streamed and ordinary stores
        INFO(name << " on " << text << ", dx " << offset << " floats past 64-byte alignment");
        const test::Workspace ws(algo.workspace_floats(p), std::nanf(""));
        const test::Workspace out(2 * (p.x_numel() + 16));
        float* expected = out.data() + offset;
        float* dx = out.data() + p.x_numel() + 16 + offset;
        algo.backward_data(p, dy.data(), w.data(), expected, ws.data());
        for (int64_t i = 0; i < p.x_numel(); ++i) expected[i] += add[i];
        REQUIRE(algo.backward_data_add(p, dy.data(), w.data(), add.data(), dx, ws.data()));
        CHECK(std::equal(dx, dx + p.x_numel(), expected));
        ++checked;
      }
    }
  }
  CHECK(checked == 20);
  CHECK_FALSE(find_conv_algorithm("im2row_gemm").has_backward_data_add(ConvProblem::parse(kProblems[0])));
}
