// The GPU backend against the CPU engine (ctest label `gpu`). Every case is skipped out loud (tests/skip.h:
// ctest reports it "Skipped", with the reason on stderr) when this machine has no CUDA device or the build
// has no GPU backend; on a GPU machine they are the backend's correctness checks and pass or fail:
//   - whole models built on both devices from the same seed: forward outputs, every parameter gradient,
//     the activation gradients, BatchNormalization's running statistics, inference, and SGD steps;
//   - every cuDNN algorithm that accepts a problem (both layouts, strides, padding, dilation, groups,
//     depthwise, 1x1, batch 1) against cpu.reference, in every direction it computes;
//   - the optimizer kernels against the CPU optimizers, the loss/metric kernel against train/losses.h;
//   - dropout's mask statistics, a training run whose loss falls, and NCCL's allreduce on one rank;
//   - dtnn's own batch-normalization kernels (synchronised statistics) against cuDNN's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "backend/gpu.h"
#include "backend/gpu_ops.h"
#include "core/clock.h"
#include "conv/conv_algorithm.h"
#include "conv/conv_timing.h"
#include "helpers.h"
#include "skip.h"
#include "layers/layers.h"
#include "models/model.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "train/losses.h"
#include "trace/gpu_trace.h"

using namespace dtnn;

