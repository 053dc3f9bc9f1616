// ConvAlgorithm: one way of computing a convolution's three directions, and the registry of all of them.
//
// Contract for every algorithm (tensor layouts in conv_problem.h):
//   forward:          y  = conv(x, w) + bias          (y overwritten; bias: K floats, or null for none)
//   backward_data:    dx = conv_transpose(dy, w)      (dx overwritten)
//   backward_filter:  dw = correlation(x, dy)         (dw overwritten, summed over the batch)
//                     db = sum of dy per channel      (when db is not null; K floats, overwritten)
// Bias is part of the contract so an algorithm can fold it into a pass it makes anyway (a GEMM's
// cache-resident output chunk) instead of a separate sweep over y and dy.
// `ws` is a workspace of at least workspace_floats(problem) floats, 64-byte aligned, owned by the caller
// (the layer allocates it once for its largest batch). Algorithms are stateless and never allocate.
// workspace_floats() may grow with cpu::threads() (Winograd keeps per-thread tile buffers): size the
// workspace after cpu::set_threads(), and again if the thread count grows.
// supports() is cheap; an unsupported problem is an answer with a reason, never a crash.
//
// Devices: CPU algorithms take host pointers; GPU algorithms (device() == gpu, names "gpu.*") take device
// pointers and queue their work on the GPU backend's stream (backend/gpu_ops.h) without synchronising.
// A GPU algorithm may compute only some directions (cuDNN's algorithms are per direction):
// supports_dir() says which; supports() is true when it computes at least one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "conv/conv_problem.h"

namespace dtnn {

// Why an algorithm does or does not compute a problem. no_such_direction: the algorithm has no code for
// that direction at all (cuDNN's algorithms are per direction), whatever the problem: tables leave such a
// cell out instead of reporting a decline. declined: it has code for the direction but not for this
// problem (or not on this machine), with the reason a user should read.
enum class SupportCode { ok, declined, no_such_direction };

struct Support {
  SupportCode code = SupportCode::ok;
  std::string why;  // empty when ok
  bool ok() const { return code == SupportCode::ok; }
  static Support yes() { return {}; }
  static Support no(std::string reason) { return {SupportCode::declined, std::move(reason)}; }
  static Support no_such_direction(std::string reason) { return {SupportCode::no_such_direction, std::move(reason)}; }
};

class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;
  virtual std::string_view name() const = 0;  // "cpu.im2row_gemm"
  virtual Support supports(const ConvProblem& p) const = 0;
  virtual Support supports_dir(const ConvProblem& p, ConvDir dir) const { return supports(p); }
  virtual Device device() const { return Device::cpu; }
  // The algorithm that actually runs direction `dir` of `p`: name() except for choosers (gpu.cudnn_find
  // names the cuDNN algorithm it picked).
  virtual std::string chosen_for(const ConvProblem&, ConvDir) const { return std::string(name()); }
  virtual int64_t workspace_floats(const ConvProblem& p) const = 0;
  // The most operation events (trace/op_trace.h: im2row, gemm, ... per chunk) one call of direction `dir`
  // on `p` records when tracing, bias included; the Tracer is sized with it. GPU algorithms record none.
  virtual int64_t op_events(const ConvProblem& p, ConvDir dir) const { return 0; }
  // The largest error this algorithm's output may have against cpu.reference, as ConvBench::max_rel_error
  // measures it (max |out - ref| / max |ref|, operands uniform in [-0.5, 0.5)): its own rounding, in every
  // direction. Larger is a bug. The one home of these numbers: the tests and every command that times an
  // algorithm (ConvBench::check) read it here.
  virtual double tolerance() const { return 1e-5; }
  virtual void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
                       float* ws) const = 0;
  // forward(), and the per-channel moments of y over the batch (bias included; N x P x Q values per channel)
  // computed in the pass that writes y, for a batch normalization that follows, which then reads y once
  // instead of twice: mean[k] and m2[k] (the sum of squared deviations from the mean), K doubles each, the
  // same for every thread count and within a few float roundings of y's exact moments. Only where
  // has_forward_moments(p); elsewhere it computes nothing and returns false.
  virtual bool has_forward_moments(const ConvProblem&) const { return false; }
  virtual bool forward_moments(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
                               float* ws, double* mean, double* m2) const {
    (void)p, (void)x, (void)w, (void)bias, (void)y, (void)ws, (void)mean, (void)m2;
    return false;
  }
  virtual void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const = 0;
  // backward_data() with `add` (shaped like dx, not overlapping it) added in the pass that writes dx: dx =
  // conv_transpose(dy, w) + add, bit for bit backward_data() followed by dx += add (a residual block's identity
  // path, without the addition's own pass over dx). Only where has_backward_data_add(p); elsewhere it computes
  // nothing and returns false.
  virtual bool has_backward_data_add(const ConvProblem&) const { return false; }
  virtual bool backward_data_add(const ConvProblem& p, const float* dy, const float* w, const float* add, float* dx,
                                 float* ws) const {
    (void)p, (void)dy, (void)w, (void)add, (void)dx, (void)ws;
    return false;
  }
  virtual void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                               float* ws) const = 0;
  // Both backward directions on one dy, as a training step runs them: backward_filter, then backward_data
  // when dx is not null, with the same workspace. An algorithm that prepares dy for both (oneDNN's reorder
  // into its blocked layout, bf16's rounding) may prepare it once; the results are those of the two calls.
  virtual void backward(const ConvProblem& p, const float* x, const float* dy, const float* w, float* dx, float* dw,
                        float* db, float* ws) const {
    backward_filter(p, x, dy, dw, db, ws);
    if (dx) backward_data(p, dy, w, dx, ws);
  }
};

