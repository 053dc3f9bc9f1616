// Tests for engine/backend/cpu/batchnorm: the BatchNormOp of cpu::make_batchnorm against a double-precision
// definition of backend/batchnorm.h (training forward with the running statistics' update, inference,
// backward with and without dx), over NCHW, NHWC and flat inputs, small and above the threading threshold;
// and the reduce callback: two ranks holding the same batch normalise like one; and the fused ReLU
// (BatchNormShape::relu) against the op followed by the ReLU's own kernels, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/batchnorm.h"
#include "backend/cpu/elementwise.h"
#include "helpers.h"

namespace dtnn {
namespace {

// Element (b, c, s) of an n x C x S batch in the shape's layout.
int64_t at(const BatchNormShape& s, int64_t b, int64_t c, int64_t i) {
  const int64_t S = s.h * s.w;
  return s.layout == Layout::nchw ? (b * s.c + c) * S + i : (b * S + i) * s.c + c;
}

struct Reference {
  std::vector<double> y, y_inference, dx, dgamma, dbeta, running_mean, running_var;
};

// The definition in double; `ranks` identical copies of the batch make up the global batch.
Reference reference(const BatchNormShape& s, int64_t n, const std::vector<float>& x, const std::vector<float>& dy,
                    const std::vector<float>& gamma, const std::vector<float>& beta, const std::vector<float>& rmean,
                    const std::vector<float>& rvar, int ranks) {
  const int64_t C = s.c, S = s.h * s.w;
  const double m = static_cast<double>(n * S * ranks);
  Reference r{std::vector<double>(x.size()), std::vector<double>(x.size()), std::vector<double>(x.size()),
              std::vector<double>(C), std::vector<double>(C), std::vector<double>(C), std::vector<double>(C)};
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0.0, var = 0.0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < S; ++i) mean += x[at(s, b, c, i)];
    mean /= n * S;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < S; ++i) var += (x[at(s, b, c, i)] - mean) * (x[at(s, b, c, i)] - mean);
    var /= n * S;
    const double sd = std::sqrt(var + s.epsilon), run_sd = std::sqrt(rvar[c] + s.epsilon);
    r.running_mean[c] = s.momentum * rmean[c] + (1 - s.momentum) * mean;
    r.running_var[c] = s.momentum * rvar[c] + (1 - s.momentum) * var * m / (m - 1);
    double sum_dy = 0.0, sum_dy_xn = 0.0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t e = at(s, b, c, i);
        const double xn = (x[e] - mean) / sd;
        r.y[e] = gamma[c] * xn + beta[c];
        r.y_inference[e] = (x[e] - rmean[c]) / run_sd * gamma[c] + beta[c];
        sum_dy += dy[e];
        sum_dy_xn += dy[e] * xn;
      }
    r.dbeta[c] = sum_dy;
    r.dgamma[c] = sum_dy_xn;
    // dx with the global sums (ranks identical copies: each sum times `ranks`).
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t e = at(s, b, c, i);
        const double xn = (x[e] - mean) / sd;
        r.dx[e] = gamma[c] / (sd * m) * (m * dy[e] - xn * sum_dy_xn * ranks - sum_dy * ranks);
      }
  }
  return r;
}

double error(const std::vector<float>& got, const std::vector<double>& want) {
  return test::max_rel_error(got, std::vector<float>(want.begin(), want.end()));
}

// Two ranks that hold the same batch: the sum over ranks doubles every value.
void twice(void* calls, float* values, int64_t count) {
  ++*static_cast<int*>(calls);
  for (int64_t i = 0; i < count; ++i) values[i] *= 2.0f;
}

struct Case {
  const char* name;
  Layout layout;
  int64_t c, h, w, n;
};

const Case kCases[] = {
    {"NCHW", Layout::nchw, 5, 6, 4, 7},
    {"NHWC", Layout::nhwc, 5, 6, 4, 7},
    {"flat", Layout::flat, 9, 1, 1, 13},
    {"NHWC above the threading threshold", Layout::nhwc, 24, 16, 16, 9},
    {"NCHW above the threading threshold", Layout::nchw, 24, 16, 16, 9},
};

