// Convolution algorithms x problems x directions, registered at run time from suites/shapes/*.txt
// (or the files given with --shapes=a.txt,b.txt), at the thread counts of --threads=1,2 (default 1). Each
// case is named "<algorithm>/<dir>/<problem>/threads:<T>", so the name doubles as a `dtnn conv` reproducer. Algorithms that decline a problem are skipped with
// their reason (SkipWithError), never run. Forward adds a bias and backward_filter sums it, as in training.
// Every case first checks its algorithm's output against cpu.reference (ConvBench::check, on a smaller
// batch where the reference would be slow; once per algorithm, direction and problem): a wrong one is
// skipped with "wrong: max rel. error X > tolerance Y" instead of timed.
//
// --device=gpu: the GPU algorithms of this build (every cuDNN algorithm in the directions it computes, and
// gpu.cudnn_find), manual timing with CUDA events around each iteration (Google Benchmark's UseManualTime),
// FLOP/s counters; --layout=nchw|nhwc overrides the shapes' layout (cuDNN is fastest in NCHW) and
// --allow_tf32=1 switches on TF32 math. Without a CUDA device the GPU cases are skipped with the reason.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/blas_core.h"
#include "backend/cpu/blas.h"
#include "suite_args.h"
#include "backend/gpu.h"
#include "backend/gpu_ops.h"
#include "conv/conv_algorithm.h"
#include "conv/conv_timing.h"
#include "core/rng.h"
#include "tensor/tensor.h"

