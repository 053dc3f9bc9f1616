// Finite-difference gradient checks of every layer in both layouts: the analytic backward against
// central differences of a random linear functional L = sum(g * y), accumulated in double.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "helpers.h"
#include "layers/layers.h"
#include "models/model.h"
#include "train/losses.h"

using namespace dtnn;

namespace {

struct Harness {
  std::unique_ptr<Layer> layer;
  Tensor x, y, g, dx;
  int64_t batch;
};

Layout layout_of(const Shape& sample, Layout layout) { return sample.rank() == 3 ? layout : Layout::flat; }

// Inputs spaced at least `gap` apart (so max-pool winners and ReLU signs cannot flip under +-h).
void fill_distinct(const Tensor& t, Rng& rng, double gap) {
  const int64_t n = t.numel();
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  for (int64_t i = 0; i < n; ++i) t.data()[order[i]] = static_cast<float>((i - n / 2 + 0.5) * gap);
}

Harness make(std::unique_ptr<Layer> layer, const Shape& in_sample, Layout layout, int64_t batch, Rng& rng) {
  Harness h;
  h.batch = batch;
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = batch;
  const Shape out = layer->build(in_sample, ctx);
  std::vector<Layer*> all{layer.get()};
  for (Layer* child : layer->children()) all.push_back(child);
  for (Layer* l : all) {
    for (Param& p : l->params()) {
      p.value = Tensor::zeros(p.shape);
      p.grad = Tensor::zeros(p.shape);
    }
    for (Param& b : l->buffers()) b.value = Tensor::zeros(b.shape);
  }
  layer->init_params(rng);
  for (Layer* l : all)
    for (Param& p : l->params()) test::fill_uniform(p.value, rng, -0.5f, 0.5f);  // biases too
  h.x = Tensor::zeros(in_sample.prepend(batch), layout_of(in_sample, layout));
  h.dx = Tensor::zeros(in_sample.prepend(batch), layout_of(in_sample, layout));
  h.y = Tensor::zeros(out.prepend(batch), layout_of(out, layout));
  h.g = Tensor::zeros(out.prepend(batch), layout_of(out, layout));
  test::fill_uniform(h.x, rng);  // check_layer overwrites it for layers with kinks
  test::fill_uniform(h.g, rng);
  h.layer = std::move(layer);
  return h;
}

double objective(Harness& h) {
  h.layer->forward(h.x, h.y, Mode::train);
  double l = 0.0;
  for (int64_t i = 0; i < h.y.numel(); ++i) l += static_cast<double>(h.g.data()[i]) * h.y.data()[i];
  return l;
}

// Compares analytic and numeric derivatives of up to `samples` entries of `v` (the input or a
// parameter), relative to the largest analytic entry.
void compare(Harness& h, const Tensor& v, const Tensor& analytic, const std::string& what, Rng& rng,
             double tolerance) {
  constexpr double kStep = 1e-2;
  const int64_t n = v.numel();
  double scale = 1e-6;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(static_cast<double>(analytic.data()[i])));
  const int64_t samples = std::min<int64_t>(n, 60);
  double worst = 0.0;
  for (int64_t s = 0; s < samples; ++s) {
    const int64_t i = samples == n ? s : static_cast<int64_t>(rng.below(n));
    const float saved = v.data()[i];
    v.data()[i] = saved + static_cast<float>(kStep);
    const double plus = objective(h);
    v.data()[i] = saved - static_cast<float>(kStep);
    const double minus = objective(h);
    v.data()[i] = saved;
    const double numeric = (plus - minus) / (2 * kStep);
    const double error = std::fabs(numeric - analytic.data()[i]) / scale;
    worst = std::isfinite(error) ? std::max(worst, error) : std::numeric_limits<double>::infinity();
  }
  INFO(h.layer->type() << " " << what << ": worst relative gradient error " << worst);
  CHECK(worst < tolerance);
}