namespace {

// Called first in every case: under ctest, a machine or build without a GPU exits the process here (77).
bool gpu_ready() {
  if (!gpu_built()) {
    test::skip("this dtnn was built without the GPU backend (" + gpu_description() + ")");
    return false;
  }
  if (gpu_device_count() == 0) {
    test::skip("no CUDA device on this machine (" + gpu_description() + ")");
    return false;
  }
  gpu::init(0);
  gpu::set_allow_tf32(false);
  return true;
}

std::vector<float> to_host(const float* device, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  gpu::copy_to_host(v.data(), device, static_cast<size_t>(n) * sizeof(float));
  return v;
}

std::unique_ptr<Layer> conv(int64_t k, Pair filter, Pair stride = 1, Pair pad = 0, Pair dil = 1, int64_t groups = 1,
                            bool bias = true) {
  Conv2DSpec s;
  s.nfilters = k;
  s.filter_shape = filter;
  s.stride = stride;
  s.padding = pad;
  s.dilation = dil;
  s.groups = groups;
  s.use_bias = bias;
  return make_conv2d(s);
}

std::unique_ptr<Layer> pool(bool max, Pair shape, Pair stride, Pair pad = 0, Pair dil = 1) {
  Pool2DSpec s;
  s.pool_shape = shape;
  s.stride = stride;
  s.padding = pad;
  s.dilation = dil;
  return max ? make_max_pool2d(s) : make_avg_pool2d(s);
}

// Small models that between them hold every layer type the GPU runs.
using Builder = std::function<void(Model&)>;
struct ModelCase {
  const char* name;
  Builder add;
  FusionOptions fusion;
};

std::vector<ModelCase> model_cases() {
  std::vector<ModelCase> cases;
  cases.push_back({"conv-relu-maxpool-fc-softmax", [](Model& m) {
                     m.add(make_input(9, 8, 3));
                     m.add(conv(6, 3, 1, 1), "relu");
                     m.add(pool(true, 2, 2));
                     m.add(make_flatten());
                     m.add(make_fc(7), "softmax");
                   }, {}});
  cases.push_back({"strided/dilated conv, avg pool with padding, sigmoid, tanh", [](Model& m) {
                     m.add(make_input(11, 10, 4));
                     m.add(conv(5, 3, 2, 2, 2, 1, false), "sigmoid");
                     m.add(pool(false, 3, 2, 1));
                     m.add(conv(6, {1, 3}, 1, {0, 1}), "tanh");
                     m.add(pool(true, 3, 1, 1));
                     m.add(make_flatten());
                     m.add(make_fc(5, false), "softmax");
                   }, {}});
  // NCHW planes of >= 256 elements take the GPU's plane-wise kernels (dilation 1 and general), smaller
  // ones and NHWC the generic kernels: 24x20 planes exercise both. The pools read the (ReLU'd) input
  // directly, so both devices see the same floats and tied maxima resolve alike; a global pool keeps the
  // FC input small (with the 480 features of a flattened 12x10x4 map, one SGD step at rate 0.1 saturated
  // the softmax, and its ~1e-8 gradients, all cancellation, differed by 10-50 % between two correct
  // implementations: seen on an H100 and reproduced on the CPU against a double-precision softmax).
  cases.push_back({"max and average pooling, dilated, on large planes", [](Model& m) {
                     m.add(make_input(24, 20, 3));
                     m.add(make_activation("relu"));     // exact on both devices; makes the first pool's dx wanted
                     m.add(pool(true, 3, 1, 2, 2));      // 24x20, windows of taps 0, 2, 4
                     m.add(pool(true, 3, 1, 1));         // 24x20, dilation 1
                     m.add(pool(false, {2, 3}, 2, 1, {2, 1}));  // 12x10
                     m.add(pool(false, {0, 0}, 1));     // global: a small FC input keeps the softmax unsaturated
                     m.add(make_flatten());
                     m.add(make_fc(5), "softmax");
                   }, {}});
  cases.push_back({"grouped and depthwise conv, batch normalization", [](Model& m) {
                     m.add(make_input(8, 8, 4));
                     m.add(conv(8, 3, 1, 1, 1, 2));
                     m.add(make_batchnorm(), "relu");
                     m.add(conv(8, 3, 2, 1, 1, 0));
                     m.add(make_batchnorm(), "relu");
                     Pool2DSpec global;
                     global.pool_shape = {0, 0};
                     m.add(make_avg_pool2d(global));
                     m.add(make_flatten());
                     m.add(make_fc(6));
                     m.add(make_batchnorm(), "relu");
                     m.add(make_fc(4), "softmax");
                   }, {}});
  const Builder blocks = [](Model& m) {
    m.add(make_input(8, 8, 3));
    m.add(conv(8, 3, 1, 1, 1, 1, false));
    m.add(make_batchnorm(), "relu");
    std::vector<Path> res;
    res.push_back(path(conv(8, 3, 1, 1, 1, 1, false), make_batchnorm(), make_activation("relu"),
                       conv(8, 3, 1, 1, 1, 1, false), make_batchnorm()));
    res.push_back(Path{});
    m.add(make_addition_block(std::move(res)), "relu");
    std::vector<Path> cat;
    cat.push_back(path(conv(4, 1)));
    cat.push_back(path(conv(3, 3, 1, 1), make_activation("relu")));
    cat.push_back(Path{});
    m.add(make_concatenation_block(std::move(cat)));
    m.add(pool(true, 2, 2));
    m.add(make_flatten());
    m.add(make_fc(5), "softmax");
  };
  cases.push_back({"addition and concatenation blocks", blocks, {}});
  FusionOptions all;
  all.bn_relu = all.conv_relu = all.conv_bn = all.conv_bn_relu = all.add_relu = true;
  cases.push_back({"the same, fused", blocks, all});
  // The fused AdditionBlock + Relu's other branches: a single-path block (its Relu runs as a pass over y),
  // a block + Relu nested inside a path, and one ending a path beside an identity (which stays unfused).
  const Builder residual = [](Model& m) {
    m.add(make_input(6, 5, 3));
    m.add(conv(6, 3, 1, 1), "relu");
    std::vector<Path> single;
    single.push_back(path(conv(6, 3, 1, 1)));
    m.add(make_addition_block(std::move(single)), "relu");
    std::vector<Path> inner;
    inner.push_back(path(conv(6, 3, 1, 1, 1, 1, false)));
    inner.push_back(Path{});
    std::vector<Path> outer;
    outer.push_back(path(make_addition_block(std::move(inner)), make_activation("relu"), conv(6, 1)));
    outer.push_back(Path{});
    m.add(make_addition_block(std::move(outer)), "relu");
    std::vector<Path> inner_last;
    inner_last.push_back(path(conv(6, 1)));
    inner_last.push_back(Path{});
    std::vector<Path> outer_last;
    outer_last.push_back(path(make_addition_block(std::move(inner_last)), make_activation("relu")));
    outer_last.push_back(Path{});
    m.add(make_addition_block(std::move(outer_last)), "relu");
    m.add(make_flatten());
    m.add(make_fc(5), "softmax");
  };
  FusionOptions add_relu;
  add_relu.add_relu = true;
  cases.push_back({"single-path and nested addition blocks + relu, fused", residual, add_relu});
  return cases;
}

std::unique_ptr<Model> build(const ModelCase& c, Layout layout, Device device, int64_t max_batch) {
  auto m = std::make_unique<Model>("gpu_test");
  c.add(*m);
  m->fuse(c.fusion);
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = max_batch;
  ctx.device = device;
  m->build(ctx, 17);
  return m;
}

// One training forward and backward of n samples on both devices, from fresh uniform x and dy (-1..1):
// outputs within 1e-4, parameter gradients within grad_tol (relative).
void train_step_matches(Model& cpu, Model& gpu, int64_t n, Rng& rng, Tensor& x, std::vector<float>& dy,
                        double grad_tol) {
  const size_t top = cpu.num_layers() - 1;
  const int64_t S = cpu.slab_size(), outs = cpu.output_shape().numel();
  test::fill_uniform(x, rng, -1.0f, 1.0f);
  test::fill_uniform(dy, rng, -1.0f, 1.0f);
  std::copy(x.data(), x.data() + x.numel(), cpu.input().data());
  gpu.input().batch(n).copy_from(x);
  cpu.forward(n, Mode::train);
  gpu.forward(n, Mode::train);
  const std::vector<float> y = to_host(gpu.output(n).data(), n * outs);
  CHECK(test::max_rel_error(y.data(), cpu.output(n).data(), n * outs) <= 1e-4);
  std::copy(dy.begin(), dy.end(), cpu.gradient(top, n).data());
  gpu::copy_to_device_sync(gpu.gradient(top, n).data(), dy.data(), dy.size() * sizeof(float));
  cpu.backward(n, top);
  gpu.backward(n, top);
  const std::vector<float> g = to_host(gpu.grad_slab(), S);
  CHECK(test::max_rel_error(g.data(), cpu.grad_slab(), S) <= grad_tol);
}

}  // namespace

