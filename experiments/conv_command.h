// `dtnn conv PROBLEM`: benchdnn-style timing of one convolution problem over algorithms and directions.
//
// Prints the parsed problem (its canonical string: parse -> print round trip), the OpenBLAS SGEMM rate at
// this thread count, then one row per algorithm x direction: median ms (min-max over the samples),
// GFLOP/s (direct-convolution FLOPs, 2 per multiply-add), % of the SGEMM rate, and the max relative error
// against cpu.reference. Each algorithm and direction is checked against cpu.reference before it is timed
// (ConvBench::check: on the problem itself, or on a smaller batch of it where the reference would be slow,
// which the header says): one whose error exceeds conv_tolerance() gets a "wrong: ..." row instead of
// times, and the command returns 1. Declined algorithms get a row with their reason.
// --device gpu: the GPU algorithms (every cuDNN algorithm per direction, gpu.cudnn_find with the algorithm
// it chose), timed with CUDA events, against the cuBLAS SGEMM rate in the same math mode (--allow_tf32),
// TFLOP/s instead of GFLOP/s.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace dtnn {

class ConvAlgorithm;

struct ConvCommandOptions {
  std::string problem;
  std::vector<std::string> algos = {"all"};  // names, or "all" (every algorithm but the reference)
  std::vector<std::string> dirs = {"all"};   // fwd, bwd_data, bwd_filter, or "all"
  int threads = 1;
  int samples = 7;
  std::string device = "cpu";  // cpu | gpu
  bool allow_tf32 = false;     // GPU math mode
};

// Returns the exit code: 0, or 1 when an algorithm computed a wrong result. Throws dtnn::Error for a
// malformed problem, an unknown algorithm or direction, dtnn::Unsupported when no algorithm ran.
int run_conv_command(const ConvCommandOptions& options, std::ostream& out);
// The same over these algorithms instead of options.algos' (tests plant a wrong one).
int run_conv_command(const ConvCommandOptions& options, const std::vector<const ConvAlgorithm*>& algos,
                     std::ostream& out);

}  // namespace dtnn