// tolerance: 2e-3 for single layers; chains of curved layers (BN then tanh inside blocks) add O(h^2)
// curvature error to the central difference, so block checks allow 5e-3.
void check_layer(std::unique_ptr<Layer> layer, const Shape& in_sample, Layout layout, bool distinct_inputs,
                 uint64_t seed = 1, double tolerance = 2e-3) {
  Rng rng(seed);
  Harness h = make(std::move(layer), in_sample, layout, 3, rng);
  if (distinct_inputs) fill_distinct(h.x, rng, 0.05);
  objective(h);
  h.layer->backward(h.x, h.y, h.g, h.dx);
  // Parameters of the layer and, for blocks, of every layer inside it.
  std::vector<Param*> params;
  for (Param& p : h.layer->params()) params.push_back(&p);
  for (Layer* child : h.layer->children())
    for (Param& p : child->params()) params.push_back(&p);
  std::vector<Tensor> grads;
  for (Param* p : params) {
    grads.push_back(Tensor::zeros(p->shape));
    grads.back().copy_from(p->grad);
  }
  INFO("layout " << layout_name(layout) << ", input " << in_sample.str());
  compare(h, h.x, h.dx, "dx", rng, tolerance);
  for (size_t k = 0; k < grads.size(); ++k) compare(h, params[k]->value, grads[k], params[k]->name, rng, tolerance);
}

Shape sample(Layout layout, int64_t c, int64_t hh, int64_t ww) {
  return layout == Layout::nhwc ? Shape{hh, ww, c} : Shape{c, hh, ww};
}

}  // namespace

TEST_CASE("gradients: Conv2D (padding, stride, dilation, 1x1, rectangular) in both layouts", "[gradients]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    Conv2DSpec a;
    a.nfilters = 4; a.filter_shape = {3, 3}; a.padding = 1;
    check_layer(make_conv2d(a), sample(layout, 3, 6, 5), layout, false);
    Conv2DSpec b;
    b.nfilters = 3; b.filter_shape = {3, 2}; b.padding = {1, 0}; b.stride = {2, 1}; b.dilation = {1, 2};
    check_layer(make_conv2d(b), sample(layout, 2, 7, 7), layout, false);
    Conv2DSpec c;
    c.nfilters = 5; c.filter_shape = {1, 1};
    check_layer(make_conv2d(c), sample(layout, 4, 3, 4), layout, false);
    Conv2DSpec d;
    d.nfilters = 2; d.filter_shape = {3, 3}; d.stride = 2; d.use_bias = false;
    check_layer(make_conv2d(d), sample(layout, 3, 7, 8), layout, false);
  }
}

TEST_CASE("gradients: MaxPool2D and AveragePool2D (stride, padding, global) in both layouts", "[gradients]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    Pool2DSpec s;
    s.pool_shape = {2, 2}; s.stride = 2;
    check_layer(make_max_pool2d(s), sample(layout, 3, 6, 6), layout, true);
    check_layer(make_max_pool2d(s), sample(layout, 8, 6, 6), layout, true);    // vectorised NHWC 2x2 path
    Pool2DSpec overlap;
    overlap.pool_shape = {2, 2};                                               // 2x2, stride 1, 16 channels
    check_layer(make_max_pool2d(overlap), sample(layout, 16, 4, 5), layout, true);
    check_layer(make_avg_pool2d(s), sample(layout, 3, 6, 6), layout, false);
    Pool2DSpec t;
    t.pool_shape = {3, 3}; t.stride = 1; t.padding = 1;  // overlapping windows, padding not counted
    check_layer(make_max_pool2d(t), sample(layout, 2, 5, 4), layout, true);
    check_layer(make_avg_pool2d(t), sample(layout, 2, 5, 4), layout, false);
    Pool2DSpec global;
    global.pool_shape = {0, 0};
    check_layer(make_avg_pool2d(global), sample(layout, 4, 3, 5), layout, false);
  }
}