TEST_CASE("gpu: models give the CPU's outputs, gradients, statistics and steps", "[gpu]") {
  if (!gpu_ready()) return;
  for (const ModelCase& c : model_cases())
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      INFO(c.name << ", " << layout_name(layout));
      auto cpu = build(c, layout, Device::cpu, 6);
      auto gpu = build(c, layout, Device::gpu, 6);
      REQUIRE(cpu->slab_size() == gpu->slab_size());
      const int64_t S = cpu->slab_size();
      Rng rng(5);
      const int64_t n = 5;  // less than max_batch: views of the first samples
      const size_t top = cpu->num_layers() - 1;
      const int64_t outs = cpu->output_shape().numel();
      Tensor x = Tensor::zeros(cpu->input().shape().with_dim0(n));
      std::vector<float> dy(static_cast<size_t>(n * outs));
      for (int step = 0; step < 3; ++step) {
        INFO("step " << step);
        // Every step starts from identical parameters and state (the CPU's, uploaded after each update):
        // left to drift by float32 rounding, these tiny models amplify it chaotically. On the CPU alone, a
        // 1e-5 relative change of one step's gradients becomes a 5e-2 gradient difference two steps later in
        // the fused residual model (NHWC; ReLU inputs crossing zero), and 4.5e-4 in NCHW. Session 13's H100
        // run failed this case at step 2 with 4e-3 that way, though steps 0-1 were within 1e-4 and 5e-4.
        const double grad_tol = step == 0 ? 1e-4 : 5e-4;
        train_step_matches(*cpu, *gpu, n, rng, x, dy, grad_tol);
        for (size_t i = 1; i < top; ++i) {  // activation gradients between layers
          const Tensor gc = cpu->gradient(i, n);
          if (gc.empty()) continue;
          const std::vector<float> gg = to_host(gpu->gradient(i, n).data(), gc.numel());
          INFO("gradient of layer " << i << " output");
          CHECK(test::max_rel_error(gg.data(), gc.data(), gc.numel()) <= grad_tol);
        }
        // The same SGD step on both; the GPU's update checked, then the CPU's parameters and state uploaded.
        for (int64_t i = 0; i < S; ++i) cpu->param_slab()[i] -= 0.1f * cpu->grad_slab()[i];
        auto opt = make_optimizer(OptimizerOptions{"sgd", 0.1, 0.0}, S, Device::gpu);
        opt->step(gpu->param_slab(), gpu->grad_slab());
        gpu->download();
        CHECK(test::max_rel_error(gpu->host_param_slab(), cpu->param_slab(), S) <= 1e-4);
        if (cpu->state_size() > 0)
          CHECK(test::max_rel_error(gpu->host_state_slab(), cpu->state_slab(), cpu->state_size()) <= 1e-4);
        std::copy(cpu->param_slab(), cpu->param_slab() + S, gpu->host_param_slab());
        if (cpu->state_size() > 0)
          std::copy(cpu->state_slab(), cpu->state_slab() + cpu->state_size(), gpu->host_state_slab());
        gpu->upload();
      }
      // Inference (BatchNormalization from its running statistics).
      test::fill_uniform(x, rng, -1.0f, 1.0f);
      std::copy(x.data(), x.data() + x.numel(), cpu->input().data());
      gpu->input().batch(n).copy_from(x);
      cpu->forward(n, Mode::evaluate);
      gpu->forward(n, Mode::evaluate);
      const std::vector<float> y = to_host(gpu->output(n).data(), n * outs);
      CHECK(test::max_rel_error(y.data(), cpu->output(n).data(), n * outs) <= 1e-4);
    }
}

