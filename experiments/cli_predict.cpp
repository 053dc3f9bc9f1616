// See cli_predict.h.
#include "experiments/cli_predict.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "analysis/perfmodel/predict_store.h"
#include "core/error.h"

namespace dtnn::cli {

void add_predict_command(CLI::App& app, PredictCommand& p) {
  perf::PredictCommandOptions& o = p.options;
  CLI::App* c = p.app = app.add_subcommand(
      "predict", "Predict step time, throughput and efficiency for 1..N ranks on a platform (a model, not a measurement)");
  c->add_option("--model", o.model, "Zoo model name (required with --model_kind pydtnn; else checked against the profile)");
  c->add_option("--ranks", o.ranks, "Rank counts, e.g. 1,2,4,...,256")->capture_default_str();
  c->add_option("--platform", o.platform, "eth10g, ib100, nvlink8, horovod_roce25, dgx1v_ib4x100, localhost2 or localhost2_tcp")->capture_default_str();
  p.from_run_opt = c->add_option("--from-run", p.from_run, "Profile a stored run (its report) of --db");
  c->add_option("--db", o.db, "Results database (--from-run, --fit-collectives db)")->capture_default_str();
  c->add_option("--from-report", o.from_report, "Profile a dtnn run report (--report file)");
  c->add_option("--profile", o.profile, "A dtnn.step_profile/1 JSON file");
  c->add_option("--mode", o.mode, "blocking or non_blocking (default: the profile's)");
  c->add_option("--scaling", o.scaling, "weak (batch per rank fixed) or strong (global batch fixed)")->capture_default_str();
  c->add_option("--global_batch", o.global_batch, "Strong scaling's global batch (default: the profile's batch)");
  p.bucket_opt = c->add_option("--bucket_mb", p.bucket_mb,
                               "Re-plan the gradient buckets with this cap (MiB; 0: one per layer; the run's "
                               "--gradient_buckets_min still lowers it)");
  c->add_option("--model_kind", o.model_kind, "dtnn (measured layer times) or pydtnn (PyDTNN's formulas)")->capture_default_str();
  c->add_option("--write-profile", o.write_profile, "Also write the step profile (the SimGrid proxy's input)");
  c->add_flag("--json", o.json, "Print JSON instead of the table")->disable_flag_override();
  c->add_option("--from-simgrid", o.from_simgrid, "With --store: store suites/step_replay/simgrid_replay.sh's PREDICTION_JSON "
                "output (source simgrid) instead of predicting");
  c->add_flag("--store", o.store, "Also store the predicted rows in --db (the predictions table; dtnn query predictions)")
      ->disable_flag_override();
  c->add_option("--collectives", o.collectives, "Algorithm choice: ompi41 (Open MPI 4.1) or simgrid (SimGrid SMPI's)")->capture_default_str();
  c->add_option("--algorithm", o.algorithm, "Force one allreduce algorithm (ring, recursive_doubling, rabenseifner, binomial, ...)")->capture_default_str();
  c->add_option("--fit-collectives", o.fit_collectives, "Fit the platform's link to a bench_allreduce JSON file, or to the store's rows (db)");
  c->add_option("--fit-transport", o.fit_transport, "--fit-collectives db: the rows' transport")->capture_default_str();
  c->add_option("--fit-op", o.fit_op, "allreduce, iallreduce or both")->capture_default_str();
  c->add_option("--fit-max-bytes", o.fit_max_bytes, "Leave out larger sizes from the fit (0: none)");
  c->add_flag("--fit-gamma", o.fit_gamma, "Fit gamma too (2-rank data cannot tell it from beta)")->disable_flag_override();
  p.gamma_opt = c->add_option("--gamma", p.gamma, "Reduction seconds per byte (overrides the platform's)");
  p.inter_gbps_opt = c->add_option("--inter_gbps", p.inter_gbps, "Platform change: the link between nodes, Gb/s");
  p.inter_alpha_opt = c->add_option("--inter_alpha_us", p.inter_alpha_us, "Platform change: its latency, microseconds");
  p.intra_gbps_opt = c->add_option("--intra_gbps", p.intra_gbps, "Platform change: the link inside a node, Gb/s");
  p.intra_alpha_opt = c->add_option("--intra_alpha_us", p.intra_alpha_us, "Platform change: its latency, microseconds");
  p.rpn_opt = c->add_option("--ranks_per_node", p.ranks_per_node, "Platform change: ranks sharing a node");
  p.cpu_opt = c->add_option("--cpu_speed", p.cpu_speed, "PyDTNN model: FLOP/s (default 4e12)");
  p.mem_opt = c->add_option("--memory_bw", p.memory_bw, "PyDTNN model: bytes/s (default 50e9)");
  p.nbw_opt = c->add_option("--network_bw", p.network_bw, "PyDTNN model: bits/s (default: the platform's)");
  p.nlat_opt = c->add_option("--network_lat", p.network_lat, "PyDTNN model: seconds (default: the platform's)");
  c->add_option("--network_alg", o.network_alg, "PyDTNN model: bta or vdg")->capture_default_str();
  p.batch_opt = c->add_option("--batch_size", p.batch_size, "Samples per rank: restates a profile's batch (layer "
                              "times scale linearly); PyDTNN model without a profile: default 64");
  c->add_option("--rank_samples_per_s", o.rank_samples_per_s, "Scale the profile's compute so one rank alone trains "
                "this many samples/s (e.g. a published per-GPU throughput)");
  c->add_option("--ceiling", o.ceiling, "The node's contention ceiling, RANKS:SPEEDUP pairs (2:1.91: two independent "
                "copies reach 1.91x one; experiments/contention_ceiling.sh prints it): ranks sharing a node compute "
                "RANKS/SPEEDUP slower. Not given: the one stored in --db for the profile's machine and model "
                "(experiments/contention_ceiling.sh with STORE_DB), on a localhost platform; none: no ceiling");
  c->add_option("--step_jitter", o.step_jitter, "A rank's step-time standard deviation over its mean step (0.05: 5 %): "
                "the slowest of p ranks ends its backward pass this times the compute times E[max of p normals] late. "
                "Not given: the stored ceiling's, where one applies");
}

int cmd_predict(PredictCommand& p) {
  perf::PredictCommandOptions o = p.options;
  if (p.from_run_opt->count()) o.from_run = p.from_run;
  if (p.bucket_opt->count()) o.bucket_mb = p.bucket_mb;
  if (p.gamma_opt->count()) o.gamma = p.gamma;
  if (p.inter_gbps_opt->count()) o.inter_gbps = p.inter_gbps;
  if (p.inter_alpha_opt->count()) o.inter_alpha_us = p.inter_alpha_us;
  if (p.intra_gbps_opt->count()) o.intra_gbps = p.intra_gbps;
  if (p.intra_alpha_opt->count()) o.intra_alpha_us = p.intra_alpha_us;
  if (p.rpn_opt->count()) o.ranks_per_node = p.ranks_per_node;
  if (p.cpu_opt->count()) o.cpu_speed = p.cpu_speed;
  if (p.mem_opt->count()) o.memory_bw = p.memory_bw;
  if (p.nbw_opt->count()) o.network_bw = p.network_bw;
  if (p.nlat_opt->count()) o.network_lat = p.network_lat;
  DTNN_CHECK(!p.batch_opt->count() || p.batch_size > 0, "--batch_size must be > 0 (got ", p.batch_size, ")");
  if (p.batch_opt->count()) o.batch_size = p.batch_size;
  if (!o.from_simgrid.empty()) {
    DTNN_CHECK(o.store, "--from-simgrid stores a SimGrid replay's rows: add --store (and --db)");
    return perf::store_simgrid_prediction(o.from_simgrid, o.db, std::cout);
  }
  return o.store ? perf::run_predict_and_store(o, std::cout) : perf::run_predict_command(o, std::cout);
}

}  // namespace dtnn::cli
