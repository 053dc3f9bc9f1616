#include "conv/conv_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "backend/cpu/blas.h"
#include "backend/gpu_ops.h"
#include "core/median.h"
#include "core/rng.h"

namespace dtnn {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Tensor random_tensor(int64_t n, Rng& rng) {
  Tensor t = Tensor::zeros(Shape{std::max<int64_t>(1, n)});
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.uniform_f() - 0.5f;
  return t;
}

ConvTiming summarize(std::vector<double> samples, double flops) {
  ConvTiming t;
  t.median_ms = median(samples);
  t.min_ms = *std::min_element(samples.begin(), samples.end());
  t.max_ms = *std::max_element(samples.begin(), samples.end());
  t.gflops = t.median_ms > 0 ? flops / (t.median_ms * 1e6) : 0.0;
  return t;
}

// Times `call` as in TimingOptions: warm-up calls, then samples of >= min_sample_ms each.
template <typename Call>
std::vector<double> sample_ms(Call&& call, const TimingOptions& opt) {
  for (int i = 0; i < opt.warmup; ++i) call();
  std::vector<double> out;
  for (int s = 0; s < std::max(1, opt.samples); ++s) {
    const auto t0 = Clock::now();
    int calls = 0;
    double elapsed = 0.0;
    do {
      call();
      ++calls;
      elapsed = ms_since(t0);
    } while (elapsed < opt.min_sample_ms);
    out.push_back(elapsed / calls);
  }
  return out;
}

}  // namespace

ConvBench::ConvBench(const ConvProblem& p, uint64_t seed) : p_(p) {
  p_.validate();
  Rng rng(seed);
  x_ = random_tensor(p.x_numel(), rng);
  w_ = random_tensor(p.w_numel(), rng);
  dy_ = random_tensor(p.y_numel(), rng);
  bias_ = random_tensor(p.k, rng);
  y_ = Tensor::zeros(Shape{std::max<int64_t>(1, p.y_numel())});
  dx_ = Tensor::zeros(Shape{std::max<int64_t>(1, p.x_numel())});
  dw_ = Tensor::zeros(Shape{std::max<int64_t>(1, p.w_numel())});
  db_ = Tensor::zeros(Shape{p.k});
}

float* ConvBench::workspace(const ConvAlgorithm& algo) {
  auto it = ws_.find(&algo);
  if (it == ws_.end())
    it = ws_.emplace(&algo, Tensor::zeros(Shape{std::max<int64_t>(1, algo.workspace_floats(p_))}, Layout::flat,
                                          algo.device()))
             .first;
  return it->second.data();
}

void ConvBench::make_device_operands() {
  if (!gx_.empty()) return;
  const auto mirror = [](const Tensor& host) {
    Tensor t = Tensor::zeros(host.shape(), Layout::flat, Device::gpu);
    t.copy_from(host);
    return t;
  };
  gx_ = mirror(x_);
  gw_ = mirror(w_);
  gdy_ = mirror(dy_);
  gbias_ = mirror(bias_);
  gy_ = mirror(y_);
  gdx_ = mirror(dx_);
  gdw_ = mirror(dw_);
  gdb_ = mirror(db_);
}

void ConvBench::run(const ConvAlgorithm& algo, ConvDir dir) {
  float* ws = workspace(algo);
  if (algo.device() == Device::gpu) {
    make_device_operands();
    switch (dir) {
      case ConvDir::fwd: algo.forward(p_, gx_.data(), gw_.data(), with_bias_ ? gbias_.data() : nullptr, gy_.data(), ws); break;
      case ConvDir::bwd_data: algo.backward_data(p_, gdy_.data(), gw_.data(), gdx_.data(), ws); break;
      case ConvDir::bwd_filter: algo.backward_filter(p_, gx_.data(), gdy_.data(), gdw_.data(), gdb_.data(), ws); break;
    }
    return;
  }
  switch (dir) {
    case ConvDir::fwd: algo.forward(p_, x_.data(), w_.data(), with_bias_ ? bias_.data() : nullptr, y_.data(), ws); break;
    case ConvDir::bwd_data: algo.backward_data(p_, dy_.data(), w_.data(), dx_.data(), ws); break;
    case ConvDir::bwd_filter: algo.backward_filter(p_, x_.data(), dy_.data(), dw_.data(), db_.data(), ws); break;
  }
}

ConvTiming ConvBench::time(const ConvAlgorithm& algo, ConvDir dir, const TimingOptions& opt) {
  workspace(algo);  // allocated before the clock starts
  if (algo.device() == Device::cpu) return summarize(sample_ms([&] { run(algo, dir); }, opt), p_.flops(dir));
  // GPU: warm-up calls, one timed call to size the samples, then samples of `calls` queued calls each.
  for (int i = 0; i < std::max(1, opt.warmup); ++i) run(algo, dir);
  gpu::Timer timer;
  timer.start();
  run(algo, dir);
  timer.stop();
  const double once = std::max(1e-3, timer.elapsed_ms());
  const int calls = static_cast<int>(std::clamp(opt.min_sample_ms / once, 1.0, 1000.0));
  std::vector<double> samples;
  for (int s = 0; s < std::max(1, opt.samples); ++s) {
    timer.start();
    for (int c = 0; c < calls; ++c) run(algo, dir);
    timer.stop();
    samples.push_back(timer.elapsed_ms() / calls);
  }
  return summarize(std::move(samples), p_.flops(dir));
}

namespace {

// max |out - ref| / max |ref|; infinite when an output is NaN (left unwritten: outputs are NaN-filled first).
double rel_error(const float* out, const std::vector<float>& ref) {
  double err = 0.0, scale = 1e-30;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(static_cast<double>(out[i]) - ref[i]);
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
  }
  return err / scale;
}

}  // namespace

