// Forward passes and loss values against independent references. The gradient checks
// (test_gradients.cpp) prove backward consistent with forward, not forward right: here pooling, FC and the
// activations are compared with naive double-precision loops written from their definitions, and the
// losses and metrics with values worked out by hand.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "helpers.h"
#include "layers/layers.h"
#include "train/losses.h"

using namespace dtnn;

namespace {

// A single layer built for `batch` samples, its parameters on the host and drawn uniformly in [-1, 1].
struct Built {
  std::unique_ptr<Layer> layer;
  Tensor x, y;
};

Built build(std::unique_ptr<Layer> layer, const Shape& in_sample, Layout layout, int64_t batch, Rng& rng) {
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = batch;
  const Shape out = layer->build(in_sample, ctx);
  for (Param& p : layer->params()) {
    p.value = Tensor::zeros(p.shape);
    p.grad = Tensor::zeros(p.shape);
    test::fill_uniform(p.value, rng);
  }
  const Layout in_layout = in_sample.rank() == 3 ? layout : Layout::flat;
  const Layout out_layout = out.rank() == 3 ? layout : Layout::flat;
  Built b{std::move(layer), Tensor::zeros(in_sample.prepend(batch), in_layout),
          Tensor::zeros(out.prepend(batch), out_layout)};
  test::fill_uniform(b.x, rng, -4.0f, 4.0f);
  return b;
}

// Offset of logical element (n, c, h, w) of an N x C x H x W activation stored in `layout`.
int64_t at(Layout layout, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C, int64_t H, int64_t W) {
  return layout == Layout::nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// Pooling from the definition: output (p, q) looks at taps (p*sh - ph + r*dh, q*sw - pw + s*dw); taps in
// the padding are skipped (never the max, not counted in the average); a window with no tap gives 0.
std::vector<double> pool_reference(bool max, const Tensor& x, Layout layout, int64_t N, int64_t C, int64_t H,
                                   int64_t W, const Pool2DSpec& spec, int64_t* P, int64_t* Q) {
  const int64_t R = spec.pool_shape.v ? spec.pool_shape.v : H, S = spec.pool_shape.h ? spec.pool_shape.h : W;
  const int64_t sh = spec.stride.v, sw = spec.stride.h, ph = spec.padding.v, pw = spec.padding.h;
  const int64_t dh = spec.dilation.v, dw = spec.dilation.h;
  *P = (H + 2 * ph - dh * (R - 1) - 1) / sh + 1;
  *Q = (W + 2 * pw - dw * (S - 1) - 1) / sw + 1;
  std::vector<double> y(static_cast<size_t>(N * C * *P * *Q));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < *P; ++p)
        for (int64_t q = 0; q < *Q; ++q) {
          double best = -INFINITY, sum = 0.0;
          int64_t taps = 0;
          for (int64_t r = 0; r < R; ++r)
            for (int64_t s = 0; s < S; ++s) {
              const int64_t h = p * sh - ph + r * dh, w = q * sw - pw + s * dw;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              const double v = x.data()[at(layout, n, c, h, w, C, H, W)];
              best = std::max(best, v);
              sum += v;
              ++taps;
            }
          y[static_cast<size_t>(at(layout, n, c, p, q, C, *P, *Q))] = taps == 0 ? 0.0 : (max ? best : sum / taps);
        }
  return y;
}

double max_rel_error(const Tensor& got, const std::vector<double>& want) {
  std::vector<float> w(want.begin(), want.end());
  REQUIRE(static_cast<size_t>(got.numel()) == w.size());
  return test::max_rel_error(got.data(), w.data(), got.numel());
}

}  // namespace

