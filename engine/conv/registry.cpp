// The one ordered list of convolution algorithms. Preference order is the fallback order: a layer that
// asks for an algorithm which declines its problem (or asks for "auto") gets the first one that accepts.
#include <algorithm>
#include <cmath>
#include <string>

#include "conv/conv_algorithm.h"
#include "conv/cpu/cpu_algorithms.h"
#include "conv/reference/conv_reference.h"
#include "core/error.h"
#if DTNN_CUDA
#include "conv/gpu/gpu_algorithms.h"
#endif

namespace dtnn {

const ConvAlgorithm& conv_reference() {
  static const ConvReference algo;
  return algo;
}

const std::vector<const ConvAlgorithm*>& conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> all = {
      &conv_convgemm(),
      &conv_im2row_gemm(),
      &conv_winograd_f4(),
      &conv_winograd_f2(),
      &conv_im2col_gemm(),
      &conv_onednn(),
      &conv_onednn_winograd(),  // after oneDNN's direct kernels: never a fallback where those run
      &conv_winograd_x16(),
      &conv_winograd_x16_f4(),
      &conv_depthwise(),  // after oneDNN's JIT (2.5-4x faster here); before the reference without oneDNN
      &conv_direct(),     // grouped NHWC layers without oneDNN; otherwise chosen by name, auto's heuristic or best_of
      &conv_reference(),
  };
  return all;
}

const std::vector<std::string>& gpu_conv_algorithm_names() {
  static const std::vector<std::string> names = {
      "gpu.cudnn.implicit_gemm",     "gpu.cudnn.implicit_precomp_gemm", "gpu.cudnn.gemm",
      "gpu.cudnn.direct",            "gpu.cudnn.fft",                   "gpu.cudnn.fft_tiling",
      "gpu.cudnn.winograd",          "gpu.cudnn.winograd_nonfused",     "gpu.cudnn.bwd_data_algo_0",
      "gpu.cudnn.bwd_data_algo_1",   "gpu.cudnn.bwd_filter_algo_0",     "gpu.cudnn.bwd_filter_algo_1",
      "gpu.cudnn.bwd_filter_algo_3", "gpu.cudnn.pydtnn_fixed",          "gpu.cublas_1x1",
      "gpu.cudnn_find"};
  return names;
}

const std::vector<const ConvAlgorithm*>& gpu_conv_algorithms() {
#if DTNN_CUDA
  return cudnn_algorithms();
#else
  static const std::vector<const ConvAlgorithm*> none;
  return none;
#endif
}

void conv_add_bias(const ConvProblem& p, const float* bias, float* y, int64_t first, int64_t count) {
  if (!bias) return;
  const int64_t K = p.k;
  if (p.layout == Layout::nhwc) {
    for (int64_t m = first; m < first + count; ++m)
      for (int64_t k = 0; k < K; ++k) y[m * K + k] += bias[k];
    return;
  }
  const int64_t PQ = p.p() * p.q();
  for (int64_t n = first; n < first + count; ++n)
    for (int64_t k = 0; k < K; ++k) {
      float* row = y + (n * K + k) * PQ;
      for (int64_t i = 0; i < PQ; ++i) row[i] += bias[k];
    }
}

int64_t conv_reduction_length(const ConvProblem& p, ConvDir dir) {
  switch (dir) {
    case ConvDir::fwd: return p.c / p.groups * p.r * p.s;
    case ConvDir::bwd_data: return p.k / p.groups * p.r * p.s;
    case ConvDir::bwd_filter: return p.n * p.p() * p.q();
  }
  return 1;
}

double conv_tolerance(const ConvAlgorithm& algo, const ConvProblem& p, ConvDir dir) {
  const double ratio = static_cast<double>(conv_reduction_length(p, dir)) / kConvToleranceReduction;
  return algo.tolerance() * std::sqrt(std::max(1.0, ratio));
}