// The op's shape for a case: its layout and sizes, room for its batch.
BatchNormShape shape_of(const Case& k, double momentum) {
  BatchNormShape s;
  s.layout = k.layout;
  s.c = k.c; s.h = k.h; s.w = k.w;
  s.max_batch = k.n;
  s.momentum = momentum;
  return s;
}

TEST_CASE("cpu::make_batchnorm matches the double-precision definition", "[backend][batchnorm]") {
  const Case k = GENERATE(from_range(std::begin(kCases), std::end(kCases)));
  const bool sync = GENERATE(false, true);
  const bool with_dx = GENERATE(true, false);
  INFO(k.name << (sync ? ", synchronised over 2 ranks" : "") << (with_dx ? "" : ", no dx"));
  const BatchNormShape s = shape_of(k, 0.8);
  const int64_t numel = k.n * k.c * k.h * k.w;
  Rng rng(23);
  std::vector<float> x(numel), dy(numel), gamma(k.c), beta(k.c), rmean(k.c), rvar(k.c);
  test::fill_uniform(x, rng, -1.0f, 3.0f);
  test::fill_uniform(dy, rng);
  test::fill_uniform(gamma, rng, 0.5f, 1.5f);
  test::fill_uniform(beta, rng);
  test::fill_uniform(rmean, rng);
  test::fill_uniform(rvar, rng, 0.5f, 2.0f);
  const Reference ref = reference(s, k.n, x, dy, gamma, beta, rmean, rvar, sync ? 2 : 1);

  int calls = 0;
  auto op = cpu::make_batchnorm(s, sync ? &twice : nullptr, &calls);
  std::vector<float> y(numel), dx(numel, -7.0f), dgamma(k.c), dbeta(k.c), yi(numel);
  op->forward_inference(k.n, x.data(), yi.data(), gamma.data(), beta.data(), rmean.data(), rvar.data());
  CHECK(error(yi, ref.y_inference) <= 1e-5);
  op->forward_training(k.n, x.data(), y.data(), gamma.data(), beta.data(), rmean.data(), rvar.data());
  op->backward(k.n, x.data(), dy.data(), with_dx ? dx.data() : nullptr, gamma.data(), dgamma.data(), dbeta.data());
  CHECK(error(y, ref.y) <= 1e-5);
  CHECK(error(rmean, ref.running_mean) <= 1e-6);
  CHECK(error(rvar, ref.running_var) <= 1e-6);
  CHECK(error(dgamma, ref.dgamma) <= 1e-5);  // this rank's sums, never reduced
  CHECK(error(dbeta, ref.dbeta) <= 1e-5);
  if (with_dx) CHECK(error(dx, ref.dx) <= 1e-5);
  // Two forward passes reduce once each; the backward reduces only when it computes dx.
  CHECK(calls == (sync ? 2 + (with_dx ? 1 : 0) : 0));
}

// What a synchronised layer hands its reduce callback, call by call (backend/batchnorm.h's wire format: a GPU
// rank beside CPU ranks sums these floats with its own, so the layout is a contract, not a detail).
struct Recorded {
  std::vector<std::vector<float>> calls;
};
void record(void* into, float* values, int64_t count) {
  static_cast<Recorded*>(into)->calls.emplace_back(values, values + count);
}

