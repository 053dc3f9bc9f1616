// `dtnn layers --model M`: every convolution layer of a real model x every algorithm (or those named),
// timed forward + backward_data + backward_filter at the model's shapes and the given batch size.
//
// Prints one row per distinct layer problem (with how many layers share it): the median ms of the three
// directions summed, per algorithm, and the fastest. The last rows are the model-level convolution time
// per step for each fixed algorithm (a layer it declines is counted at the algorithm training would fall
// back to, marked *) and for best_of (each layer at its fastest algorithm), with best_of's ratio to the
// best fixed algorithm. --list prints the problem strings only (the suites/shapes/*.txt format).
// Every algorithm is checked against cpu.reference on each layer problem (ConvBench::check) before it is
// timed there: one that computes a direction wrongly is marked "wrong" (JSON: "wrong" with the error and
// tolerance) instead of timed, has no model total, and the command returns 1.
//
// --device gpu: cuDNN algorithms are per direction, so the table has one row per layer problem x
// direction, a column per cuDNN algorithm (ms, "-" where cuDNN declines), the fastest with its TFLOP/s, and
// what gpu.cudnn_find picked; the totals compare, per training step, the fastest per direction, cudnn_find
// and PyDTNN's fixed algorithms. Times are CUDA-event medians; --allow_tf32 sets the math mode.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace dtnn {

struct LayersCommandOptions {
  std::string model;
  std::string dataset;  // optional; must match the model's dataset when given
  int64_t batch_size = 64;
  std::string tensor_format = "NHWC";
  std::vector<std::string> algos = {"all"};
  int threads = 1;
  int samples = 5;
  bool list = false;
  std::string json_path;  // optional: the per-layer measurements as JSON
  std::string device = "cpu";
  bool allow_tf32 = false;
};

// Returns the exit code: 0, or 1 when an algorithm computed a wrong result.
int run_layers_command(const LayersCommandOptions& options, std::ostream& out);

}  // namespace dtnn