// The number of products summed into one output element of direction `dir`: C/groups x R x S (forward),
// K/groups x R x S (bwd_data, an upper bound for strided taps), N x P x Q (bwd_filter, and the bias
// gradient's sum).
int64_t conv_reduction_length(const ConvProblem& p, ConvDir dir);
// The tolerance of `algo` on direction `dir` of `p`: algo.tolerance() up to reductions of
// kConvToleranceReduction terms, then growing with sqrt(length / kConvToleranceReduction). A float sum of L
// terms of random sign rounds with an error that grows like sqrt(L) relative to the sum (the random-walk
// model): a weight gradient over a batch of 512 28x28 images sums 401,408 products, and correct float
// accumulations (convgemm 1.2e-5, direct 1.5e-5) exceeded the flat 1e-5 there while a wrong tap is off by
// ~1e-1. The tests and ConvBench::check use it.
constexpr int64_t kConvToleranceReduction = 16384;
double conv_tolerance(const ConvAlgorithm& algo, const ConvProblem& p, ConvDir dir);

// Bias helpers for algorithms: add bias[k] to / sum channel k of the output rows [m0, m0 + count) of an
// NHWC problem (a row = one output pixel's K channels), or of whole samples [n0, n0 + count) in NCHW.
void conv_add_bias(const ConvProblem& p, const float* bias, float* y, int64_t first, int64_t count);
void conv_sum_bias(const ConvProblem& p, const float* dy, float* db, int64_t first, int64_t count, bool accumulate);

// All CPU algorithms of this build, in preference order (conv/registry.cpp).
const std::vector<const ConvAlgorithm*>& conv_algorithms();
// All GPU algorithms of this build (empty without CUDA): every cuDNN algorithm, then gpu.cudnn_find.
const std::vector<const ConvAlgorithm*>& gpu_conv_algorithms();
// The names of the GPU algorithms, in every build (so that matrices naming them load, and their runs are
// recorded 'unsupported', where CUDA is absent); equal to gpu_conv_algorithms()' names in CUDA builds.
const std::vector<std::string>& gpu_conv_algorithm_names();

// Looks an algorithm (CPU or GPU) up by name; accepts the short form without the "cpu." / "gpu." prefix
// ("im2row_gemm", "cudnn.fft"). Throws dtnn::Error listing the known names when there is no such algorithm,
// dtnn::Unsupported for a GPU algorithm in a build without CUDA.
const ConvAlgorithm& find_conv_algorithm(std::string_view name);
// The full name of a known algorithm, GPU ones included in builds without CUDA; throws like
// find_conv_algorithm for an unknown name.
std::string canonical_conv_algorithm_name(std::string_view name);

// The algorithms a list of names selects, in list order: "all" expands to every algorithm of the device's
// registry except the reference (the contenders of a comparison). Throws for an unknown name.
std::vector<const ConvAlgorithm*> conv_algorithms_named(const std::vector<std::string>& names,
                                                        Device device = Device::cpu);
// One name of such a list checked before any work (GPU names are known to every build): "all" or an
// algorithm; auto and best_of, which choose per layer when training, are refused as such rather than as unknown
// names (a refusal listing them as known read as a contradiction).
void check_conv_algorithm_to_time(std::string_view name);

// Choosing a layer's algorithm (a name, auto, best_of; CPU or GPU) is conv/conv_select.h's
// select_conv_algorithm, the one place that does it.

}  // namespace dtnn
