// Every layer of real models, forward and backward, at the model's shapes: where a training step's time
// goes, layer by layer, as Google Benchmark cases (so `dtnn ingest`-style tooling, --benchmark_filter and
// Google Benchmark's compare.py work on them).
//
//   bench_layers [--models=resnet20_cifar10,simplecnn] [--batch=64] [--threads=1,2] [--conv_algo=auto]
//                [--fuse=add_relu,bn_relu] [Google Benchmark flags]
//
// --fuse: the layer fusions applied before build (layers.h FusionOptions: bn_relu, conv_relu, conv_bn,
// conv_bn_relu, add_relu; "none" for none); the default is what `dtnn train` fuses by default, so the cases
// time the layers a training step runs. A fused layer's case carries the fused type (2_BatchNormalizationRelu).
// --fuse given more than once times each set (case names then end in /fuse:<list>): with
// --benchmark_enable_random_interleaving=true the sets' repetitions alternate, so a noisy machine's drift
// falls on both.
//
// Cases are named "<model>/<layer id>_<type>/<fwd|bwd>/batch:<B>/threads:<T>" (top-level layers; a block
// is one case with its whole paths). Each model is built once per thread count (CPU, NHWC, random input,
// one forward pass in training mode so that backward has its state), then each case calls one layer's
// forward or backward on the model's own buffers. Counters (shown scaled, e.g. 81.2G/s): FLOP/s for layers
// with arithmetic (backward counted as twice the forward FLOPs), bytes/s (input + output) for the others.
#include <benchmark/benchmark.h>

#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/blas_core.h"
#include "backend/cpu/blas.h"
#include "suite_args.h"
#include "conv/conv_algorithm.h"
#include "core/rng.h"
#include "layers/layers.h"
#include "models/model.h"

