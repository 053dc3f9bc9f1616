// Fused layers against the same model unfused: identical training steps (the fused layer runs the same
// computation) and inference within 1e-5 relative (BatchNormalization folded into the weights rounds
// differently), in both layouts, with fusion inside residual blocks too.
#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.h"
#include "layers/layers.h"
#include "models/model.h"
#include "skip.h"

using namespace dtnn;

namespace {

std::unique_ptr<Layer> conv(int64_t k, bool bias) {
  Conv2DSpec s;
  s.nfilters = k;
  s.padding = 1;
  s.use_bias = bias;
  return make_conv2d(s);
}

// conv-BN-ReLU, conv-ReLU, a residual block of conv-BN-ReLU-conv-BN, BN-ReLU, conv-BN, pool, FC.
std::unique_ptr<Model> make(Layout layout, const FusionOptions& fusion) {
  auto m = std::make_unique<Model>("fusion_test");
  m->add(make_input(8, 7, 3));
  m->add(conv(4, false));
  m->add(make_batchnorm(), "relu");
  m->add(conv(4, true), "relu");
  std::vector<Path> paths;
  paths.push_back(path(conv(4, false), make_batchnorm(), make_activation("relu"), conv(4, true), make_batchnorm()));
  paths.push_back(Path{});
  m->add(make_addition_block(std::move(paths)));
  m->add(make_batchnorm(), "relu");
  m->add(conv(5, true));
  m->add(make_batchnorm());
  Pool2DSpec global;
  global.pool_shape = {0, 0};
  m->add(make_avg_pool2d(global));
  m->add(make_flatten());
  m->add(make_fc(6), "softmax");
  m->fuse(fusion);
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = 4;
  m->build(ctx, 9);
  return m;
}


// One training step of both models on the same random input and output gradient: forward, backward,
// SGD at rate 0.05.
void step_both(Model& plain, Model& fused, Rng& rng, int64_t n, std::vector<float>& grad) {
  test::fill_uniform(plain.input(), rng, -1.0f, 1.0f);
  fused.input().copy_from(plain.input());
  test::fill_uniform(grad, rng, -1.0f, 1.0f);
  for (Model* m : {&plain, &fused}) {
    m->forward(n, Mode::train);
    const size_t top = m->num_layers() - 1;
    std::copy(grad.begin(), grad.end(), m->gradient(top, n).data());
    m->backward(n, top);
    for (int64_t i = 0; i < m->slab_size(); ++i) m->param_slab()[i] -= 0.05f * m->grad_slab()[i];
  }
}

int count_type(const Model& m, const std::string& type) {
  int n = 0;
  for (const Layer* l : m.all_layers()) n += l->type() == type;
  return n;
}

}  // namespace

TEST_CASE("fused layers: same training steps and inference as the unfused model", "[fused]") {
  FusionOptions all;
  all.bn_relu = all.conv_relu = all.conv_bn = all.conv_bn_relu = true;
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    INFO("layout " << layout_name(layout));
    auto plain = make(layout, FusionOptions{});
    auto fused = make(layout, all);
    CHECK(count_type(*fused, "Conv2DBatchNormalizationRelu") == 2);  // one inside the block
    CHECK(count_type(*fused, "Conv2DRelu") == 1);
    CHECK(count_type(*fused, "Conv2DBatchNormalization") == 2);      // one inside the block
    CHECK(count_type(*fused, "BatchNormalizationRelu") == 1);
    REQUIRE(plain->slab_size() == fused->slab_size());
    REQUIRE(plain->state_size() == fused->state_size());
    REQUIRE(test::max_rel_error(plain->param_slab(), fused->param_slab(), plain->slab_size()) == 0.0);

    Rng rng(4);
    const int64_t n = 4, out = 6;
    std::vector<float> grad(n * out);
    for (int step = 0; step < 3; ++step) {  // training runs the same layers in the same order: bit-identical
      step_both(*plain, *fused, rng, n, grad);
      CHECK(test::max_rel_error(fused->output(n).data(), plain->output(n).data(), n * out) == 0.0);
      CHECK(test::max_rel_error(fused->grad_slab(), plain->grad_slab(), plain->slab_size()) == 0.0);
    }
    CHECK(test::max_rel_error(fused->state_slab(), plain->state_slab(), plain->state_size()) == 0.0);
    // Inference with the trained running statistics: folded weights.
    test::fill_uniform(plain->input(), rng, -1.0f, 1.0f);
    fused->input().copy_from(plain->input());
    plain->forward(n, Mode::evaluate);
    fused->forward(n, Mode::evaluate);
    // Compare the logits (before softmax) and the probabilities.
    const size_t logits = plain->num_layers() - 2;
    CHECK(test::max_rel_error(fused->activation(fused->num_layers() - 2, n).data(), plain->activation(logits, n).data(), n * out) <= 1e-5);
    CHECK(test::max_rel_error(fused->output(n).data(), plain->output(n).data(), n * out) <= 1e-5);
  }
}