TEST_CASE("gradients: activations in both layouts, FC and Softmax", "[gradients]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    check_layer(make_activation("relu"), sample(layout, 3, 4, 5), layout, true);
    check_layer(make_activation("sigmoid"), sample(layout, 3, 4, 5), layout, false);
    check_layer(make_activation("tanh"), sample(layout, 3, 4, 5), layout, false);
  }
  check_layer(make_fc(7), Shape{11}, Layout::nhwc, false);
  check_layer(make_fc(5, false), Shape{6}, Layout::nhwc, false);
  check_layer(make_activation("softmax"), Shape{10}, Layout::nhwc, false);
}

TEST_CASE("gradients: fused softmax + categorical cross entropy from logits", "[gradients][losses]") {
  Rng rng(3);
  const int64_t n = 4, k = 6;
  std::vector<float> z(n * k), y(n * k, 0.0f), dz(n * k);
  test::fill_uniform(z, rng, -3.0f, 3.0f);
  for (int64_t b = 0; b < n; ++b) y[b * k + rng.below(k)] = 1.0f;
  const double global = 8.0;  // as if other ranks held 4 more samples
  const double loss = cce_from_logits(z.data(), y.data(), n, k, global, dz.data());
  CHECK(loss > 0.0);
  for (int64_t i = 0; i < n * k; ++i) {
    const float saved = z[i];
    z[i] = saved + 1e-2f;
    const double plus = cce_from_logits(z.data(), y.data(), n, k, 1.0, nullptr);
    z[i] = saved - 1e-2f;
    const double minus = cce_from_logits(z.data(), y.data(), n, k, 1.0, nullptr);
    z[i] = saved;
    CHECK(dz[i] == Approx((plus - minus) / 2e-2 / global).margin(2e-5));
  }
}

TEST_CASE("dropout: per-element mask, inverted scaling, identity in evaluation", "[layers]") {
  auto layer = make_dropout(0.5);
  BuildContext ctx;
  ctx.max_batch = 64;
  layer->build(Shape{128}, ctx);
  layer->seed(11);
  Tensor x = Tensor::zeros(Shape{64, 128}), y = Tensor::zeros(Shape{64, 128}), dx = Tensor::zeros(Shape{64, 128});
  x.fill(1.0f);
  layer->forward(x, y, Mode::evaluate);
  for (int64_t i = 0; i < y.numel(); ++i) REQUIRE(y.data()[i] == 1.0f);
  layer->forward(x, y, Mode::train);
  int64_t kept = 0, rows_differ = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    REQUIRE((y.data()[i] == 0.0f || y.data()[i] == 2.0f));
    kept += y.data()[i] != 0.0f;
  }
  for (int64_t b = 1; b < 64; ++b)
    for (int64_t j = 0; j < 128; ++j)
      if (y.data()[b * 128 + j] != y.data()[j]) { ++rows_differ; break; }
  CHECK(std::abs(kept - 4096) < 300);  // ~50% kept (4.7 sigma)
  CHECK(rows_differ > 60);             // not one mask shared by the batch (PyDTNN's CPU bug)
  Tensor g = Tensor::zeros(Shape{64, 128});
  g.fill(3.0f);
  layer->backward(x, y, g, dx);
  for (int64_t i = 0; i < dx.numel(); ++i) REQUIRE(dx.data()[i] == (y.data()[i] == 0.0f ? 0.0f : 6.0f));
  CHECK_THROWS_AS(make_dropout(1.0), Error);
}

TEST_CASE("initializers: glorot fans for conv weights agree across layouts", "[layers]") {
  // The same seed gives the same logical (K, C, R, S) weights in NHWC (C, R, S, K) and NCHW (K, C, R, S).
  Conv2DSpec spec;
  spec.nfilters = 3;
  auto a = make_conv2d(spec), b = make_conv2d(spec);
  BuildContext nhwc, nchw;
  nchw.layout = Layout::nchw;
  a->build(Shape{5, 5, 2}, nhwc);
  b->build(Shape{2, 5, 5}, nchw);
  for (auto* l : {a.get(), b.get()})
    for (Param& p : l->params()) p.value = Tensor::zeros(p.shape);
  Rng ra(5), rb(5);
  a->init_params(ra);
  b->init_params(rb);
  const float* wa = a->params()[0].value.data();
  const float* wb = b->params()[0].value.data();
  const double limit = std::sqrt(6.0 / (2 * 9 + 3 * 9));  // glorot: fan_in = C*R*S, fan_out = K*R*S
  for (int k = 0; k < 3; ++k)
    for (int c = 0; c < 2; ++c)
      for (int rs = 0; rs < 9; ++rs) {
        const float va = wa[(c * 9 + rs) * 3 + k], vb = wb[(k * 2 + c) * 9 + rs];
        REQUIRE(va == vb);
        REQUIRE(std::fabs(va) <= limit);
      }
}

