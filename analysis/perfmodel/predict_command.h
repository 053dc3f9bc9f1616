// `dtnn predict`: step time, compute, exposed communication, throughput and parallel efficiency of a model
// for a list of rank counts on a platform, from measured per-layer times (--from-run ID, --from-report FILE
// or --profile FILE; the dtnn model, step_model.h) or from PyDTNN's formulas (--model_kind pydtnn,
// pydtnn_model.h). --write-profile writes the step profile the SimGrid step-replay proxy reads;
// --fit-collectives fits the platform's link to bench_allreduce measurements first. Every row is a
// prediction; when the profile came from a run, the run's measured step is printed beside it.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "analysis/perfmodel/pydtnn_model.h"

namespace dtnn::perf {

struct PredictCommandOptions {
  std::string model;                // zoo name; required for --model_kind pydtnn, else checked against the profile
  std::string ranks = "1,2,4,8,16,32,64,128,256";  // "1,2,4,...,256" extends a geometric (or arithmetic) run
  std::string platform = "ib100";
  std::optional<int64_t> from_run;
  std::string db = "results/dtnn.db";
  std::string from_report, profile;
  std::string mode;                 // "" = the profile's (pydtnn: blocking)
  std::string scaling = "weak";     // weak | strong
  double global_batch = 0.0;        // strong scaling's B (0: the profile's batch_size)
  std::optional<double> bucket_mb;  // re-plan the buckets (from a run or report)
  std::string model_kind = "dtnn";  // dtnn | pydtnn
  std::string write_profile;
  bool json = false;
  bool store = false;               // also store the rows in --db (predict_store.h)
  std::string from_simgrid;         // with store: a dtnn.prediction/1 of suites/step_replay/simgrid_replay.sh to store
  std::string collectives = "ompi41";  // ompi41 | simgrid
  std::string algorithm = "auto";      // force one allreduce algorithm
  // Calibration of the platform's link (both intra- and inter-node) from bench_allreduce results.
  std::string fit_collectives;          // a bench_allreduce JSON file, or "db" (the store's rows)
  std::string fit_transport = "default";
  std::string fit_op = "allreduce";     // allreduce | iallreduce | both
  double fit_max_bytes = 0.0;           // 0: no limit
  bool fit_gamma = false;               // fit γ too (else fixed at --gamma or the platform's)
  std::optional<double> gamma;          // override the platform's γ (s/B)
  // A cluster one does not have, described on top of a preset: link rates in Gb/s (β = 8e-9 / rate),
  // latencies in µs, ranks per node (the platform's name gets a '*').
  std::optional<double> inter_gbps, inter_alpha_us, intra_gbps, intra_alpha_us;
  std::optional<int> ranks_per_node;
  // PyDTNN's model: its hidden options (unset network values come from the platform's inter-node link).
  std::optional<double> cpu_speed, memory_bw, network_bw, network_lat;
  std::string network_alg = "vdg";
  int64_t batch_size = 0;               // samples per rank: pydtnn without a profile (0: 64); with a profile,
                                        // restates its batch (step_profile.h restate_batch)
  double rank_samples_per_s = 0.0;      // > 0: scale the profile's compute so that one rank alone trains this
                                        // many samples/s (another device's measured throughput; 0: as measured)
  std::string ceiling;                  // the node's contention ceiling, "2:1.91,4:3.5" (step_model.h); "": the
                                        // store's (predict_ceiling.h); "none": none
  std::optional<double> step_jitter;    // a rank's relative step-time jitter (step_model.h); unset: the store's
};

// Expands "1,2,4,...,256" (throws dtnn::Error on anything else than positive integers and one "...").
std::vector<int> parse_rank_list(const std::string& text);

// What the options set beyond the platform's name, mode, scaling and rules, which a stored curve is keyed by
// ("inter 100 Gb/s; ring forced; buckets 100 MiB"; "" when nothing): the JSON document's "variant", so two
// predictions that differ only there are two curves in v_scaling, not one overwriting the other.
std::string prediction_variant(const PredictCommandOptions& options);

// Prints the table (or JSON); throws dtnn::Error (one line) on bad input.
int run_predict_command(const PredictCommandOptions& options, std::ostream& out);

}  // namespace dtnn::perf