namespace {

// Residual blocks followed by Relu: an identity shortcut, a projection shortcut that changes the channel
// count, a single-path block, a block whose path holds an inner block + Relu, and one whose path ends
// with an inner block + Relu.
std::unique_ptr<Model> make_residual(Layout layout, bool add_relu) {
  auto m = std::make_unique<Model>("add_relu_test");
  m->add(make_input(6, 5, 3));
  m->add(conv(4, false));
  m->add(make_batchnorm(), "relu");
  std::vector<Path> identity;
  identity.push_back(path(conv(4, false), make_batchnorm(), make_activation("relu"), conv(4, false), make_batchnorm()));
  identity.push_back(Path{});
  m->add(make_addition_block(std::move(identity)), "relu");
  std::vector<Path> projection;
  projection.push_back(path(conv(6, false), make_batchnorm()));
  projection.push_back(path(conv(6, false)));
  m->add(make_addition_block(std::move(projection)), "relu");
  std::vector<Path> single;
  single.push_back(path(conv(6, true)));
  m->add(make_addition_block(std::move(single)), "relu");
  std::vector<Path> inner;
  inner.push_back(path(conv(6, false)));
  inner.push_back(Path{});
  std::vector<Path> outer;
  outer.push_back(path(make_addition_block(std::move(inner)), make_activation("relu"), conv(6, false)));
  outer.push_back(Path{});
  m->add(make_addition_block(std::move(outer)), "relu");
  // An inner block + Relu that END a path beside an identity: they must stay unfused (the fused block
  // would mask in place the dy the identity path still reads).
  std::vector<Path> inner_last;
  inner_last.push_back(path(conv(6, false)));
  inner_last.push_back(Path{});
  std::vector<Path> outer_last;
  outer_last.push_back(path(make_addition_block(std::move(inner_last)), make_activation("relu")));
  outer_last.push_back(Path{});
  m->add(make_addition_block(std::move(outer_last)), "relu");
  m->add(make_flatten());
  m->add(make_fc(5), "softmax");
  FusionOptions fusion;
  fusion.add_relu = add_relu;
  m->fuse(fusion);
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = 3;
  ctx.private_scratch = true;  // the test reads an activation gradient after the whole backward pass
  m->build(ctx, 21);
  return m;
}

}  // namespace