// A batch of one sample gives the BatchNormalization after the FC layer one value per channel: cuDNN's training
// forward cannot take it (its running variance divides by N - 1), and the layer goes to the own kernels there
// (backend/gpu/batchnorm.cu), which keep the CPU's biased variance: the same outputs, gradients and finite
// running statistics as the CPU.
TEST_CASE("gpu: batch normalization of one value per channel (a batch of one) matches the CPU", "[gpu]") {
  if (!gpu_ready()) return;
  for (const ModelCase& c : model_cases()) {
    if (std::string(c.name) != "grouped and depthwise conv, batch normalization") continue;
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      INFO(layout_name(layout));
      auto cpu = build(c, layout, Device::cpu, 4);
      auto gpu = build(c, layout, Device::gpu, 4);
      const int64_t n = 1;
      Rng rng(9);
      Tensor x = Tensor::zeros(cpu->input().shape().with_dim0(n));
      std::vector<float> dy(static_cast<size_t>(n * cpu->output_shape().numel()));
      train_step_matches(*cpu, *gpu, n, rng, x, dy, 1e-4);
      gpu->download();
      const float* state = gpu->host_state_slab();
      CHECK(std::all_of(state, state + cpu->state_size(), [](float v) { return std::isfinite(v); }));
      CHECK(test::max_rel_error(state, cpu->state_slab(), cpu->state_size()) <= 1e-4);
    }
  }
}

TEST_CASE("gpu: every cuDNN algorithm that accepts a problem matches cpu.reference", "[gpu]") {
  if (!gpu_ready()) return;
  const char* problems[] = {
      "n4_c8h9w9_k16r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32",   "n4_c8h9w9_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32",
      "n2_c16h16w16_k32r3s3_st1x1_pd1x1_dl1x1_g1_nchw_f32", "n1_c3h13w11_k5r5s3_st2x1_pd2x1_dl1x1_g1_nchw_f32",
      "n3_c6h10w10_k6r3s3_st1x1_pd2x2_dl2x2_g1_nhwc_f32",   "n2_c8h7w7_k8r1s1_st1x1_pd0x0_dl1x1_g1_nchw_f32",
      "n2_c8h8w8_k16r3s3_st2x2_pd1x1_dl1x1_g2_nchw_f32",    "n2_c8h8w8_k8r3s3_st1x1_pd1x1_dl1x1_g8_nhwc_f32",
      "n2_c12h6w6_k24r1s1_st2x2_pd0x0_dl1x1_g1_nhwc_f32",   "n1_c1h28w28_k4r3s3_st1x1_pd0x0_dl1x1_g1_nchw_f32",
      "n3_c12h5w7_k20r1s1_st1x1_pd0x0_dl1x1_g1_nhwc_f32",   "n3_c12h5w7_k20r1s1_st1x1_pd0x0_dl1x1_g1_nchw_f32",
  };
  int accepted = 0, declined = 0;
  for (const char* text : problems) {
    const ConvProblem p = ConvProblem::parse(text);
    ConvBench bench(p, 7);
    for (const ConvAlgorithm* a : gpu_conv_algorithms())
      for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
        const Support s = a->supports_dir(p, d);
        INFO(text << " " << a->name() << " " << conv_dir_name(d));
        if (!s.ok()) {
          CHECK(!s.why.empty());
          declined += s.code == SupportCode::declined;
          continue;
        }
        ++accepted;
        CHECK(bench.max_rel_error(*a, d) <= a->tolerance());
      }
    if (p.r == 1 && p.s == 1 && p.stride_h == 1 && p.pad_h == 0 && p.groups == 1)
      CHECK(find_conv_algorithm("gpu.cublas_1x1").supports(p).ok());
    // Whatever the problem, every direction has an algorithm: cudnn_find's.
    for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter})
      CHECK(find_conv_algorithm("gpu.cudnn_find").supports_dir(p, d).ok());
  }
  WARN(accepted << " (problem, algorithm, direction) triples checked, " << declined << " declined by cuDNN");
  CHECK(accepted > 100);
}