void conv_sum_bias(const ConvProblem& p, const float* dy, float* db, int64_t first, int64_t count, bool accumulate) {
  if (!db) return;
  const int64_t K = p.k;
  if (!accumulate)
    for (int64_t k = 0; k < K; ++k) db[k] = 0.0f;
  if (p.layout == Layout::nhwc) {
    // Blocks of 8 (then 4) channels summed in a local vector (one register), not through db[] in memory.
    int64_t k0 = 0;
    for (; k0 + 8 <= K; k0 += 8) {
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t m = first; m < first + count; ++m)
        for (int j = 0; j < 8; ++j) acc[j] += dy[m * K + k0 + j];
      for (int j = 0; j < 8; ++j) db[k0 + j] += acc[j];
    }
    for (; k0 + 4 <= K; k0 += 4) {
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // two rows at a time when K == 4
      int64_t m = first;
      if (K == 4)
        for (; m + 2 <= first + count; m += 2)
          for (int j = 0; j < 8; ++j) acc[j] += dy[m * 4 + j];
      for (; m < first + count; ++m)
        for (int j = 0; j < 4; ++j) acc[j] += dy[m * K + k0 + j];
      for (int j = 0; j < 4; ++j) db[k0 + j] += acc[j] + acc[4 + j];
    }
    for (int64_t k = k0; k < K; ++k) {
      float acc = 0.0f;
      for (int64_t m = first; m < first + count; ++m) acc += dy[m * K + k];
      db[k] += acc;
    }
    return;
  }
  const int64_t PQ = p.p() * p.q();
  for (int64_t n = first; n < first + count; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const float* row = dy + (n * K + k) * PQ;
      float acc = 0.0f;
      for (int64_t i = 0; i < PQ; ++i) acc += row[i];
      db[k] += acc;
    }
}

namespace {
bool name_matches(std::string_view full, std::string_view requested) {
  if (full == requested) return true;
  const auto dot = full.find('.');
  return dot != std::string_view::npos && full.substr(dot + 1) == requested;
}
}  // namespace

const ConvAlgorithm& find_conv_algorithm(std::string_view name) {
  std::string known;
  // cpu.onednn_bf16 is found by name (dtnn layers times it beside the float32 ones) but is in no list a
  // float32 choice draws from.
  static const std::vector<const ConvAlgorithm*> by_name_only = {&conv_onednn_bf16()};
  for (const auto* list : {&conv_algorithms(), &by_name_only, &gpu_conv_algorithms()})
    for (const ConvAlgorithm* a : *list) {
      if (name_matches(a->name(), name)) return *a;
      known += (known.empty() ? "" : ", ") + std::string(a->name());
    }
  for (const std::string& gpu : gpu_conv_algorithm_names())
    if (name_matches(gpu, name))
      throw Unsupported(gpu + " is a GPU algorithm and this build has no GPU backend (built with DTNN_CUDA=OFF or "
                        "without CUDA)");
  fail("unknown convolution algorithm '", name, "' (known: auto, best_of, ", known, ")");
}

std::string canonical_conv_algorithm_name(std::string_view name) {
  for (const std::string& gpu : gpu_conv_algorithm_names())
    if (name_matches(gpu, name)) return gpu;
  return std::string(find_conv_algorithm(name).name());
}

void check_conv_algorithm_to_time(std::string_view name) {
  DTNN_CHECK(name != "auto" && name != "best_of", "'", name, "' chooses an algorithm per layer when training (dtnn ",
             "train --conv_algo); here name the algorithms to time, or all");
  if (name != "all") (void)canonical_conv_algorithm_name(name);
}

std::vector<const ConvAlgorithm*> conv_algorithms_named(const std::vector<std::string>& names, Device device) {
  std::vector<const ConvAlgorithm*> out;
  for (const std::string& n : names) {
    check_conv_algorithm_to_time(n);
    if (n != "all") {
      out.push_back(&find_conv_algorithm(n));
      continue;
    }
    for (const ConvAlgorithm* a : device == Device::gpu ? gpu_conv_algorithms() : conv_algorithms())
      if (a != &conv_reference()) out.push_back(a);
  }
  return out;
}

}  // namespace dtnn