TEST_CASE("fused AdditionBlock + Relu: bit-identical training steps, same layer ids", "[fused]") {
  for (Layout layout : {Layout::nhwc, Layout::nchw}) {
    INFO("layout " << layout_name(layout));
    auto plain = make_residual(layout, false);
    auto fused = make_residual(layout, true);
    CHECK(count_type(*fused, "AdditionBlockRelu") == 6);  // five top-level blocks and one inner block
    CHECK(count_type(*fused, "AdditionBlock") == 1);      // the inner block that ends a path
    CHECK(count_type(*plain, "AdditionBlockRelu") == 0);
    CHECK(fused->num_layers() == plain->num_layers() - 5);
    // Every layer keeps its id (weight-file keys): the same (id, type) for every layer with parameters.
    std::vector<std::pair<int, std::string>> ids_plain, ids_fused;
    for (const Layer* l : plain->all_layers())
      if (l->num_own_params() > 0) ids_plain.emplace_back(l->id, l->type());
    for (const Layer* l : fused->all_layers())
      if (l->num_own_params() > 0) ids_fused.emplace_back(l->id, l->type());
    CHECK(ids_plain == ids_fused);
    REQUIRE(plain->slab_size() == fused->slab_size());
    REQUIRE(test::max_rel_error(plain->param_slab(), fused->param_slab(), plain->slab_size()) == 0.0);

    Rng rng(8);
    const int64_t n = 3, out = 5;
    std::vector<float> grad(n * out);
    for (int step = 0; step < 3; ++step) {
      INFO("step " << step);
      step_both(*plain, *fused, rng, n, grad);
      CHECK(test::max_rel_error(fused->output(n).data(), plain->output(n).data(), n * out) == 0.0);
      CHECK(test::max_rel_error(fused->grad_slab(), plain->grad_slab(), plain->slab_size()) == 0.0);
      // The first block's input gradient (layer 2's output: BN + ReLU before the blocks).
      const Tensor gp = plain->gradient(2, n), gf = fused->gradient(2, n);
      REQUIRE(gp.numel() == gf.numel());
      CHECK(test::max_rel_error(gf.data(), gp.data(), gp.numel()) == 0.0);
    }
  }
}

// A residual block of a convolution and the identity: the convolution adds dy, the identity path's gradient, to dx
// in the pass that writes dx (AddingBackward, ConvAlgorithm::backward_data_add). The block's dx must be, bit for
// bit, a separate convolution's dx (same weights, same algorithm) plus dy added here; its weight gradient the same.
TEST_CASE("AdditionBlock: the identity path's gradient added in the convolution's pass, bit for bit", "[fused]") {
  const int64_t n = 3, h = 9, w = 7, c = 16;
  BuildContext ctx;
  ctx.layout = Layout::nhwc;
  ctx.max_batch = n;
  ctx.conv_algo = "winograd_x16_f4";
  std::vector<Path> paths;
  paths.push_back(path(conv(c, false)));
  paths.push_back(Path{});
  auto block = make_addition_block(std::move(paths));
  auto alone = conv(c, false);
  const Shape sample{h, w, c};
  block->build(sample, ctx);
  alone->build(sample, ctx);
  Layer* inner = block->children()[0];
  if (inner->algorithm_name() != "cpu.winograd_x16_f4")
    DTNN_SKIP("cpu.winograd_x16_f4 does not run here (" + inner->algorithm_note() + ")");
  for (Layer* l : {inner, alone.get()}) {
    for (Param& p : l->params()) {
      p.value = Tensor::zeros(p.shape);
      p.grad = Tensor::zeros(p.shape);
    }
    Rng init(12);
    l->init_params(init);
  }
  Rng rng(13);
  Tensor x = Tensor::zeros(sample.prepend(n)), dy = Tensor::zeros(sample.prepend(n));
  Tensor y = Tensor::zeros(sample.prepend(n)), y_alone = Tensor::zeros(sample.prepend(n));
  Tensor dx = Tensor::zeros(sample.prepend(n)), expected = Tensor::zeros(sample.prepend(n));
  test::fill_uniform(x, rng), test::fill_uniform(dy, rng);
  block->forward(x, y, Mode::train);
  block->backward(x, y, dy, dx);
  alone->forward(x, y_alone, Mode::train);
  alone->backward(x, y_alone, dy, expected);
  for (int64_t i = 0; i < expected.numel(); ++i) expected.data()[i] += dy.data()[i];
  CHECK(std::equal(dx.data(), dx.data() + dx.numel(), expected.data()));
  const Param& g = inner->params()[0];
  CHECK(std::equal(g.grad.data(), g.grad.data() + g.grad.numel(), alone->params()[0].grad.data()));
}
