// BatchNormalization semantics beyond gradients: the running statistics (start values, momentum,
// unbiased variance), inference with them, and layout independence. Expected values are computed here
// in double from the definitions, not by the layer's code.
#include <catch2/catch.hpp>
#include <cmath>

#include "backend/cpu/blas.h"
#include "core/error.h"
#include "helpers.h"
#include "layers/fusable.h"
#include "layers/layers.h"
#include "skip.h"

using namespace dtnn;

namespace {

struct Bn {
  std::unique_ptr<Layer> layer = make_batchnorm();
  explicit Bn(const Shape& sample, Layout layout, int64_t batch) {
    BuildContext ctx;
    ctx.layout = layout;
    ctx.max_batch = batch;
    layer->build(sample, ctx);
    for (Param& p : layer->params()) {
      p.value = Tensor::zeros(p.shape);
      p.grad = Tensor::zeros(p.shape);
    }
    for (Param& b : layer->buffers()) b.value = Tensor::zeros(b.shape);
    Rng rng(1);
    layer->init_params(rng);
  }
  float* gamma() { return layer->params()[0].value.data(); }
  float* beta() { return layer->params()[1].value.data(); }
  float* running_mean() { return layer->buffers()[0].value.data(); }
  float* running_var() { return layer->buffers()[1].value.data(); }
};

}  // namespace

TEST_CASE("batchnorm: running statistics start at 0/1 and follow momentum with the unbiased variance",
          "[batchnorm]") {
  const int64_t n = 5, f = 4;
  Bn bn(Shape{f}, Layout::flat, n);
  for (int64_t c = 0; c < f; ++c) {
    CHECK(bn.running_mean()[c] == 0.0f);
    CHECK(bn.running_var()[c] == 1.0f);
    CHECK(bn.gamma()[c] == 1.0f);
    CHECK(bn.beta()[c] == 0.0f);
  }
  Rng rng(7);
  Tensor x = Tensor::zeros(Shape{n, f}), y = Tensor::zeros(Shape{n, f});
  test::fill_uniform(x, rng, -2.0f, 3.0f);
  for (int64_t c = 0; c < f; ++c) {
    bn.gamma()[c] = 0.5f + c;
    bn.beta()[c] = -1.0f + c;
  }
  bn.layer->forward(x, y, Mode::train);
  std::vector<double> mean(f, 0.0), var(f, 0.0);
  for (int64_t c = 0; c < f; ++c) {
    for (int64_t b = 0; b < n; ++b) mean[c] += x.data()[b * f + c] / double(n);
    for (int64_t b = 0; b < n; ++b) var[c] += std::pow(x.data()[b * f + c] - mean[c], 2) / double(n);
    for (int64_t b = 0; b < n; ++b) {
      const double expect = (x.data()[b * f + c] - mean[c]) / std::sqrt(var[c] + 1e-5) * (0.5 + c) + (-1.0 + c);
      CHECK(y.data()[b * f + c] == Approx(expect).margin(1e-5));
    }
    CHECK(bn.running_mean()[c] == Approx(0.1 * mean[c]).margin(1e-6));
    CHECK(bn.running_var()[c] == Approx(0.9 + 0.1 * var[c] * n / (n - 1)).margin(1e-6));
  }
  // Inference uses the running statistics, not the batch's.
  bn.layer->forward(x, y, Mode::evaluate);
  for (int64_t c = 0; c < f; ++c)
    for (int64_t b = 0; b < n; ++b) {
      const double rm = bn.running_mean()[c], rv = bn.running_var()[c];
      const double expect = (x.data()[b * f + c] - rm) / std::sqrt(rv + 1e-5) * (0.5 + c) + (-1.0 + c);
      CHECK(y.data()[b * f + c] == Approx(expect).margin(1e-5));
    }
}