TEST_CASE("cpu::make_batchnorm reduces in the wire format every backend shares", "[backend][batchnorm]") {
  const Case k = GENERATE(from_range(std::begin(kCases), std::end(kCases)));
  INFO(k.name);
  const BatchNormShape s = shape_of(k, 0.9);
  const int64_t C = k.c, S = k.h * k.w, numel = k.n * C * S;
  Rng rng(29);
  std::vector<float> x(numel), dy(numel), gamma(C), beta(C), rmean(C, 0.0f), rvar(C, 1.0f);
  test::fill_uniform(x, rng, -1.0f, 3.0f);
  test::fill_uniform(dy, rng);
  test::fill_uniform(gamma, rng, 0.5f, 1.5f);
  test::fill_uniform(beta, rng);
  // The expected sums, in double from the definition (one rank: the callback returns its input).
  std::vector<double> sum_x(C, 0.0), sum_dev2(C, 0.0), sum_dy(C, 0.0), sum_dy_dev(C, 0.0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t b = 0; b < k.n; ++b)
      for (int64_t i = 0; i < S; ++i) sum_x[c] += x[at(s, b, c, i)];
    const double mean = sum_x[c] / static_cast<double>(k.n * S);
    for (int64_t b = 0; b < k.n; ++b)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t e = at(s, b, c, i);
        sum_dev2[c] += (x[e] - mean) * (x[e] - mean);
        sum_dy[c] += dy[e];
        sum_dy_dev[c] += dy[e] * (x[e] - mean);
      }
  }
  Recorded rec;
  auto op = cpu::make_batchnorm(s, &record, &rec);
  std::vector<float> y(numel), dx(numel), dgamma(C), dbeta(C);
  op->forward_training(k.n, x.data(), y.data(), gamma.data(), beta.data(), rmean.data(), rvar.data());
  op->backward(k.n, x.data(), dy.data(), dx.data(), gamma.data(), dgamma.data(), dbeta.data());
  REQUIRE(rec.calls.size() == 3);
  const std::vector<float>& first = rec.calls[0];
  const std::vector<float>& second = rec.calls[1];
  const std::vector<float>& back = rec.calls[2];
  REQUIRE(first.size() == static_cast<size_t>(2 * C + 1));
  REQUIRE(second.size() == static_cast<size_t>(2 * C));
  REQUIRE(back.size() == static_cast<size_t>(2 * C));
  // Relative to the channel's scale of values: sums near 0 (dy's, deviations' products) have no own scale.
  const auto near = [](float got, double want, double scale) { return std::abs(got - want) <= 1e-5 * scale; };
  for (int64_t c = 0; c < C; ++c) {
    INFO("channel " << c);
    const double m = static_cast<double>(k.n * S);
    CHECK(near(first[c], sum_x[c], m * 3.0));
    CHECK(first[C + c] == 0.0f);
    CHECK(second[c] == 0.0f);
    CHECK(near(second[C + c], sum_dev2[c], sum_dev2[c]));
    CHECK(near(back[c], sum_dy[c], m));
    CHECK(near(back[C + c], sum_dy_dev[c], m * 3.0));  // before the factor 1/std
  }
  CHECK(first[2 * C] == static_cast<float>(k.n * S));
}

TEST_CASE("cpu::make_batchnorm: statistics of values far from zero match the double definition",
          "[backend][batchnorm]") {
  // 1e4 + U(-1, 1): E[x^2] - E[x]^2 would cancel 8 digits (var 1/3 against 1e8); the one-pass NHWC statistics
  // (blocks' own means merged in double) and the two-pass ones must both stay exact to float precision.
  const Case k = GENERATE(Case{"NHWC, groups of 16 and a tail", Layout::nhwc, 35, 9, 8, 5},
                          Case{"NCHW", Layout::nchw, 5, 16, 16, 6}, Case{"flat", Layout::flat, 9, 1, 1, 300});
  const bool sync = GENERATE(false, true);
  INFO(k.name << (sync ? ", synchronised over 2 ranks" : ""));
  const BatchNormShape s = shape_of(k, 0.5);
  const int64_t numel = k.n * k.c * k.h * k.w;
  Rng rng(31);
  std::vector<float> x(numel), dy(numel), gamma(k.c, 1.0f), beta(k.c, 0.0f), rmean(k.c, 0.0f), rvar(k.c, 1.0f);
  test::fill_uniform(x, rng, -1.0f, 1.0f);
  for (float& v : x) v += 1.0e4f;
  test::fill_uniform(dy, rng);
  const Reference ref = reference(s, k.n, x, dy, gamma, beta, rmean, rvar, sync ? 2 : 1);
  int calls = 0;
  auto op = cpu::make_batchnorm(s, sync ? &twice : nullptr, &calls);
  std::vector<float> y(numel), dx(numel), dgamma(k.c), dbeta(k.c);
  op->forward_training(k.n, x.data(), y.data(), gamma.data(), beta.data(), rmean.data(), rvar.data());
  op->backward(k.n, x.data(), dy.data(), dx.data(), gamma.data(), dgamma.data(), dbeta.data());
  CHECK(error(rmean, ref.running_mean) <= 1e-6);
  CHECK(error(rvar, ref.running_var) <= 1e-5);  // var about 1/3: a cancelled E[x^2] - E[x]^2 is off by units
  // The backward's x - mean is float arithmetic, and the float mean of values near 1e4 is off by up to half an ulp
  // (5e-4) from the double definition's: dgamma carries that, about 1e-3 here, in every layout.
  CHECK(error(dgamma, ref.dgamma) <= 5e-3);
  CHECK(error(dbeta, ref.dbeta) <= 1e-5);
}