TEST_CASE("gpu: optimizer kernels take the CPU optimizers' steps", "[gpu]") {
  if (!gpu_ready()) return;
  const int64_t n = 1000;
  std::vector<OptimizerOptions> cases;
  for (const char* name : {"sgd", "rmsprop", "adam", "nadam"}) {
    OptimizerOptions o;
    o.name = name;
    o.learning_rate = 0.01;
    o.decay = 0.001;
    cases.push_back(o);
  }
  cases[0].nesterov = true;
  cases.push_back(OptimizerOptions{"sgd", 0.05, 0.5});
  for (const OptimizerOptions& o : cases) {
    INFO(o.name << (o.nesterov ? " nesterov" : ""));
    auto cpu = make_optimizer(o, n);
    auto gpu = make_optimizer(o, n, Device::gpu);
    Rng rng(3);
    std::vector<float> w(n), g(n);
    test::fill_uniform(w, rng);
    Tensor dw = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu), dg = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu);
    gpu::copy_to_device_sync(dw.data(), w.data(), n * sizeof(float));
    for (int step = 0; step < 4; ++step) {
      test::fill_uniform(g, rng);
      gpu::copy_to_device_sync(dg.data(), g.data(), n * sizeof(float));
      cpu->step(w.data(), g.data());
      gpu->step(dw.data(), dg.data());
    }
    const std::vector<float> wg = to_host(dw.data(), n);
    CHECK(test::max_rel_error(wg.data(), w.data(), n) <= 1e-6);
    for (size_t i = 0; i < cpu->state().size(); ++i) {
      const Tensor* cs = cpu->state()[i].second;
      const std::vector<float> gs = to_host(gpu->state()[i].second->data(), cs->numel());
      CHECK(test::max_rel_error(gs.data(), cs->data(), cs->numel()) <= 1e-6);
    }
  }
}

TEST_CASE("gpu: losses, gradients and metrics match train/losses.h", "[gpu]") {
  if (!gpu_ready()) return;
  const int64_t n = 37, k = 11;
  Rng rng(9);
  std::vector<float> z(n * k), p(n * k), y(n * k, 0.0f);
  test::fill_uniform(z, rng, -3.0f, 3.0f);
  for (int64_t b = 0; b < n; ++b) {  // p = softmax(z); one-hot y
    float mx = z[b * k], s = 0.0f;
    for (int64_t j = 0; j < k; ++j) mx = std::max(mx, z[b * k + j]);
    for (int64_t j = 0; j < k; ++j) s += (p[b * k + j] = std::exp(z[b * k + j] - mx));
    for (int64_t j = 0; j < k; ++j) p[b * k + j] /= s;
    y[b * k + static_cast<int64_t>(rng.uniform_f() * k) % k] = 1.0f;
  }
  const std::vector<MetricKind> metrics = parse_metrics(
      "categorical_accuracy,categorical_mse,categorical_mae,categorical_hinge,regression_mse,regression_mae");
  std::vector<int> codes;
  for (MetricKind m : metrics) codes.push_back(static_cast<int>(m));
  Tensor dz = Tensor::zeros(Shape{n * k}, Layout::flat, Device::gpu), dp = Tensor::zeros(Shape{n * k}, Layout::flat, Device::gpu),
         dy = Tensor::zeros(Shape{n * k}, Layout::flat, Device::gpu), grad = Tensor::zeros(Shape{n * k}, Layout::flat, Device::gpu),
         out = Tensor::zeros(Shape{8}, Layout::flat, Device::gpu),
         scratch = Tensor::zeros(Shape{n * gpu::kLossScratchPerRow}, Layout::flat, Device::gpu);
  gpu::copy_to_device_sync(dz.data(), z.data(), z.size() * 4);
  gpu::copy_to_device_sync(dp.data(), p.data(), p.size() * 4);
  gpu::copy_to_device_sync(dy.data(), y.data(), y.size() * 4);
  for (bool fused : {true, false})
    for (LossKind loss : {LossKind::categorical_cross_entropy, LossKind::binary_cross_entropy}) {
      if (fused && loss != LossKind::categorical_cross_entropy) continue;
      INFO((fused ? "fused softmax + " : "") << loss_name(loss));
      gpu::loss_and_metrics(static_cast<gpu::LossCode>(loss), fused ? dz.data() : nullptr, dp.data(), dy.data(), n, k,
                            1.0f / 64, grad.data(), codes.data(), static_cast<int>(codes.size()), out.data(), false,
                            scratch.data());
      std::vector<float> ref_grad(n * k);
      const double ref_loss = fused ? cce_from_logits(z.data(), y.data(), n, k, 64.0, ref_grad.data())
                                    : loss_from_output(loss, p.data(), y.data(), n, k, 64.0, ref_grad.data());
      const std::vector<float> sums = to_host(out.data(), 1 + static_cast<int64_t>(codes.size()));
      const std::vector<float> g = to_host(grad.data(), n * k);
      CHECK(sums[0] == Approx(ref_loss).epsilon(1e-5));
      CHECK(test::max_rel_error(g.data(), ref_grad.data(), n * k) <= 1e-5);
      for (size_t m = 0; m < metrics.size(); ++m) {
        INFO(metric_name(metrics[m]));
        CHECK(sums[1 + m] == Approx(metric_sum(metrics[m], p.data(), y.data(), n, k)).epsilon(1e-5).margin(1e-5));
      }
    }
}

