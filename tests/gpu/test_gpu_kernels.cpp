// The GPU backend's kernels one at a time against the CPU engine (ctest label `gpu`; skipped out loud without
// a CUDA device or GPU backend, tests/skip.h):
//   - the optimizer kernels against the CPU optimizers, the loss/metric kernel against train/losses.h;
//   - dropout's mask statistics and NCCL's allreduce on one rank;
//   - dtnn's own batch-normalization kernels (synchronised statistics) against cuDNN's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/batchnorm.h"
#include "backend/gpu.h"
#include "backend/gpu_ops.h"
#include "gpu/gpu_ready.h"
#include "helpers.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "train/losses.h"

using namespace dtnn;
using dtnn::test::gpu_ready;
using dtnn::test::to_host;

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