// The same floats, NaN included: memcmp.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("cpu::make_batchnorm with relu is the op and then the ReLU's kernels, bit for bit", "[backend][batchnorm]") {
  const Case k = GENERATE(from_range(std::begin(kCases), std::end(kCases)),
                          Case{"NHWC, two groups of 16 lanes and a tail", Layout::nhwc, 35, 5, 4, 6});
  const bool sync = GENERATE(false, true);
  INFO(k.name << (sync ? ", synchronised over 2 ranks" : ""));
  BatchNormShape s = shape_of(k, 0.9);  // s.relu set per op below
  const int64_t numel = k.n * k.c * k.h * k.w;
  Rng rng(29);
  std::vector<float> x(numel), dy(numel), gamma(k.c), beta(k.c), rmean(k.c, 0.0f), rvar(k.c, 1.0f);
  test::fill_uniform(x, rng, -1.0f, 3.0f);
  test::fill_uniform(dy, rng);
  test::fill_uniform(gamma, rng, -1.5f, 1.5f);  // negative scales flip which side the ReLU keeps
  test::fill_uniform(beta, rng);
  gamma[1] = beta[1] = 0.0f;  // channel 1 normalises to exactly 0 (or -0): the ReLU's edge, masked
  x[at(s, k.n - 1, 2, 0)] = std::numeric_limits<float>::quiet_NaN();  // channel 2 is NaN throughout
  int calls[2] = {0, 0};
  std::vector<float> y[2], yi[2], dx[2], dgamma[2], dbeta[2], rm[2] = {rmean, rmean}, rv[2] = {rvar, rvar};
  for (int fused = 0; fused < 2; ++fused) {
    s.relu = fused == 1;
    auto op = cpu::make_batchnorm(s, sync ? &twice : nullptr, &calls[fused]);
    y[fused].assign(numel, 0.0f);
    yi[fused].assign(numel, 0.0f);
    dx[fused].assign(numel, -7.0f);
    dgamma[fused].assign(k.c, 0.0f);
    dbeta[fused].assign(k.c, 0.0f);
    op->forward_inference(k.n, x.data(), yi[fused].data(), gamma.data(), beta.data(), rm[fused].data(), rv[fused].data());
    op->forward_training(k.n, x.data(), y[fused].data(), gamma.data(), beta.data(), rm[fused].data(), rv[fused].data());
    std::vector<float> g = dy;
    if (!fused) {  // the separate layer: y = max(0, y); the gradient masked by y > 0
      cpu::relu_forward(yi[0].data(), yi[0].data(), numel);
      cpu::relu_forward(y[0].data(), y[0].data(), numel);
      cpu::relu_backward(y[0].data(), dy.data(), g.data(), numel);
    }
    op->backward(k.n, x.data(), g.data(), dx[fused].data(), gamma.data(), dgamma[fused].data(), dbeta[fused].data());
  }
  CHECK(same_bits(yi[1], yi[0]));
  CHECK(same_bits(y[1], y[0]));
  CHECK(same_bits(rm[1], rm[0]));
  CHECK(same_bits(rv[1], rv[0]));
  CHECK(same_bits(dx[1], dx[0]));
  CHECK(same_bits(dgamma[1], dgamma[0]));
  CHECK(same_bits(dbeta[1], dbeta[0]));
  CHECK(calls[1] == calls[0]);
  int64_t zeros = 0, passed = 0;  // the ReLU did something: clamped values and gradients that went through
  for (int64_t i = 0; i < numel; ++i) {
    zeros += y[1][i] == 0.0f;
    passed += dx[1][i] != 0.0f && !std::isnan(dx[1][i]);
  }
  CHECK(zeros > numel / 10);
  CHECK(passed > numel / 2);
}