TEST_CASE("gpu: dropout keeps 1 - rate of the elements, scaled, and is the identity in evaluation", "[gpu]") {
  if (!gpu_ready()) return;
  const int64_t n = 200000;
  Tensor x = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu), y = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu),
         mask = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu);
  x.fill(2.0f);
  gpu::dropout_forward(x.data(), y.data(), mask.data(), n, 0.7f, 1234, 0);
  const std::vector<float> out = to_host(y.data(), n);
  int64_t kept = 0;
  for (float v : out) {
    REQUIRE((v == 0.0f || std::fabs(v - 2.0f / 0.7f) < 1e-5f));
    kept += v != 0.0f;
  }
  CHECK(std::fabs(static_cast<double>(kept) / n - 0.7) < 0.005);
  gpu::multiply(x.data(), mask.data(), y.data(), n);  // the backward pass: dy * mask
  CHECK(to_host(y.data(), n) == out);
  // Another seed gives another mask; the same seed the same one.
  gpu::dropout_forward(x.data(), y.data(), mask.data(), n, 0.7f, 1235, 0);
  CHECK(to_host(y.data(), n) != out);
  gpu::dropout_forward(x.data(), y.data(), mask.data(), n, 0.7f, 1234, 0);
  CHECK(to_host(y.data(), n) == out);
}

TEST_CASE("gpu: training on a fixed batch drives the loss down", "[gpu]") {
  if (!gpu_ready()) return;
  const std::vector<ModelCase> cases = model_cases();
  const auto it = std::find_if(cases.begin(), cases.end(), [](const ModelCase& mc) {
    return std::string(mc.name) == "addition and concatenation blocks";  // residual and concatenation blocks with BN
  });
  REQUIRE(it != cases.end());
  const ModelCase& c = *it;
  auto m = build(c, Layout::nchw, Device::gpu, 32);
  auto opt = make_optimizer(OptimizerOptions{"adam", 0.003}, m->slab_size(), Device::gpu);
  const int64_t n = 32, k = m->output_shape()[0];
  Rng rng(2);
  Tensor x = Tensor::zeros(m->input().shape());
  test::fill_uniform(x, rng);
  m->input().copy_from(x);
  std::vector<float> y(n * k, 0.0f);
  for (int64_t b = 0; b < n; ++b) y[b * k + b % k] = 1.0f;
  Tensor labels = Tensor::zeros(Shape{n * k}, Layout::flat, Device::gpu), out = Tensor::zeros(Shape{2}, Layout::flat, Device::gpu),
         scratch = Tensor::zeros(Shape{n * gpu::kLossScratchPerRow}, Layout::flat, Device::gpu);
  gpu::copy_to_device_sync(labels.data(), y.data(), y.size() * 4);
  const size_t last = m->num_layers() - 1;  // Softmax: the loss comes from the logits below it
  std::vector<float> losses;
  for (int step = 0; step < 60; ++step) {
    m->forward(n, Mode::train);
    gpu::loss_and_metrics(gpu::LossCode::categorical_cross_entropy, m->activation(last - 1, n).data(),
                          m->output(n).data(), labels.data(), n, k, 1.0f / n, m->gradient(last - 1, n).data(), nullptr, 0,
                          out.data(), false, scratch.data());
    m->backward(n, last - 1);
    opt->step(m->param_slab(), m->grad_slab());
    losses.push_back(to_host(out.data(), 1)[0] / n);
  }
  INFO("loss " << losses.front() << " -> " << losses.back());
  CHECK(std::isfinite(losses.back()));
  CHECK(losses.back() < 0.3 * losses.front());
}