namespace {


struct Built {
  std::unique_ptr<dtnn::Model> model;
  int64_t batch = 0;
};

// --fuse's list as FusionOptions; an unknown name is a UsageError.
dtnn::FusionOptions parse_fusion(const std::string& list) {
  dtnn::FusionOptions f;
  for (const std::string& name : dtnn::suites::split_commas(list)) {
    if (name == "none") continue;
    bool* flag = name == "bn_relu"        ? &f.bn_relu
                 : name == "conv_relu"    ? &f.conv_relu
                 : name == "conv_bn"      ? &f.conv_bn
                 : name == "conv_bn_relu" ? &f.conv_bn_relu
                 : name == "add_relu"     ? &f.add_relu
                                          : nullptr;
    if (!flag)
      throw dtnn::suites::UsageError("--fuse: unknown fusion '" + name +
                                     "' (known: bn_relu, conv_relu, conv_bn, conv_bn_relu, add_relu, none)");
    *flag = true;
  }
  return f;
}

// One model per (name, threads, batch, algo, fusion), built on first use and kept for all its cases.
Built& model_for(const std::string& name, int threads, int64_t batch, const std::string& algo,
                 const std::string& fuse) {
  static std::map<std::string, Built> cache;
  const std::string key =
      name + "/" + std::to_string(threads) + "/" + std::to_string(batch) + "/" + algo + "/" + fuse;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  dtnn::cpu::set_threads(threads);
  Built b;
  b.model = dtnn::create_model(name);
  b.model->fuse(parse_fusion(fuse));
  dtnn::BuildContext ctx;
  ctx.layout = dtnn::Layout::nhwc;
  ctx.max_batch = batch;
  ctx.conv_algo = algo;
  b.model->build(ctx, 1);
  b.batch = batch;
  dtnn::Rng rng(3);
  const dtnn::Tensor& in = b.model->input();
  for (int64_t i = 0; i < in.numel(); ++i) in.data()[i] = rng.uniform_f() - 0.5f;
  b.model->forward(batch, dtnn::Mode::train);
  for (size_t i = 1; i < b.model->num_layers(); ++i) {  // every output gradient: random
    const dtnn::Tensor g = b.model->gradient(i, batch);
    for (int64_t j = 0; j < g.numel(); ++j) g.data()[j] = rng.uniform_f() - 0.5f;
  }
  return cache.emplace(key, std::move(b)).first->second;
}

void run_layer(benchmark::State& state, std::string name, size_t index, bool backward, int threads, int64_t batch,
               std::string algo, std::string fuse) {
  Built& b = model_for(name, threads, batch, algo, fuse);
  dtnn::cpu::set_threads(threads);
  dtnn::Model& m = *b.model;
  dtnn::Layer& layer = m.layer(index);
  const dtnn::Tensor x = m.activation(index - 1, batch), y = m.activation(index, batch);
  const dtnn::Tensor dy = m.gradient(index, batch), dx = m.gradient(index - 1, batch);
  for (auto _ : state) {
    if (backward)
      layer.backward(x, y, dy, dx);
    else
      layer.forward(x, y, dtnn::Mode::train);
    benchmark::ClobberMemory();
  }
  // Backward computes the weight gradient and, except for the model's first layer (no input gradient: dx is
  // empty and the layer skips it), the input gradient: about one forward's FLOPs each.
  const double backward_passes = dx.empty() ? 1.0 : 2.0;
  const double flops = layer.forward_flops() * static_cast<double>(batch) * (backward ? backward_passes : 1.0);
  if (flops > 0) {
    state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  } else {
    const double bytes = 4.0 * static_cast<double>(x.numel() + y.numel()) * (backward ? backward_passes : 1.0);
    state.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  }
  state.SetLabel(layer.algorithm_name());
}

// One case per layer (but reshapes), direction and thread count of one model under one fusion set.
void register_cases(const std::string& name, const std::string& fuse, bool name_fusion,
                    const std::vector<int>& thread_counts, int64_t batch, const std::string& algo) {
  // The layer list from a 1-sample build (cheap): ids, types and which layers compute.
  auto probe = dtnn::create_model(name);
  probe->fuse(parse_fusion(fuse));
  dtnn::BuildContext ctx;
  ctx.max_batch = 1;
  ctx.conv_algo = "reference";  // no best_of timing for a probe
  probe->build(ctx, 1);
  for (size_t i = 1; i < probe->num_layers(); ++i) {
    const dtnn::Layer& l = probe->layer(i);
    if (l.is_reshape()) continue;
    // A closing Softmax's backward never runs in training: the trainer fuses it into categorical cross-entropy
    // (the default loss, train/losses.h), so its case would only add to a sum of the cases.
    const bool fused_softmax = l.type() == "Softmax" && i + 1 == probe->num_layers();
    for (bool backward : {false, true})
      for (int threads : thread_counts) {
        if (backward && fused_softmax) continue;
        const std::string case_name = name + "/" + std::to_string(l.id) + "_" + l.type() + "/" +
                                      (backward ? "bwd" : "fwd") + "/batch:" + std::to_string(batch) +
                                      "/threads:" + std::to_string(threads) + (name_fusion ? "/fuse:" + fuse : "");
        benchmark::RegisterBenchmark(case_name.c_str(), run_layer, name, i, backward, threads, batch, algo, fuse)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
  }
}

}  // namespace

int run(int argc, char** argv) {
  std::vector<std::string> models = {"simplecnn", "resnet20_cifar10"};
  std::vector<int> thread_counts = {1};
  int64_t batch = 64;
  std::string algo = "auto";
  std::vector<std::string> fusions;  // default: dtnn train's (--enable_fused_add_relu, --enable_fused_bn_relu)
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--models=", 0) == 0) {
      models = dtnn::suites::split_commas(arg.substr(9));
    } else if (arg.rfind("--threads=", 0) == 0) {
      thread_counts.clear();
      for (const std::string& t : dtnn::suites::split_commas(arg.substr(10)))
        thread_counts.push_back(static_cast<int>(dtnn::suites::integer_flag("--threads", t, 1, 1024)));
      if (thread_counts.empty()) throw dtnn::suites::UsageError("--threads: expected a comma-separated list, got ''");
    } else if (arg.rfind("--batch=", 0) == 0) {
      batch = dtnn::suites::integer_flag("--batch", arg.substr(8), 1, 1 << 20);
    } else if (arg.rfind("--conv_algo=", 0) == 0) {
      algo = arg.substr(12);
    } else if (arg.rfind("--fuse=", 0) == 0) {
      fusions.push_back(arg.substr(7));
      parse_fusion(fusions.back());
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (fusions.empty()) fusions.push_back("add_relu,bn_relu");
  try {
    // A misspelt algorithm is refused here, not inside the first case's model build (an abort mid-JSON).
    if (algo != "auto" && algo != "best_of") algo = dtnn::canonical_conv_algorithm_name(algo);
    for (const std::string& name : models)
      for (const std::string& fuse : fusions) register_cases(name, fuse, fusions.size() > 1, thread_counts, batch, algo);
  } catch (const std::exception& e) {
    std::cerr << "bench_layers: " << e.what() << "\n";
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

int main(int argc, char** argv) {
  dtnn::cpu::ensure_blas_core(argv);  // OpenBLAS's right kernels where its CPU detection fails
  try {
    return run(argc, argv);
  } catch (const dtnn::suites::UsageError& e) {
    std::cerr << "bench_layers: " << e.what() << "\n";
    return 2;
  }
}