TEST_CASE("cpu::make_batchnorm with a residual is the op and then add_relu_into, bit for bit", "[backend][batchnorm]") {
  const Case k = GENERATE(from_range(std::begin(kCases), std::end(kCases)),
                          Case{"NHWC, two groups of 16 lanes and a tail", Layout::nhwc, 35, 5, 4, 6});
  const bool sync = GENERATE(false, true);
  INFO(k.name << (sync ? ", synchronised over 2 ranks" : ""));
  const BatchNormShape s = shape_of(k, 0.9);
  const int64_t numel = k.n * k.c * k.h * k.w;
  Rng rng(31);
  std::vector<float> x(numel), r(numel), gamma(k.c), beta(k.c), rmean(k.c, 0.0f), rvar(k.c, 1.0f);
  test::fill_uniform(x, rng, -1.0f, 3.0f);
  test::fill_uniform(r, rng, -2.0f, 2.0f);
  test::fill_uniform(gamma, rng, -1.5f, 1.5f);
  test::fill_uniform(beta, rng);
  x[at(s, k.n - 1, 2, 0)] = std::numeric_limits<float>::quiet_NaN();  // channel 2 is NaN throughout
  r[at(s, 0, 0, 0)] = std::numeric_limits<float>::quiet_NaN();        // and one residual value
  int calls[2] = {0, 0};
  std::vector<float> y[2], rm[2] = {rmean, rmean}, rv[2] = {rvar, rvar};
  for (int fused = 0; fused < 2; ++fused) {
    auto op = cpu::make_batchnorm(s, sync ? &twice : nullptr, &calls[fused]);
    REQUIRE(op->has_residual_relu());
    y[fused].assign(numel, -7.0f);
    if (fused) {
      REQUIRE(op->forward_training_residual_relu(k.n, x.data(), r.data(), y[1].data(), gamma.data(), beta.data(),
                                                 rm[1].data(), rv[1].data()));
    } else {
      op->forward_training(k.n, x.data(), y[0].data(), gamma.data(), beta.data(), rm[0].data(), rv[0].data());
      cpu::add_relu_into(y[0].data(), r.data(), numel);
    }
  }
  CHECK(same_bits(y[1], y[0]));
  CHECK(same_bits(rm[1], rm[0]));
  CHECK(same_bits(rv[1], rv[0]));
  CHECK(calls[1] == calls[0]);
  int64_t zeros = 0;
  for (float v : y[1]) zeros += v == 0.0f;
  CHECK(zeros > numel / 10);  // the ReLU clamped
  CHECK(zeros < numel);
  // An op with its own ReLU cannot: relu(normalised) + r is another function.
  BatchNormShape with_relu = s;
  with_relu.relu = true;
  auto relu_op = cpu::make_batchnorm(with_relu, nullptr, nullptr);
  CHECK_FALSE(relu_op->has_residual_relu());
  CHECK_FALSE(relu_op->forward_training_residual_relu(k.n, x.data(), r.data(), y[1].data(), gamma.data(),
                                                      beta.data(), rm[1].data(), rv[1].data()));
}

}  // namespace
}  // namespace dtnn
