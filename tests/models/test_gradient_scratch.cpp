// The shared gradient scratch (layers/gradient_scratch.h) and workspace against private gradient buffers and
// workspaces (BuildContext::private_scratch): the same model built both ways from the same seed must train
// bit-identically (outputs, every parameter gradient, the updated parameters), in chains, addition and
// concatenation blocks (identity paths first and last, a block nested in a block's path), fused layers and
// dropout, at the largest batch and a shorter one. A layer
// that reads its dx before writing it, or leaves part of it unwritten, sees zeros in a private buffer and
// another layer's stale gradient in the scratch, and fails here; so does a convolution algorithm that keeps
// something in its workspace from forward to backward (another layer's call overwrites a shared one).
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/gpu_ops.h"
#include "conv/conv_algorithm.h"
#include "conv/conv_problem.h"
#include "conv/cpu/cpu_algorithms.h"
#include "gpu/gpu_ready.h"
#include "helpers.h"
#include "layers/layers.h"
#include "models/model.h"
#include "optim/optimizer.h"
#include "skip.h"

using namespace dtnn;

namespace {

// Concatenations with the identity path first (its slice is copied into dx) and last (added to it), one
// of them holding an addition block in a path (level-2 scratch), and pooling, whose backward scatters.
Pool2DSpec pool2() {
  Pool2DSpec p;
  p.pool_shape = {2, 2};
  p.stride = {2, 2};
  return p;
}

std::unique_ptr<Model> nested_blocks() {
  auto m = std::make_unique<Model>("nested_blocks");
  m->add(make_input(8, 8, 3));
  Conv2DSpec c;
  c.nfilters = 4;
  c.filter_shape = {3, 3};
  c.padding = {1, 1};
  m->add(make_conv2d(c), "relu");
  std::vector<Path> first;
  first.push_back(Path{});
  Conv2DSpec c2 = c;
  c2.nfilters = 3;
  first.push_back(path(make_conv2d(c2), make_activation("relu"), make_conv2d(c2)));
  m->add(make_concatenation_block(std::move(first)));  // 7 channels
  std::vector<Path> inner;
  Conv2DSpec c3 = c;
  c3.nfilters = 7;
  inner.push_back(path(make_conv2d(c3), make_batchnorm()));
  inner.push_back(Path{});
  std::vector<Path> second;
  second.push_back(path(make_addition_block(std::move(inner)), make_activation("relu"), make_max_pool2d(pool2())));
  second.push_back(path(make_max_pool2d(pool2())));
  m->add(make_concatenation_block(std::move(second)));  // 14 channels of 4x4
  m->add(make_flatten());
  m->add(make_fc(5), "softmax");
  return m;
}

std::unique_ptr<Model> make(const std::string& name, const FusionOptions& fusion) {
  auto m = name == "nested_blocks" ? nested_blocks() : create_model(name);
  m->fuse(fusion);
  return m;
}

void build(Model& m, int64_t max_batch, bool private_scratch, Device device = Device::cpu,
           Layout layout = Layout::nhwc) {
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = max_batch;
  ctx.private_scratch = private_scratch;
  ctx.device = device;
  m.build(ctx, 5);
}

std::vector<float> host(const float* data, int64_t n, Device device) {
  if (device == Device::gpu) return test::to_host(data, n);
  return std::vector<float>(data, data + n);
}

void write(float* dst, const std::vector<float>& src, Device device) {
  if (device == Device::gpu)
    gpu::copy_to_device_sync(dst, src.data(), src.size() * sizeof(float));
  else
    std::copy(src.begin(), src.end(), dst);
}

// Three SGD steps on both models, from the same random inputs and output gradients, n samples each:
// outputs, gradients and parameters within `tol` (relative) after each. On the GPU (where cuDNN may pick
// algorithms that sum in a varying order) each step starts from the private model's parameters and state.
void train_alike(Model& priv, Model& shared, int64_t n, double tol = 0.0) {
  const Device device = priv.device();
  const size_t top = priv.num_layers() - 1;
  const int64_t in = priv.input_shape().numel() * n, out = priv.output_shape().numel() * n;
  const int64_t S = priv.slab_size();
  auto opt_p = make_optimizer(OptimizerOptions{"sgd", 0.05, 0.9}, S, device);
  auto opt_s = make_optimizer(OptimizerOptions{"sgd", 0.05, 0.9}, S, device);
  Rng rng(77);
  std::vector<float> x(static_cast<size_t>(in)), dy(static_cast<size_t>(out));
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step << ", " << n << " samples");
    test::fill_uniform(x, rng);
    test::fill_uniform(dy, rng);
    if (device == Device::gpu) {
      priv.download();
      std::copy(priv.host_param_slab(), priv.host_param_slab() + S, shared.host_param_slab());
      std::copy(priv.host_state_slab(), priv.host_state_slab() + priv.state_size(), shared.host_state_slab());
      shared.upload();
    }
    for (Model* m : {&priv, &shared}) {
      write(m->input().data(), x, device);
      m->seed_layers(11 + static_cast<uint64_t>(step), 0);
      m->forward(n, Mode::train);
      write(m->gradient(top, n).data(), dy, device);
      m->backward(n, top);
    }
    REQUIRE(test::max_rel_error(host(shared.output(n).data(), out, device), host(priv.output(n).data(), out, device)) <= tol);
    REQUIRE(test::max_rel_error(host(shared.grad_slab(), S, device), host(priv.grad_slab(), S, device)) <= tol);
    opt_p->step(priv.param_slab(), priv.grad_slab());
    opt_s->step(shared.param_slab(), shared.grad_slab());
    REQUIRE(test::max_rel_error(host(shared.param_slab(), S, device), host(priv.param_slab(), S, device)) <= tol);
  }
}

}  // namespace