TEST_CASE("forward: max and average pooling match the definition (padding, stride, dilation, global)", "[forward]") {
  struct Case {
    const char* name;
    Pool2DSpec spec;
  };
  std::vector<Case> cases(4);
  cases[0].name = "3x3 stride 2 padding 1";
  cases[0].spec.pool_shape = 3, cases[0].spec.stride = 2, cases[0].spec.padding = 1;
  cases[1].name = "2x3 stride (1,2) padding (1,0) dilation (2,1)";
  cases[1].spec.pool_shape = {2, 3}, cases[1].spec.stride = {1, 2}, cases[1].spec.padding = {1, 0};
  cases[1].spec.dilation = {2, 1};
  cases[2].name = "2x2 stride 2";
  cases[2].spec.pool_shape = 2, cases[2].spec.stride = 2;
  cases[3].name = "global";
  cases[3].spec.pool_shape = {0, 0};
  const int64_t N = 2, C = 3, H = 7, W = 6;
  for (const Case& c : cases)
    for (bool max : {true, false})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        INFO(c.name << (max ? " max" : " average") << ", " << layout_name(layout));
        Rng rng(11);
        const Shape sample = layout == Layout::nhwc ? Shape{H, W, C} : Shape{C, H, W};
        Built b = build(max ? make_max_pool2d(c.spec) : make_avg_pool2d(c.spec), sample, layout, N, rng);
        b.layer->forward(b.x, b.y, Mode::train);
        int64_t P = 0, Q = 0;
        const std::vector<double> want = pool_reference(max, b.x, layout, N, C, H, W, c.spec, &P, &Q);
        CHECK(b.y.numel() == N * C * P * Q);
        CHECK(max_rel_error(b.y, want) <= 1e-6);
      }
}

TEST_CASE("forward: FC is x . W + b with W stored (in, out)", "[forward]") {
  for (bool bias : {true, false}) {
    INFO("bias " << bias);
    Rng rng(12);
    const int64_t n = 4, in = 11, out = 7;
    Built b = build(make_fc(out, bias), Shape{in}, Layout::nhwc, n, rng);
    b.layer->forward(b.x, b.y, Mode::train);
    const float* w = b.layer->params()[0].value.data();
    std::vector<double> want(static_cast<size_t>(n * out));
    for (int64_t s = 0; s < n; ++s)
      for (int64_t o = 0; o < out; ++o) {
        double v = bias ? b.layer->params()[1].value.data()[o] : 0.0;
        for (int64_t i = 0; i < in; ++i) v += static_cast<double>(b.x.data()[s * in + i]) * w[i * out + o];
        want[static_cast<size_t>(s * out + o)] = v;
      }
    CHECK(max_rel_error(b.y, want) <= 1e-6);
  }
}

TEST_CASE("forward: relu, sigmoid, tanh and softmax match their definitions", "[forward]") {
  const int64_t n = 4, k = 9;
  for (const char* name : {"relu", "sigmoid", "tanh", "softmax"}) {
    INFO(name);
    Rng rng(13);
    Built b = build(make_activation(name), Shape{k}, Layout::nhwc, n, rng);
    b.layer->forward(b.x, b.y, Mode::train);
    std::vector<double> want(static_cast<size_t>(n * k));
    for (int64_t s = 0; s < n; ++s) {
      const float* x = b.x.data() + s * k;
      double sum = 0.0;
      for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(x[j]));
      for (int64_t j = 0; j < k; ++j) {
        const double v = x[j];
        double& y = want[static_cast<size_t>(s * k + j)];
        if (std::string(name) == "relu") y = v > 0 ? v : 0.0;
        if (std::string(name) == "sigmoid") y = 1.0 / (1.0 + std::exp(-v));
        if (std::string(name) == "tanh") y = std::tanh(v);
        if (std::string(name) == "softmax") y = std::exp(v) / sum;
      }
    }
    CHECK(max_rel_error(b.y, want) <= 1e-6);
  }
}

namespace {

// A batch of two samples over three classes: outputs p, one-hot targets (classes 0 and 1).
const float kP[6] = {0.7f, 0.2f, 0.1f, 0.1f, 0.3f, 0.6f};
const float kY[6] = {1, 0, 0, 0, 1, 0};

}  // namespace

