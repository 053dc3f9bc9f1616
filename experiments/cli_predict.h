// `dtnn predict`'s command line (cli.cpp's other part): the options of analysis/perfmodel's predict command,
// some of which are applied only when given (a platform's or profile's value stays otherwise).
#pragma once

#include <cstdint>

#include "analysis/perfmodel/predict_command.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace dtnn::cli {

struct PredictCommand {
  perf::PredictCommandOptions options;
  int64_t from_run = 0;
  double bucket_mb = 0, gamma = 0, cpu_speed = 0, memory_bw = 0, network_bw = 0, network_lat = 0;
  double inter_gbps = 0, inter_alpha_us = 0, intra_gbps = 0, intra_alpha_us = 0;
  int ranks_per_node = 0;
  int64_t batch_size = 0;  // options.batch_size's 0 is "not given": a given 0 is refused
  CLI::Option *inter_gbps_opt = nullptr, *inter_alpha_opt = nullptr, *intra_gbps_opt = nullptr,
              *intra_alpha_opt = nullptr, *rpn_opt = nullptr;
  CLI::App* app = nullptr;
  CLI::Option *from_run_opt = nullptr, *bucket_opt = nullptr, *gamma_opt = nullptr, *cpu_opt = nullptr,
              *mem_opt = nullptr, *nbw_opt = nullptr, *nlat_opt = nullptr, *batch_opt = nullptr;
};

// Adds the `predict` subcommand to `app`, its values landing in `p`.
void add_predict_command(CLI::App& app, PredictCommand& p);
// Runs it once parsed (predict, predict and store, or store a SimGrid replay's rows); throws dtnn::Error.
int cmd_predict(PredictCommand& p);

}  // namespace dtnn::cli