TEST_CASE("gradient scratch: training is bit-identical to private gradient buffers", "[models][scratch]") {
  FusionOptions none, fused;
  fused.conv_bn_relu = fused.conv_bn = fused.bn_relu = fused.add_relu = true;
  const std::vector<std::pair<std::string, FusionOptions>> cases = {
      {"nested_blocks", none},      {"resnet20_cifar10", none}, {"resnet20_cifar10", fused},
      {"densenet_cifar10", none},   {"vgg3do", none},           {"mobilenetv1_cifar10", fused},
      {"simplecnn", none}};
  for (const auto& [name, fusion] : cases) {
    INFO(name << (fusion.any() ? " (fused)" : ""));
    auto priv = make(name, fusion);
    auto shared = make(name, fusion);
    build(*priv, 3, true);
    build(*shared, 3, false);
    REQUIRE(test::max_rel_error(shared->param_slab(), priv->param_slab(), priv->slab_size()) == 0.0);
    train_alike(*priv, *shared, 3);
    train_alike(*priv, *shared, 2);  // a short batch: views of the first samples
  }
  // NCHW: the concatenations cut channel slices per sample (copy_channels' other branch).
  for (const auto& [name, fusion] : {cases[0], cases[2], cases[3]}) {
    INFO(name << " (NCHW)");
    auto priv = make(name, fusion);
    auto shared = make(name, fusion);
    build(*priv, 3, true, Device::cpu, Layout::nchw);
    build(*shared, 3, false, Device::cpu, Layout::nchw);
    train_alike(*priv, *shared, 3);
    train_alike(*priv, *shared, 2);
  }
}