TEST_CASE("gpu: NCCL allreduce on one rank leaves the data as it is", "[gpu]") {
  if (!gpu_ready()) return;
  // One GPU cannot host two NCCL ranks (NCCL refuses a duplicate device), so this checks the bootstrap
  // and the call path; the staged MPI reduction is exercised by the 2-rank tests.
  auto local = make_local_communicator();
  auto nccl = make_nccl_communicator(*local);
  CHECK(nccl->device_library().rfind("NCCL ", 0) == 0);
  const int64_t n = 4096;
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  Tensor d = Tensor::zeros(Shape{n}, Layout::flat, Device::gpu);
  gpu::copy_to_device_sync(d.data(), v.data(), n * 4);
  nccl->allreduce_sum_device(d.data(), n);
  CHECK(to_host(d.data(), n) == v);
}

TEST_CASE("gpu: dtnn's batch-normalization kernels match cuDNN's, synchronised path included", "[gpu]") {
  if (!gpu_ready()) return;
  // One rank: the synchronising reduction is the identity, so the two-pass synchronised path must give
  // the single-rank statistics. Both layouts and a flat (per-feature) input.
  struct Case {
    Layout layout;
    int64_t c, h, w;
  };
  const auto identity = [](void*, float*, int64_t) {};
  for (const Case& k : {Case{Layout::nchw, 6, 9, 7}, Case{Layout::nhwc, 40, 5, 3}, Case{Layout::nchw, 33, 1, 1}})
    for (int mode = 0; mode < 2; ++mode) {
      INFO(layout_name(k.layout) << " c" << k.c << " h" << k.h << " w" << k.w << (mode ? " synchronised" : " own"));
      BatchNormShape s;
      s.layout = k.layout;
      s.c = k.c;
      s.h = k.h;
      s.w = k.w;
      s.max_batch = 5;
      auto ref = gpu::make_batchnorm(s, nullptr, nullptr);
      auto own = gpu::make_batchnorm(s, mode ? +identity : nullptr, nullptr, true);
      const int64_t n = 5, count = n * k.c * k.h * k.w, C = k.c;
      Rng rng(21 + mode);
      std::vector<float> host(count), params(2 * C);
      test::fill_uniform(host, rng, -2.0f, 3.0f);
      test::fill_uniform(params, rng, 0.5f, 1.5f);
      const auto dev = [](int64_t m) { return Tensor::zeros(Shape{m}, Layout::flat, Device::gpu); };
      Tensor x = dev(count), dy = dev(count), gb = dev(2 * C), y1 = dev(count), y2 = dev(count), dx1 = dev(count),
             dx2 = dev(count), st1 = dev(2 * C), st2 = dev(2 * C), g1 = dev(2 * C), g2 = dev(2 * C);
      gpu::copy_to_device_sync(x.data(), host.data(), count * 4);
      test::fill_uniform(host, rng);
      gpu::copy_to_device_sync(dy.data(), host.data(), count * 4);
      gpu::copy_to_device_sync(gb.data(), params.data(), 2 * C * 4);
      std::vector<float> stats(2 * C, 0.0f);
      for (int64_t c = 0; c < C; ++c) stats[C + c] = 1.0f;  // running mean 0, running variance 1
      gpu::copy_to_device_sync(st1.data(), stats.data(), 2 * C * 4);
      gpu::copy_to_device_sync(st2.data(), stats.data(), 2 * C * 4);
      ref->forward_training(n, x.data(), y1.data(), gb.data(), gb.data() + C, st1.data(), st1.data() + C);
      own->forward_training(n, x.data(), y2.data(), gb.data(), gb.data() + C, st2.data(), st2.data() + C);
      CHECK(test::max_rel_error(to_host(y2.data(), count).data(), to_host(y1.data(), count).data(), count) <= 1e-5);
      CHECK(test::max_rel_error(to_host(st2.data(), 2 * C).data(), to_host(st1.data(), 2 * C).data(), 2 * C) <= 1e-5);
      ref->backward(n, x.data(), dy.data(), dx1.data(), gb.data(), g1.data(), g1.data() + C);
      own->backward(n, x.data(), dy.data(), dx2.data(), gb.data(), g2.data(), g2.data() + C);
      CHECK(test::max_rel_error(to_host(dx2.data(), count).data(), to_host(dx1.data(), count).data(), count) <= 1e-4);
      CHECK(test::max_rel_error(to_host(g2.data(), 2 * C).data(), to_host(g1.data(), 2 * C).data(), 2 * C) <= 1e-5);
      ref->forward_inference(n, x.data(), y1.data(), gb.data(), gb.data() + C, st1.data(), st1.data() + C);
      own->forward_inference(n, x.data(), y2.data(), gb.data(), gb.data() + C, st2.data(), st2.data() + C);
      CHECK(test::max_rel_error(to_host(y2.data(), count).data(), to_host(y1.data(), count).data(), count) <= 1e-5);
      own->backward(n, x.data(), dy.data(), nullptr, gb.data(), g2.data(), g2.data() + C);  // no dx wanted
      CHECK(test::max_rel_error(to_host(g2.data(), 2 * C).data(), to_host(g1.data(), 2 * C).data(), 2 * C) <= 1e-5);
    }
}