TEST_CASE("losses and metrics: values worked out by hand", "[forward]") {
  using std::log;
  // Sums over the two samples (float inputs: 1e-6 relative).
  const double cce = -(log(0.7) + log(0.3));
  const double bce = -(log(0.7) + log(0.8) + log(0.9)) - (log(0.9) + log(0.3) + log(0.4));
  CHECK(loss_from_output(LossKind::categorical_cross_entropy, kP, kY, 2, 3, 1.0, nullptr) == Approx(cce).epsilon(1e-6));
  CHECK(loss_from_output(LossKind::binary_cross_entropy, kP, kY, 2, 3, 1.0, nullptr) == Approx(bce).epsilon(1e-6));
  // Sample 1 predicts its class 0; sample 2 predicts 2, not its class 1.
  CHECK(metric_sum(MetricKind::categorical_accuracy, kP, kY, 2, 3) == Approx(100.0));
  CHECK(metric_sum(MetricKind::categorical_mse, kP, kY, 2, 3) == Approx(0.3 * 0.3 + 0.7 * 0.7).epsilon(1e-6));
  CHECK(metric_sum(MetricKind::categorical_mae, kP, kY, 2, 3) == Approx(0.3 + 0.7).epsilon(1e-6));
  // max(0, best other - p_t + 1): 0.2 - 0.7 + 1 and 0.6 - 0.3 + 1.
  CHECK(metric_sum(MetricKind::categorical_hinge, kP, kY, 2, 3) == Approx(0.5 + 1.3).epsilon(1e-6));
  CHECK(metric_sum(MetricKind::regression_mse, kP, kY, 2, 3) ==
        Approx((0.09 + 0.04 + 0.01) / 3 + (0.01 + 0.49 + 0.36) / 3).epsilon(1e-6));
  CHECK(metric_sum(MetricKind::regression_mae, kP, kY, 2, 3) ==
        Approx((0.3 + 0.2 + 0.1) / 3 + (0.1 + 0.7 + 0.6) / 3).epsilon(1e-6));

  // Softmax + cross entropy from logits: z = (1, 2, 3) with class 2, z = (0, 0, 0) with class 0.
  const float z[6] = {1, 2, 3, 0, 0, 0};
  const float y[6] = {0, 0, 1, 1, 0, 0};
  const double e = std::exp(1.0), lse1 = 3.0 + log(1.0 + 1.0 / e + 1.0 / (e * e));
  float dz[6];
  CHECK(cce_from_logits(z, y, 2, 3, 4.0, dz) == Approx((lse1 - 3.0) + log(3.0)).epsilon(1e-6));
  // (softmax - y) / global batch (4): sample 2's softmax is 1/3 everywhere.
  CHECK(dz[3] == Approx((1.0 / 3 - 1.0) / 4).epsilon(1e-6));
  CHECK(dz[4] == Approx((1.0 / 3) / 4).epsilon(1e-6));
  CHECK(dz[2] == Approx((std::exp(3.0 - lse1) - 1.0) / 4).epsilon(1e-6));
}

TEST_CASE("losses: loss_from_output's gradient against central differences, clipped outputs get none", "[forward]") {
  for (LossKind kind : {LossKind::categorical_cross_entropy, LossKind::binary_cross_entropy}) {
    INFO(loss_name(kind));
    Rng rng(14);
    const int64_t n = 3, k = 4;
    std::vector<float> p(n * k), y(n * k), dp(n * k);
    test::fill_uniform(p, rng, 0.05f, 0.95f);
    test::fill_uniform(y, rng, 0.0f, 1.0f);  // soft targets
    p[5] = 0.0f;          // clipped to 1e-7: no gradient
    p[6] = 1.0f;          // clipped to 1 - 1e-7: no gradient
    const double global = 8.0;  // gradients are per global batch
    loss_from_output(kind, p.data(), y.data(), n, k, global, dp.data());
    for (int64_t i = 0; i < n * k; ++i) {
      INFO("element " << i);
      if (i == 5 || i == 6) {
        CHECK(dp[i] == 0.0f);
        continue;
      }
      std::vector<float> plus = p, minus = p;
      plus[i] += 1e-3f;
      minus[i] -= 1e-3f;
      const double numeric = (loss_from_output(kind, plus.data(), y.data(), n, k, 1.0, nullptr) -
                              loss_from_output(kind, minus.data(), y.data(), n, k, 1.0, nullptr)) /
                             (static_cast<double>(plus[i]) - minus[i]);
      CHECK(dp[i] * global == Approx(numeric).epsilon(1e-3));
    }
  }
}