namespace {

std::unique_ptr<Layer> conv(int64_t k, int64_t r, int64_t stride = 1, int64_t pad = -1, int64_t groups = 1) {
  Conv2DSpec s;
  s.nfilters = k;
  s.filter_shape = {r, r};
  s.stride = stride;
  s.padding = pad < 0 ? r / 2 : pad;
  s.groups = groups;
  return make_conv2d(s);
}

std::unique_ptr<Layer> conv_nb(int64_t k, int64_t r, int64_t stride = 1, int64_t pad = -1) {
  Conv2DSpec s;
  s.nfilters = k;
  s.filter_shape = {r, r};
  s.stride = stride;
  s.padding = pad < 0 ? r / 2 : pad;
  s.use_bias = false;
  return make_conv2d(s);
}

}  // namespace

TEST_CASE("gradients: BatchNormalization (spatial and flat, train-mode statistics)", "[gradients][batchnorm]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) check_layer(make_batchnorm(), sample(layout, 3, 4, 5), layout, false);
  check_layer(make_batchnorm(), sample(Layout::nhwc, 16, 2, 3), Layout::nhwc, false);
  check_layer(make_batchnorm(), Shape{7}, Layout::nhwc, false);
}

TEST_CASE("gradients: grouped and depthwise Conv2D in both layouts", "[gradients]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    check_layer(conv(4, 3, 1, 1, 2), sample(layout, 6, 5, 5), layout, false);     // 2 groups
    check_layer(conv(4, 3, 2, 1, 0), sample(layout, 4, 6, 7), layout, false);     // depthwise, stride 2
    check_layer(conv(8, 3, 1, 1, 0), sample(layout, 4, 5, 4), layout, false);     // depthwise, multiplier 2
  }
}

TEST_CASE("gradients: AdditionBlock (residual with identity and with projection) in both layouts", "[gradients][blocks]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    std::vector<Path> identity;
    identity.push_back(path(conv_nb(3, 3), make_batchnorm(), make_activation("tanh"), conv_nb(3, 3), make_batchnorm()));
    identity.push_back(Path{});
    check_layer(make_addition_block(std::move(identity)), sample(layout, 3, 5, 4), layout, false, 1, 5e-3);
    std::vector<Path> projection;
    projection.push_back(path(conv_nb(4, 3, 2), make_batchnorm(), make_activation("tanh"), conv(4, 3)));
    projection.push_back(path(conv_nb(4, 1, 2, 0), make_batchnorm()));
    check_layer(make_addition_block(std::move(projection)), sample(layout, 2, 6, 5), layout, false, 1, 5e-3);
    // A path ending in a layer that reads its own output (sigmoid) is summed from its own buffer.
    std::vector<Path> reads_output;
    reads_output.push_back(path(conv(2, 3), make_activation("sigmoid")));
    reads_output.push_back(path(conv(2, 1, 1, 0)));
    check_layer(make_addition_block(std::move(reads_output)), sample(layout, 2, 4, 4), layout, false);
  }
}