TEST_CASE("batchnorm: NHWC and NCHW give the same result on the same logical batch", "[batchnorm]") {
  const int64_t n = 3, c = 5, h = 4, w = 6;
  Bn a(Shape{h, w, c}, Layout::nhwc, n), b(Shape{c, h, w}, Layout::nchw, n);
  Rng rng(3);
  Tensor xa = Tensor::zeros(Shape{n, h, w, c}, Layout::nhwc), xb = Tensor::zeros(Shape{n, c, h, w}, Layout::nchw);
  Tensor ya = Tensor::zeros(Shape{n, h, w, c}, Layout::nhwc), yb = Tensor::zeros(Shape{n, c, h, w}, Layout::nchw);
  test::fill_uniform(xa, rng, -1.0f, 4.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < h; ++r)
        for (int64_t s = 0; s < w; ++s)
          xb.data()[((i * c + ch) * h + r) * w + s] = xa.data()[((i * h + r) * w + s) * c + ch];
  a.layer->forward(xa, ya, Mode::train);
  b.layer->forward(xb, yb, Mode::train);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < h; ++r)
        for (int64_t s = 0; s < w; ++s)
          REQUIRE(yb.data()[((i * c + ch) * h + r) * w + s] ==
                  Approx(ya.data()[((i * h + r) * w + s) * c + ch]).margin(1e-5));
  for (int64_t ch = 0; ch < c; ++ch) {
    CHECK(a.running_mean()[ch] == Approx(b.running_mean()[ch]).margin(1e-6));
    CHECK(a.running_var()[ch] == Approx(b.running_var()[ch]).margin(1e-6));
  }
}

TEST_CASE("batchnorm: bad options are errors", "[batchnorm]") {
  BatchNormSpec s;
  s.momentum = 1.5;
  CHECK_THROWS_AS(make_batchnorm(s), Error);
  s.momentum = 0.9;
  s.epsilon = 0.0;
  CHECK_THROWS_AS(make_batchnorm(s), Error);
  BuildContext ctx;
  CHECK_THROWS_AS(make_batchnorm()->build(Shape{2, 3}, ctx), Error);
}

TEST_CASE("batchnorm: threaded passes give bit-identical results at 1 and 2 threads", "[batchnorm]") {
  // 8 x 16 x 32 x 32 = 131072 floats: large enough for the threaded statistics and elementwise passes.
  const int64_t n = 8, c = 16, h = 32, w = 32;
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    const Shape sample = layout == Layout::nhwc ? Shape{h, w, c} : Shape{c, h, w};
    const Shape batch = layout == Layout::nhwc ? Shape{n, h, w, c} : Shape{n, c, h, w};
    Rng rng(5);
    Tensor x = Tensor::zeros(batch, layout), dy = Tensor::zeros(batch, layout);
    test::fill_uniform(x, rng, -1.0f, 3.0f);
    test::fill_uniform(dy, rng);
    std::vector<float> out[2][5];
    for (int threads : {1, 2}) {
      cpu::set_threads(threads);
      Bn bn(sample, layout, n);
      Tensor y = Tensor::zeros(batch, layout), dx = Tensor::zeros(batch, layout);
      bn.layer->forward(x, y, Mode::train);
      bn.layer->backward(x, y, dy, dx);
      auto& o = out[threads - 1];
      o[0].assign(y.data(), y.data() + y.numel());
      o[1].assign(dx.data(), dx.data() + dx.numel());
      o[2].assign(bn.running_mean(), bn.running_mean() + c);
      o[3].assign(bn.running_var(), bn.running_var() + c);
      const Tensor& dgamma = bn.layer->params()[0].grad;
      o[4].assign(dgamma.data(), dgamma.data() + c);
    }
    cpu::set_threads(1);
    for (int i = 0; i < 5; ++i) CHECK(out[0][i] == out[1][i]);
    // The chunked statistics against a double-precision mean of the same batch.
    for (int64_t ch = 0; ch < c; ++ch) {
      double mean = 0.0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < h * w; ++i)
          mean += x.data()[layout == Layout::nhwc ? (b * h * w + i) * c + ch : (b * c + ch) * h * w + i];
      mean /= double(n * h * w);
      CHECK(out[0][2][ch] == Approx(0.1 * mean).margin(1e-6));
    }
  }
}

namespace {

// A built layer with its parameters and buffers in tensors of its own (no Model), initialised from `seed`.
void own_params(Layer& layer, uint64_t seed) {
  for (Param& p : layer.params()) {
    p.value = Tensor::zeros(p.shape);
    p.grad = Tensor::zeros(p.shape);
  }
  for (Param& b : layer.buffers()) b.value = Tensor::zeros(b.shape);
  Rng rng(seed);
  layer.init_params(rng);
}

}  // namespace

