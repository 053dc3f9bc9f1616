// Convolution algorithms x problems x directions, registered at run time from suites/shapes/*.txt
// (or the files given with --shapes=a.txt,b.txt), at the thread counts of --threads=1,2 (default 1). Each
// case is named "<algorithm>/<dir>/<problem>/threads:<T>", so the name doubles as a `dtnn conv` reproducer. Algorithms that decline a problem are skipped with
// their reason (SkipWithError), never run. Forward adds a bias and backward_filter sums it, as in training.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/blas.h"
#include "conv/conv_algorithm.h"
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

void run_case(benchmark::State& state, const dtnn::ConvAlgorithm* algo, dtnn::ConvDir dir, dtnn::ConvProblem p,
              int threads) {
  const dtnn::Support s = algo->supports(p);
  if (!s.ok) {
    state.SkipWithError(s.why.c_str());
    return;
  }
  dtnn::cpu::set_threads(threads);
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
  state.counters["GFLOP/s"] = benchmark::Counter(p.flops(dir), benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // Our own flags are taken out of argv before Google Benchmark sees (and rejects) them.
  std::vector<std::string> files;
  std::vector<int> thread_counts;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--shapes=", 0) == 0) {
      files = split_commas(arg.substr(9));
    } else if (arg.rfind("--threads=", 0) == 0) {
      for (const std::string& t : split_commas(arg.substr(10))) thread_counts.push_back(std::stoi(t));
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
  std::vector<std::string> problems;
  for (const std::string& f : files)
    for (const std::string& s : read_shapes(f)) problems.push_back(s);
  for (const std::string& text : problems) {
    const dtnn::ConvProblem p = dtnn::ConvProblem::parse(text);
    for (const dtnn::ConvAlgorithm* algo : dtnn::conv_algorithms()) {
      if (algo->name() == "cpu.reference") continue;  // the oracle is not a contender
      for (dtnn::ConvDir dir : {dtnn::ConvDir::fwd, dtnn::ConvDir::bwd_data, dtnn::ConvDir::bwd_filter})
        for (int threads : thread_counts) {
          const std::string name = std::string(algo->name()) + "/" + dtnn::conv_dir_name(dir) + "/" + text +
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