TEST_CASE("gradients: ConcatenationBlock (DenseNet and Inception shapes, nested blocks) in both layouts",
          "[gradients][blocks]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    std::vector<Path> dense;
    dense.push_back(path(make_batchnorm(), make_activation("tanh"), conv(2, 3)));
    dense.push_back(Path{});
    check_layer(make_concatenation_block(std::move(dense)), sample(layout, 3, 4, 5), layout, false, 1, 5e-3);
    Pool2DSpec pool;
    pool.pool_shape = {3, 3};
    pool.padding = 1;
    std::vector<Path> inception;
    inception.push_back(path(conv(2, 1, 1, 0)));
    inception.push_back(path(conv(2, 1, 1, 0), conv(3, 3)));
    inception.push_back(path(make_avg_pool2d(pool), conv(1, 1, 1, 0)));
    std::vector<Path> inner;
    inner.push_back(path(conv(3, 1, 1, 0)));
    inner.push_back(Path{});
    inception.push_back(path(make_addition_block(std::move(inner))));
    check_layer(make_concatenation_block(std::move(inception)), sample(layout, 3, 5, 4), layout, false, 1, 5e-3);
  }
}

TEST_CASE("blocks: shapes are checked and children are listed depth-first", "[blocks]") {
  BuildContext ctx;
  ctx.max_batch = 2;
  std::vector<Path> bad;
  bad.push_back(path(conv(4, 3)));
  bad.push_back(path(conv(4, 3, 2)));
  auto add = make_addition_block(std::move(bad));
  CHECK_THROWS_AS(add->build(Shape{6, 6, 3}, ctx), Error);
  std::vector<Path> spatial;
  spatial.push_back(path(conv(4, 3)));
  spatial.push_back(path(conv(4, 3, 2)));
  auto cat = make_concatenation_block(std::move(spatial));
  CHECK_THROWS_AS(cat->build(Shape{6, 6, 3}, ctx), Error);
  CHECK_THROWS_AS(make_addition_block({}), Error);
  std::vector<Path> identities;
  identities.push_back(Path{});
  CHECK_THROWS_AS(make_addition_block(std::move(identities))->build(Shape{2, 2, 1}, ctx), Error);

  std::vector<Path> inner;
  inner.push_back(path(conv_nb(3, 1, 1, 0), make_batchnorm()));
  inner.push_back(Path{});
  std::vector<Path> outer;
  outer.push_back(path(make_addition_block(std::move(inner)), make_activation("relu")));
  outer.push_back(path(conv(2, 3)));
  auto block = make_concatenation_block(std::move(outer));
  const std::vector<Layer*> kids = block->children();
  REQUIRE(kids.size() == 5);
  CHECK(kids[0]->type() == "AdditionBlock");
  CHECK(kids[1]->type() == "Conv2D");
  CHECK(kids[2]->type() == "BatchNormalization");
  CHECK(kids[3]->type() == "Relu");
  CHECK(kids[4]->type() == "Conv2D");
  CHECK(block->build(Shape{4, 4, 3}, ctx) == (Shape{4, 4, 5}));
  CHECK(block->num_params() == 3 * 3 + 2 * 3 + (3 * 9 * 2 + 2));
}

TEST_CASE("max pooling: -inf and NaN give the same results in both layouts (first in-bounds tap starts)", "[gradients]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // One channel, 4x4, 2x2 windows of stride 2 (both layouts hold it in the same order):
  //   all -inf -> -inf;  NaN first -> NaN;  NaN later -> the larger of the others;  ties -> the value.
  const std::vector<float> image = {-inf, -inf, nan, 1.0f,
                                    -inf, -inf, 2.0f, 3.0f,
                                    1.0f, nan,  3.0f, 3.0f,
                                    5.0f, 2.0f, 3.0f, 3.0f};
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    INFO("layout " << layout_name(layout));
    Model m("pool_special");
    m.add(make_input(4, 4, 1));
    Pool2DSpec s;
    s.pool_shape = {2, 2};
    s.stride = 2;
    m.add(make_max_pool2d(s));
    BuildContext ctx;
    ctx.layout = layout;
    ctx.max_batch = 1;
    m.build(ctx, 1);
    std::copy(image.begin(), image.end(), m.input().data());
    m.forward(1, Mode::train);
    const float* y = m.output(1).data();
    CHECK(y[0] == -inf);
    CHECK(std::isnan(y[1]));
    CHECK(y[2] == 5.0f);
    CHECK(y[3] == 3.0f);
  }
}
