// Timing one convolution problem per algorithm and direction: the measurement behind `dtnn conv`,
// `dtnn layers` and --conv_algo=best_of.
//
// ConvBench owns random operands for one problem (x, w, dy, bias in [-0.5, 0.5)) and one workspace per
// algorithm it has timed (sized when first used, so an algorithm's buffers are not re-allocated between
// samples). A sample is as many back-to-back calls as last at least `min_sample_ms` (at least one); its
// value is the mean time per call. Reported: median, min and max of `samples` samples after `warmup` calls.
// Threads are whatever cpu::set_threads() set before the call.
// GPU algorithms (device() == gpu) run on device copies of the same operands, made on first use, with a
// device workspace; their samples are timed with CUDA events on the backend's stream (a sample is as many
// queued calls as fill min_sample_ms), and their outputs are copied back for the error check.
//
// Verify before timing: every command that times an algorithm (dtnn conv, dtnn layers, best_of, bench_conv)
// first calls check() and reports an algorithm whose output is wrong as wrong, never timing or choosing it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conv/conv_algorithm.h"
#include "tensor/tensor.h"

namespace dtnn {

struct TimingOptions {
  int warmup = 1;
  int samples = 7;
  double min_sample_ms = 20.0;
};

struct ConvTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double gflops = 0;  // problem.flops(dir) / median
};

// One algorithm's outputs in one direction against cpu.reference, at conv_tolerance() for the problem checked.
struct ConvCheck {
  double error = 0.0;      // max |out - ref| / max |ref|; infinite when an output is NaN or left unwritten
  double tolerance = 0.0;  // conv_tolerance(algo, problem checked, dir)
  bool ok() const { return error <= tolerance; }
  std::string wrong() const;  // "wrong: max rel. error 3.1e-02 > tolerance 1.0e-05"
};

// The problem an algorithm is checked on before `p` is timed: p itself when cpu.reference (one thread,
// double accumulation, 0.5-1.8 GFLOP/s) computes each direction of it in well under a second
// (kCheckFlops), else p with the largest batch under that cost, at least 1 sample: every shape but the
// batch is the real layer's, so a bug that shows only in big batches can escape the check (the tests'
// own problems cover batch-dependent paths).
ConvProblem conv_check_problem(const ConvProblem& p);

class ConvBench {
 public:
  explicit ConvBench(const ConvProblem& p, uint64_t seed = 1);
  const ConvProblem& problem() const { return p_; }

  // One call of `algo` in direction `dir` on this bench's operands (outputs overwritten).
  void run(const ConvAlgorithm& algo, ConvDir dir);
  ConvTiming time(const ConvAlgorithm& algo, ConvDir dir, const TimingOptions& opt);
  // max |out - ref| / max |ref| of one direction against cpu.reference (computed once per direction), the
  // largest over its outputs: forward with the bias and without it, bwd_data's dx, bwd_filter's dw and db.
  double max_rel_error(const ConvAlgorithm& algo, ConvDir dir);
  // max_rel_error on conv_check_problem(problem()) (this bench's operands when that is the problem itself,
  // else those of a smaller bench this one owns) against conv_tolerance(); once per algorithm and
  // direction, later calls return the first verdict. time() does not check: call this first.
  ConvCheck check(const ConvAlgorithm& algo, ConvDir dir);

 private:
  float* workspace(const ConvAlgorithm& algo);
  std::vector<const Tensor*> outputs(ConvDir dir) const;
  void run_checked(const ConvAlgorithm& algo, ConvDir dir);  // run() with the outputs NaN-filled first
  const std::vector<std::vector<float>>& reference(ConvDir dir, bool with_bias);
  void make_device_operands();

  ConvProblem p_;
  bool with_bias_ = true;  // forward's bias operand (max_rel_error also checks forward without one)
  Tensor x_, w_, dy_, bias_, y_, dx_, dw_, db_;
  Tensor gx_, gw_, gdy_, gbias_, gy_, gdx_, gdw_, gdb_;  // device copies (GPU algorithms)
  std::map<const ConvAlgorithm*, Tensor> ws_;
  std::map<std::pair<ConvDir, bool>, std::vector<std::vector<float>>> ref_;  // (dir, with bias) -> outputs()
  std::unique_ptr<ConvBench> reduced_;  // check()'s bench when conv_check_problem(p_) has a smaller batch
  std::map<std::pair<const ConvAlgorithm*, ConvDir>, ConvCheck> checks_;
};

// OpenBLAS SGEMM rate (GFLOP/s, median of 5 samples) on square n x n x n at the current thread count: the
// ceiling GEMM-based convolutions are compared with ("% of SGEMM").
double measure_sgemm_gflops(int64_t n = 1024);
// cuBLAS SGEMM rate (GFLOP/s, median of 5 event-timed samples) on n x n x n in the current math mode
// (gpu::allow_tf32()): the GPU ceiling of "% of SGEMM".
double measure_gpu_sgemm_gflops(int64_t n = 8192);

}  // namespace dtnn