// One direction's outputs after a run: forward's y (with the bias, or without), bwd_data's dx, bwd_filter's
// dw then db.
std::vector<const Tensor*> ConvBench::outputs(ConvDir dir) const {
  switch (dir) {
    case ConvDir::fwd: return {&y_};
    case ConvDir::bwd_data: return {&dx_};
    case ConvDir::bwd_filter: return {&dw_, &db_};
  }
  return {};
}

void ConvBench::run_checked(const ConvAlgorithm& algo, ConvDir dir) {
  const std::vector<const Tensor*> host = outputs(dir);
  if (algo.device() == Device::gpu) {
    make_device_operands();
    const std::vector<const Tensor*> dev =
        dir == ConvDir::fwd ? std::vector<const Tensor*>{&gy_}
        : dir == ConvDir::bwd_data ? std::vector<const Tensor*>{&gdx_} : std::vector<const Tensor*>{&gdw_, &gdb_};
    for (const Tensor* t : dev) t->fill(std::nanf(""));  // every element must be written
    run(algo, dir);
    for (size_t i = 0; i < host.size(); ++i) host[i]->copy_from(*dev[i]);
  } else {
    for (const Tensor* t : host) t->fill(std::nanf(""));  // else writing nothing would pass with the reference's
    run(algo, dir);
  }
}

const std::vector<std::vector<float>>& ConvBench::reference(ConvDir dir, bool with_bias) {
  const auto key = std::make_pair(dir, with_bias);
  auto it = ref_.find(key);
  if (it != ref_.end()) return it->second;
  with_bias_ = with_bias;
  run_checked(find_conv_algorithm("reference"), dir);
  with_bias_ = true;
  std::vector<std::vector<float>> refs;
  for (const Tensor* t : outputs(dir)) refs.emplace_back(t->data(), t->data() + t->numel());
  return ref_[key] = std::move(refs);
}

double ConvBench::max_rel_error(const ConvAlgorithm& algo, ConvDir dir) {
  // Forward with the bias and without it (a layer with use_bias=false passes none); bwd_filter's weight and
  // bias gradients: an algorithm wrong in any of them is wrong.
  double err = 0.0;
  for (const bool with_bias : dir == ConvDir::fwd ? std::vector<bool>{true, false} : std::vector<bool>{true}) {
    const std::vector<std::vector<float>>& refs = reference(dir, with_bias);
    with_bias_ = with_bias;
    run_checked(algo, dir);
    with_bias_ = true;
    const std::vector<const Tensor*> outs = outputs(dir);
    for (size_t i = 0; i < outs.size(); ++i) err = std::max(err, rel_error(outs[i]->data(), refs[i]));
  }
  return err;
}

std::string ConvCheck::wrong() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "wrong: max rel. error %.1e > tolerance %.1e", error, tolerance);
  return buf;
}

ConvProblem conv_check_problem(const ConvProblem& p) {
  // cpu.reference: 0.5-1.8 GFLOP/s on one core of this project's 2-core VM, so at most ~0.6 s a direction.
  constexpr double kCheckFlops = 3e8;
  double worst = 0.0;
  for (ConvDir d : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) worst = std::max(worst, p.flops(d));
  if (p.n <= 1 || worst <= kCheckFlops) return p;
  const double per_sample = worst / static_cast<double>(p.n);
  return p.with_batch(std::max<int64_t>(1, static_cast<int64_t>(kCheckFlops / per_sample)));
}

ConvCheck ConvBench::check(const ConvAlgorithm& algo, ConvDir dir) {
  const auto key = std::make_pair(&algo, dir);
  if (const auto it = checks_.find(key); it != checks_.end()) return it->second;
  const ConvProblem small = conv_check_problem(p_);
  if (small.n != p_.n && !reduced_) reduced_ = std::make_unique<ConvBench>(small);
  ConvBench& on = reduced_ ? *reduced_ : *this;
  ConvCheck c;
  c.error = on.max_rel_error(algo, dir);
  c.tolerance = conv_tolerance(algo, small, dir);
  return checks_[key] = c;
}

double measure_sgemm_gflops(int64_t n) {
  Rng rng(3);
  const Tensor a = random_tensor(n * n, rng), b = random_tensor(n * n, rng);
  Tensor c = Tensor::zeros(Shape{n * n});
  TimingOptions opt;
  opt.samples = 5;
  opt.min_sample_ms = 50.0;
  const auto samples = sample_ms([&] { cpu::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); }, opt);
  return summarize(samples, 2.0 * n * n * n).gflops;
}

double measure_gpu_sgemm_gflops(int64_t n) {
  Tensor a = Tensor::zeros(Shape{n * n}, Layout::flat, Device::gpu), b = Tensor::zeros(Shape{n * n}, Layout::flat, Device::gpu),
         c = Tensor::zeros(Shape{n * n}, Layout::flat, Device::gpu);
  gpu::fill_uniform(a.data(), n * n, -1.0f, 1.0f, 11);
  gpu::fill_uniform(b.data(), n * n, -1.0f, 1.0f, 12);
  const auto call = [&] { gpu::sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  for (int i = 0; i < 3; ++i) call();
  gpu::Timer timer;
  std::vector<double> samples;
  for (int s = 0; s < 5; ++s) {
    timer.start();
    for (int i = 0; i < 5; ++i) call();
    timer.stop();
    samples.push_back(timer.elapsed_ms() / 5);
  }
  return summarize(std::move(samples), 2.0 * n * n * n).gflops;
}

}  // namespace dtnn