TEST_CASE("gpu: traced layers are timed by CUDA events, in stream order inside their step", "[gpu]") {
  if (!gpu_ready()) return;
  const std::vector<ModelCase> cases = model_cases();
  const auto it = std::find_if(cases.begin(), cases.end(), [](const ModelCase& mc) {
    return std::string(mc.name) == "addition and concatenation blocks";
  });
  REQUIRE(it != cases.end());
  auto m = build(*it, Layout::nchw, Device::gpu, 32);
  auto opt = make_optimizer(OptimizerOptions{"sgd", 0.01}, m->slab_size(), Device::gpu);
  const int64_t n = 32;
  const size_t last = m->num_layers() - 1;
  Tracer tracer(100000);
  GpuTrace trace(tracer, static_cast<int>(4 * m->num_layers() + 16));
  m->set_gpu_trace(&trace);
  constexpr int kSteps = 7;  // more than GpuTrace::kSlots: slots are reused and resolved late
  gpu::synchronize();
  const double host_before = now_s();
  for (int step = 0; step < kSteps; ++step) {
    tracer.set_step(step);
    trace.begin_step(step);
    m->forward(n, Mode::train);
    m->backward(n, last - 1);  // gradients' values do not matter here, only their kernels' times
    const int u = trace.mark();
    opt->step(m->param_slab(), m->grad_slab());
    trace.span(TraceKind::update, 0, u);
    trace.end_step();
  }
  trace.flush();
  gpu::synchronize();
  const double host_after = now_s();
  m->set_gpu_trace(nullptr);
  REQUIRE(tracer.dropped() == 0);
  std::vector<std::vector<TraceEvent>> per_step(kSteps);
  for (size_t i = 0; i < tracer.size(); ++i) {
    const TraceEvent& e = tracer.events()[i];
    REQUIRE(e.step >= 0);
    REQUIRE(e.step < kSteps);
    per_step[static_cast<size_t>(e.step)].push_back(e);
  }
  constexpr double kSlack = 50e-6;  // the anchor's host reading vs the device clock
  size_t per_step_events = 0;
  for (int s = 0; s < kSteps; ++s) {
    const std::vector<TraceEvent>& ev = per_step[static_cast<size_t>(s)];
    const auto step_it = std::find_if(ev.begin(), ev.end(), [](const TraceEvent& e) { return e.kind == TraceKind::step; });
    REQUIRE(step_it != ev.end());
    const TraceEvent step = *step_it;
    CHECK(step.begin >= host_before - kSlack);
    CHECK(step.end <= host_after + kSlack);
    if (s == 0) per_step_events = ev.size();
    CHECK(ev.size() == per_step_events);  // every step records the same spans
    // The spans are resolved in record order: on one stream each starts after the previous one ended.
    double previous_end = step.begin;
    int forwards = 0, backwards = 0;
    for (const TraceEvent& e : ev) {
      if (e.kind == TraceKind::step) continue;
      CHECK(e.end >= e.begin);
      CHECK(e.begin >= previous_end - 1e-6);
      CHECK(e.end <= step.end + 1e-6);
      previous_end = e.end;
      forwards += e.kind == TraceKind::forward;
      backwards += e.kind == TraceKind::backward;
    }
    CHECK(forwards > 0);
    CHECK(backwards > 0);
  }
  // The steps are device time: together no longer than the host waited for them.
  double device = 0.0;
  for (const auto& ev : per_step)
    for (const TraceEvent& e : ev)
      if (e.kind == TraceKind::step) device += e.end - e.begin;
  CHECK(device <= host_after - host_before + kSlack);
}