namespace {

std::vector<std::string> read_shapes(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// The check before timing. One bench per problem for the whole run (cases run one after another), so
// the reference runs once per problem and direction however many algorithms and thread counts follow.
dtnn::ConvCheck check(const dtnn::ConvAlgorithm& algo, dtnn::ConvDir dir, const dtnn::ConvProblem& p) {
  static std::map<std::string, std::unique_ptr<dtnn::ConvBench>> benches;
  std::unique_ptr<dtnn::ConvBench>& bench = benches[p.str()];
  if (!bench) bench = std::make_unique<dtnn::ConvBench>(dtnn::conv_check_problem(p));
  return bench->check(algo, dir);
}

void run_case(benchmark::State& state, const dtnn::ConvAlgorithm* algo, dtnn::ConvDir dir, dtnn::ConvProblem p,
              int threads) {
  // Threads first: supports() may create the algorithm's primitives (oneDNN's), which take their thread
  // count from OpenMP when they are created (on 2 cores a threads:1 case once ran oneDNN on both).
  dtnn::cpu::set_threads(threads);
  const dtnn::Support s = algo->supports(p);
  if (!s.ok()) {
    state.SkipWithError(s.why.c_str());
    return;
  }
  if (const dtnn::ConvCheck c = check(*algo, dir, p); !c.ok()) {
    state.SkipWithError(c.wrong().c_str());
    return;
  }
  dtnn::Tensor x = dtnn::Tensor::zeros(dtnn::Shape{p.x_numel()}), y = dtnn::Tensor::zeros(dtnn::Shape{p.y_numel()});
  dtnn::Tensor w = dtnn::Tensor::zeros(dtnn::Shape{p.w_numel()}), b = dtnn::Tensor::zeros(dtnn::Shape{p.k});
  dtnn::Tensor ws = dtnn::Tensor::zeros(dtnn::Shape{std::max<int64_t>(1, algo->workspace_floats(p))});
  dtnn::Rng rng(1);
  for (dtnn::Tensor* t : {&x, &y, &w})
    for (int64_t i = 0; i < t->numel(); ++i) t->data()[i] = rng.uniform_f() - 0.5f;
  for (auto _ : state) {
    switch (dir) {
      case dtnn::ConvDir::fwd: algo->forward(p, x.data(), w.data(), b.data(), y.data(), ws.data()); break;
      case dtnn::ConvDir::bwd_data: algo->backward_data(p, y.data(), w.data(), x.data(), ws.data()); break;
      case dtnn::ConvDir::bwd_filter:
        algo->backward_filter(p, x.data(), y.data(), w.data(), b.data(), ws.data());
        break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(p.flops(dir), benchmark::Counter::kIsIterationInvariantRate);
}

void run_case_gpu(benchmark::State& state, const dtnn::ConvAlgorithm* algo, dtnn::ConvDir dir, dtnn::ConvProblem p) {
  if (dtnn::gpu_device_count() == 0) {
    state.SkipWithError(("no CUDA device: " + dtnn::gpu_description()).c_str());
    return;
  }
  const dtnn::Support s = algo->supports_dir(p, dir);
  if (!s.ok()) {
    state.SkipWithError(s.why.c_str());
    return;
  }
  if (const dtnn::ConvCheck c = check(*algo, dir, p); !c.ok()) {
    state.SkipWithError(c.wrong().c_str());
    return;
  }
  using dtnn::Tensor;
  const auto dev = [](int64_t n) { return Tensor::zeros(dtnn::Shape{std::max<int64_t>(1, n)}, dtnn::Layout::flat, dtnn::Device::gpu); };
  Tensor x = dev(p.x_numel()), y = dev(p.y_numel()), w = dev(p.w_numel()), b = dev(p.k), ws = dev(algo->workspace_floats(p));
  dtnn::gpu::fill_uniform(x.data(), p.x_numel(), -0.5f, 0.5f, 1);
  dtnn::gpu::fill_uniform(y.data(), p.y_numel(), -0.5f, 0.5f, 2);
  dtnn::gpu::fill_uniform(w.data(), p.w_numel(), -0.5f, 0.5f, 3);
  const auto call = [&] {
    switch (dir) {
      case dtnn::ConvDir::fwd: algo->forward(p, x.data(), w.data(), b.data(), y.data(), ws.data()); break;
      case dtnn::ConvDir::bwd_data: algo->backward_data(p, y.data(), w.data(), x.data(), ws.data()); break;
      case dtnn::ConvDir::bwd_filter: algo->backward_filter(p, x.data(), y.data(), w.data(), b.data(), ws.data()); break;
    }
  };
  call();  // warm-up (and cudnn_find's search)
  dtnn::gpu::Timer timer;
  for (auto _ : state) {
    timer.start();
    call();
    timer.stop();
    state.SetIterationTime(timer.elapsed_ms() / 1e3);
  }
  state.counters["FLOP/s"] = benchmark::Counter(p.flops(dir), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(algo->chosen_for(p, dir));
}


}  // namespace

int run(int argc, char** argv) {
  // Our own flags are taken out of argv before Google Benchmark sees (and rejects) them.
  std::vector<std::string> files;
  std::vector<int> thread_counts;
  bool gpu = false, tf32 = false;
  std::string layout;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--shapes=", 0) == 0) {
      files = dtnn::suites::split_commas(arg.substr(9));
    } else if (arg == "--device=gpu" || arg == "--device=cpu") {
      gpu = arg == "--device=gpu";
    } else if (arg.rfind("--layout=", 0) == 0) {
      layout = arg.substr(9);
    } else if (arg.rfind("--allow_tf32=", 0) == 0) {
      tf32 = dtnn::suites::boolean_flag("--allow_tf32", arg.substr(13));
    } else if (arg.rfind("--threads=", 0) == 0) {
      for (const std::string& t : dtnn::suites::split_commas(arg.substr(10)))
        thread_counts.push_back(static_cast<int>(dtnn::suites::integer_flag("--threads", t, 1, 1024)));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (thread_counts.empty()) thread_counts = {1};
  if (files.empty())
    for (const auto& entry : std::filesystem::directory_iterator(DTNN_SHAPES_DIR))
      if (entry.path().extension() == ".txt") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files)
    if (!std::ifstream(f)) {
      std::cerr << "bench_conv: cannot read shapes file " << f << "\n";
      return 2;
    }
  // Every problem parsed (and the layout applied) before anything is registered: a malformed line names its
  // file, a bad --layout is refused, and each case is named by the problem it times.
  std::vector<dtnn::ConvProblem> problems;
  for (const std::string& f : files)
    for (const std::string& s : read_shapes(f)) {
      try {
        problems.push_back(dtnn::ConvProblem::parse(s));
      } catch (const std::exception& e) {
        throw dtnn::suites::UsageError(f + ": " + e.what());
      }
      if (!layout.empty()) {
        try {
          problems.back().layout = dtnn::parse_layout(layout);
        } catch (const std::exception& e) {
          throw dtnn::suites::UsageError(std::string("--layout: ") + e.what());
        }
      }
    }
  if (gpu && dtnn::gpu_device_count() > 0) {
    dtnn::gpu::init(0);
    dtnn::gpu::set_allow_tf32(tf32);
  }
  // Recorded in the JSON's context, which `dtnn ingest` stores per GPU row (TF32 and float32 times differ).
  benchmark::AddCustomContext("allow_tf32", gpu && tf32 ? "true" : "false");
  for (const dtnn::ConvProblem& p : problems) {
    if (gpu) {
      for (const dtnn::ConvAlgorithm* algo : dtnn::gpu_conv_algorithms())
        for (dtnn::ConvDir dir : {dtnn::ConvDir::fwd, dtnn::ConvDir::bwd_data, dtnn::ConvDir::bwd_filter}) {
          if (algo->supports_dir(p, dir).code == dtnn::SupportCode::no_such_direction) continue;  // another direction's
          const std::string name = std::string(algo->name()) + "/" + dtnn::conv_dir_name(dir) + "/" + p.str();
          benchmark::RegisterBenchmark(name.c_str(), run_case_gpu, algo, dir, p)
              ->UseManualTime()
              ->Unit(benchmark::kMillisecond);
        }
      continue;
    }
    for (const dtnn::ConvAlgorithm* algo : dtnn::conv_algorithms()) {
      if (algo->name() == "cpu.reference") continue;  // the oracle is not a contender
      for (dtnn::ConvDir dir : {dtnn::ConvDir::fwd, dtnn::ConvDir::bwd_data, dtnn::ConvDir::bwd_filter})
        for (int threads : thread_counts) {
          // p.str(), not the shapes file's text: with --layout the case times another layout than the file's.
          const std::string name = std::string(algo->name()) + "/" + dtnn::conv_dir_name(dir) + "/" + p.str() +
                                   "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), run_case, algo, dir, p, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
    }
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
    std::cerr << "bench_conv: " << e.what() << "\n";
    return 2;
  }
}