TEST_CASE("gradient scratch: a chain's gradients take two buffers in turn", "[models][scratch]") {
  // vgg3do: conv-relu pairs run in place, so boundaries alternate between two addresses (and the ones a
  // layer reads and writes differ unless it runs in place); private buffers give every boundary its own.
  for (bool private_scratch : {false, true}) {
    INFO((private_scratch ? "private" : "shared"));
    auto m = make("vgg3do", FusionOptions{});
    build(*m, 2, private_scratch);
    std::set<const float*> addresses;
    size_t boundaries = 0;
    for (size_t i = 1; i < m->num_layers(); ++i) {
      const Tensor g = m->gradient(i, 2);
      if (g.empty()) continue;
      ++boundaries;
      addresses.insert(g.data());
      const Tensor below = m->gradient(i - 1, 2);
      if (!below.empty() && !m->layer(i).can_run_in_place() && !m->layer(i).is_reshape())
        CHECK(below.data() != g.data());  // a layer never reads and writes the same buffer unless in place
    }
    CHECK(boundaries > 6);
    if (private_scratch)
      CHECK(addresses.size() > 2);
    else
      CHECK(addresses.size() == 2);
  }
}

TEST_CASE("gradient scratch on the GPU: training matches private gradient buffers", "[gpu][scratch]") {
  if (!test::gpu_ready()) return;
  // Both layouts (NCHW is the GPU's default: other concatenation copies and pooling kernels), and every
  // fusion (the fused layers' own level of slots).
  FusionOptions add_relu, all;
  add_relu.add_relu = true;
  all.conv_bn_relu = all.conv_bn = all.bn_relu = all.add_relu = true;
  const std::vector<std::pair<std::string, FusionOptions>> cases = {
      {"nested_blocks", add_relu}, {"resnet20_cifar10", add_relu}, {"resnet20_cifar10", all},
      {"densenet_cifar10", add_relu}};
  for (Layout layout : {Layout::nhwc, Layout::nchw})
    for (const auto& [name, fusion] : cases) {
      INFO(name << (fusion.conv_bn ? " (all fusions), " : ", ") << (layout == Layout::nhwc ? "NHWC" : "NCHW"));
      auto priv = make(name, fusion);
      auto shared = make(name, fusion);
      build(*priv, 3, true, Device::gpu, layout);
      build(*shared, 3, false, Device::gpu, layout);
      CHECK(shared->memory().gradients < priv->memory().gradients);  // the scratch is shared, not per boundary
      train_alike(*priv, *shared, 3, 1e-5);
      train_alike(*priv, *shared, 2, 1e-5);
    }
}

TEST_CASE("workspace: a smaller batch whose convolution needs more workspace gets it", "[models][scratch]") {
  // oneDNN chooses its implementation per batch size: on 2 threads this layer's scratchpad is larger at
  // batch 2 than at batch 3 (39,008 and 30,752 floats on a Zen 5), and writing past the 3-sample
  // workspace corrupted the heap. Wherever the sizes fall, the workspace must hold what each batch needs.
  if (onednn_version() == "not built") return test::skip("this dtnn was built without oneDNN");
  const int threads = cpu::threads();
  cpu::set_threads(2);
  auto m = std::make_unique<Model>("workspace_growth");
  m->add(make_input(32, 32, 32));
  Conv2DSpec c;
  c.nfilters = 32;
  c.padding = {1, 1};
  m->add(make_conv2d(c), "relu");
  m->add(make_flatten());
  m->add(make_fc(4), "softmax");
  BuildContext ctx;
  ctx.max_batch = 3;
  ctx.conv_algo = "onednn";
  m->build(ctx, 1);
  const ConvAlgorithm& onednn = find_conv_algorithm("onednn");
  const ConvProblem p = ConvProblem::parse("n3_c32h32w32_k32r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32");
  CHECK(m->workspace_floats() >= onednn.workspace_floats(p));
  for (int64_t n : {3, 2, 1, 3}) {
    INFO(n << " samples");
    m->forward(n, Mode::train);
    m->backward(n, m->num_layers() - 1);
    CHECK(m->workspace_floats() >= onednn.workspace_floats(p.with_batch(n)));
  }
  cpu::set_threads(threads);
}