// A convolution that computes its output's moments in its output pass (ConvAlgorithm::forward_moments) hands
// them to the normalization after it: the normalization's output, running statistics and gradients must be
// those it computes from its input itself, up to the rounding of two ways of summing (relative 1e-6 measured
// against 1e-5 allowed; a wrong variance is off by far more), and only for the tensor they were computed for.
TEST_CASE("batchnorm: statistics from the convolution's output pass match its own", "[batchnorm]") {
  const int64_t n = 6, h = 10, w = 9, c = 16, k = 32;
  Conv2DSpec spec;
  spec.nfilters = k;
  spec.padding = 1;
  spec.use_bias = true;
  BuildContext ctx;
  ctx.layout = Layout::nhwc;
  ctx.max_batch = n;
  ctx.conv_algo = "winograd_x16_f4";
  auto conv = make_conv2d(spec);
  conv->build(Shape{h, w, c}, ctx);
  if (conv->algorithm_name() != "cpu.winograd_x16_f4")
    DTNN_SKIP("cpu.winograd_x16_f4 does not run here (" + conv->algorithm_note() + ")");
  own_params(*conv, 3);
  for (int64_t i = 0; i < k; i += 3) conv->params()[1].value.data()[i] = 50.0f;  // means far from 0 on some
  std::unique_ptr<Layer> bn[2] = {make_batchnorm(), make_batchnorm()};
  for (auto& b : bn) {
    b->build(Shape{h, w, k}, ctx);
    own_params(*b, 4);
  }
  link_moments(*conv, *bn[1]);  // bn[0] computes its statistics itself
  Rng rng(8);
  Tensor x = Tensor::zeros(Shape{n, h, w, c}), mid = Tensor::zeros(Shape{n, h, w, k});
  Tensor y[2] = {Tensor::zeros(Shape{n, h, w, k}), Tensor::zeros(Shape{n, h, w, k})};
  Tensor dy = Tensor::zeros(Shape{n, h, w, k}), dx[2] = {Tensor::zeros(Shape{n, h, w, k}), Tensor::zeros(Shape{n, h, w, k})};
  test::fill_uniform(x, rng);
  test::fill_uniform(dy, rng);
  for (int step = 0; step < 2; ++step) {
    conv->forward(x, mid, Mode::train);
    bn[1]->forward(mid, y[1], Mode::train);  // with the moments
    bn[0]->forward(mid, y[0], Mode::train);
    for (int i = 0; i < 2; ++i) bn[i]->backward(mid, y[i], dy, dx[i]);
    CHECK(test::max_rel_error(y[1].data(), y[0].data(), y[0].numel()) < 1e-5);
    CHECK(test::max_rel_error(dx[1].data(), dx[0].data(), dx[0].numel()) < 1e-5);
    for (int p = 0; p < 2; ++p) {
      CHECK(test::max_rel_error(bn[1]->params()[p].grad.data(), bn[0]->params()[p].grad.data(), k) < 1e-5);
      CHECK(test::max_rel_error(bn[1]->buffers()[p].value.data(), bn[0]->buffers()[p].value.data(), k) < 1e-5);
    }
  }
  // Moments describe the tensor they were computed for, once: a second pass over another input, or in
  // inference, computes its own (bit for bit bn[0]'s).
  Tensor other = Tensor::zeros(Shape{n, h, w, k});
  test::fill_uniform(other, rng, 2.0f, 4.0f);
  conv->forward(x, mid, Mode::train);
  bn[1]->forward(other, y[1], Mode::train);
  bn[0]->forward(other, y[0], Mode::train);
  CHECK(test::max_rel_error(y[1].data(), y[0].data(), y[0].numel()) == 0.0);
  bn[1]->forward(mid, y[1], Mode::train);  // the moments were for mid, but already invalidated
  bn[0]->forward(mid, y[0], Mode::train);
  CHECK(test::max_rel_error(y[1].data(), y[0].data(), y[0].numel()) == 0.0);
}
