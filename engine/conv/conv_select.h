// Choosing a layer's convolution algorithm: a fixed name, "auto", or "best_of" (auto-tuning), on the CPU
// or the GPU. select_conv_algorithm is the one place that does it (layers, dtnn layers and the tests call it).
//
// On the CPU:
//   NAME     the named algorithm; if it declines the problem, the first supporting one in preference order
//            (conv_algorithms()), with the reason in the choice's note.
//   best_of  times every supporting algorithm except the reference on the layer's real problem in each
//            direction (forward, backward_data, backward_filter: one warm-up call each, then the median of 3
//            samples of >= 5 ms), after checking its output there against cpu.reference at its
//            conv_tolerance() (ConvBench::check: one call; an algorithm that fails is never timed or chosen in
//            that direction), and keeps the fastest per direction: algorithms are stateless, so a layer
//            may run Winograd forward and oneDNN backward. (PyDTNN's BestOf chooses one algorithm for the
//            forward+backward pipeline; per direction is never slower.) The choice is appended to the cache
//            file, so a later run of the same build on the same CPU model and thread count reads it instead
//            of timing.
//            Identical problems within one process are timed once.
//   auto     the cache's choice when it has one for (CPU model, threads, build, problem); otherwise the heuristic:
//            winograd_x16_f4 for NHWC 3x3 stride-1 layers with C and K in multiples of 16 up to 64 on
//            AVX-512 CPUs, up to 256 on the others (its AVX2 kernels); on AVX-512 CPUs with oneDNN built, onednn_winograd for other 3x3 stride-1
//            layers with C and K >= 32 (multiples of 16), onednn for other layers with K >= 16 (except NCHW
//            depthwise);
//            else direct for NHWC first layers (C <= 4, K >= 16), im2row_gemm for other NHWC layers with C < 8
//            or K < 16, depthwise for NCHW depthwise layers, else the first supporting algorithm in
//            preference order (conv/registry.cpp: convgemm for groups == 1 in both layouts, onednn for
//            grouped and depthwise layers). best_of, once, is faster still: it mixes algorithms.
//
// The cache is a text file, one choice a line:
// "<cpu model>\t<threads>\t<build>\t<problem>\t<algorithm>\t<ms>\tper-direction+build", the algorithm as
// ConvChoice::name() writes it (one name, or three joined by '/'); lines without the tag (older formats)
// are ignored. The CPU column carries " max_isa=AVX2" when DTNN_MAX_CPU_ISA caps the kernels (another
// fastest algorithm): conv_cache_cpu() below. The build column (conv_cache_build()) is the commit and a
// digest of the compile flags: another build has other kernels (and perhaps another oneDNN), so its
// timings are not this one's, and a choice it cached is timed again rather than reported as measured.
// Default path: $DTNN_CONV_CACHE, else $XDG_CACHE_HOME/dtnn/conv_best_of.tsv, else
// ~/.cache/dtnn/conv_best_of.tsv. Unreadable lines and unknown algorithms in it are ignored (a cache
// written by another build); a cache that cannot be written is a warning on stderr, not an error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "conv/conv_algorithm.h"

namespace dtnn {

struct ConvChoice {
  const ConvAlgorithm* algo[3] = {nullptr, nullptr, nullptr};  // per direction: fwd, bwd_data, bwd_filter
  // "requested", "fallback", "heuristic", "best_of (timed)", "best_of (cache)", "auto (cache)"; on the GPU
  // also "partly requested" and "auto (cudnn_find)"
  std::string how;
  std::string note;  // why a requested algorithm was not used, or the best_of timings
  double ms = 0.0;   // best_of (timed): fwd + bwd_data + bwd_filter milliseconds of the chosen algorithms
  // "cpu.onednn" when one algorithm runs every direction, else "fwd/bwd_data/bwd_filter" names
  // ("cpu.winograd_f4/cpu.onednn/cpu.winograd_f4"): the form the cache and the model tables use.
  std::string name() const;
};

// The algorithm per direction for a layer of problem `p` on `device` (rules above and below). Throws
// dtnn::Error for an unknown algorithm name. `cache_path`: best_of's cache ("" = default_conv_cache_path()).
ConvChoice select_conv_algorithm(std::string_view requested, const ConvProblem& p, Device device = Device::cpu,
                                 const std::string& cache_path = "");

// The checks and timing behind best_of, over the given candidates (those that decline the problem, or
// compute a direction wrongly, are skipped there), appending the winner to the cache file. Throws
// dtnn::Error when no candidate computes some direction correctly. Exposed for tests that plant a
// known-slow or a wrong candidate.
ConvChoice best_of_among(const std::vector<const ConvAlgorithm*>& candidates, const ConvProblem& p,
                         const std::string& cache_path);

// On the GPU (device == Device::gpu): the requested GPU algorithm in the directions it computes and
// accepts, gpu.cudnn_find (every cuDNN algorithm timed per direction, the fastest kept; PyDTNN's
// --enable_cudnn_auto_conv_alg) in the others, with the reason in `note`. "auto" and "best_of" mean
// gpu.cudnn_find in every direction. A CPU algorithm's name is declined with a note; on the CPU a GPU
// algorithm's name falls back the same way.

// "cpu.onednn" when one algorithm runs all three directions, else the three names joined by '/'.
std::string conv_direction_names(const ConvAlgorithm* const algo[3]);

std::string default_conv_cache_path();
bool cpu_has_avx512();         // AVX-512F at run time (auto's heuristic)

// The CPU column of this process's cache lines: environment().cpu_id, and " max_isa=<cap>" when
// DTNN_MAX_CPU_ISA caps the CPU kernels (capped to AVX2, a layer's fastest algorithm can be another one).
std::string conv_cache_cpu();
// The build column of this binary's cache lines: build_commit_label() (core/build_info.h) and
// " flags=" with the first 12 hex digits of the SHA-256 of its build flags.
std::string conv_cache_build();

}  // namespace dtnn
