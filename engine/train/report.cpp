// The JSON run report (schema "dtnn.run_report/1") and the history file.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/utf8.h"
#include "train/batch_shares.h"
#include "train/output.h"

namespace dtnn {

namespace {

nlohmann::json pass_json(const Trainer& trainer, const PassResult& r, bool with_timing) {
  nlohmann::json j;
  const auto names = trainer.value_names();
  for (size_t i = 0; i < names.size(); ++i) j[names[i]] = r.values[i];
  if (with_timing) {
    j["samples"] = r.samples;
    j["time_s"] = r.time_s;
    j["samples_per_s"] = r.samples_per_s();
  }
  return j;
}

nlohmann::json times_json(const RankTimes& t) {
  return {{"step_s", t.step_s}, {"compute_s", t.compute_s}, {"comm_s", t.comm_s}, {"exposed_s", t.exposed_s}};
}

// Measured memory beside the planned buffers: per rank and the largest, in bytes (the device's only from a GPU
// run). planned_bytes is what the model's buffers hold (Model::memory()), the part of the peak dtnn decided.
nlohmann::json memory_json(const std::vector<RankMemory>& ranks, const Model::Memory& mem) {
  nlohmann::json rss = nlohmann::json::array(), device = nlohmann::json::array(), used = nlohmann::json::array();
  int64_t rss_max = -1, device_max = -1;
  for (const RankMemory& r : ranks) {
    rss.push_back(r.peak_rss);
    device.push_back(r.device_peak);
    used.push_back(r.device_used);
    rss_max = std::max(rss_max, r.peak_rss);
    device_max = std::max(device_max, r.device_peak);
  }
  nlohmann::json j = {{"planned_bytes", mem.total()},
                      {"peak_rss_bytes", rss}, {"peak_rss_bytes_max", rss_max}};
  if (device_max >= 0) {
    j["device_peak_bytes"] = device;
    j["device_peak_bytes_max"] = device_max;
    j["device_used_bytes"] = used;
  }
  return j;
}

nlohmann::json averaging_json(const AveragingStats& a) {
  nlohmann::json j = {{"averages", a.averages}, {"bytes_per_rank", static_cast<int64_t>(a.bytes)}, {"wait_s_rank0", a.wait_s}, {"wait_s_max", a.max_wait_s}};
  if (!a.merges_per_rank.empty()) j["merges_per_rank"] = a.merges_per_rank;  // asynchronous modes
  if (!a.blocks_per_rank.empty()) j["blocks_per_rank"] = a.blocks_per_rank;  // --dynamic_blocks
  return j;
}

nlohmann::json comm_json(const EpochComm& c, const TrainOptions& options) {
  nlohmann::json j = {{"mode", c.mode},
                      {"steps", c.steps},
                      {"buckets_per_step", c.buckets_per_step},
                      {"bytes_per_step", c.bytes_per_step},
                      {"rank0", times_json(c.rank0)},
                      {"min", times_json(c.min)},
                      {"median", times_json(c.median)},
                      {"max", times_json(c.max)}};
  if (c.mode == "non_blocking") {
    j["bucket_mb"] = options.gradient_bucket_mb;
    j["buckets_min"] = options.gradient_buckets_min;
  }
  return j;
}

// Per-rank phases: from the trace when the run was traced, else (data-parallel runs) from the gradient
// reducer's timers summed over the epochs: step, compute, comm_calls (inside communication calls) and
// exposed_comm (waiting for the others), calls = steps, no median.
nlohmann::json phases_json(const RunSummary& run) {
  nlohmann::json rows = nlohmann::json::array();
  if (run.trace) {
    for (const PhaseRow& p : run.trace->phases)
      rows.push_back({{"rank", p.rank}, {"phase", p.phase}, {"layer", p.layer}, {"calls", p.calls},
                      {"total_s", p.total_s}, {"median_s", p.median_s}});
    return {{"source", "trace"}, {"rows", rows}};
  }
  std::vector<RankTimes> sums;
  int64_t steps = 0;
  for (const EpochRecord& e : run.epochs) {
    if (e.comm.mode != "blocking" && e.comm.mode != "non_blocking") continue;
    sums.resize(e.comm.ranks.size());
    steps += e.comm.steps;
    for (size_t r = 0; r < e.comm.ranks.size(); ++r) {
      sums[r].step_s += e.comm.ranks[r].step_s;
      sums[r].compute_s += e.comm.ranks[r].compute_s;
      sums[r].comm_s += e.comm.ranks[r].comm_s;
      sums[r].exposed_s += e.comm.ranks[r].exposed_s;
    }
  }
  if (sums.empty()) return nullptr;
  for (size_t r = 0; r < sums.size(); ++r)
    for (auto [phase, total] : {std::pair{"step", sums[r].step_s}, {"compute", sums[r].compute_s},
                                {"comm_calls", sums[r].comm_s}, {"exposed_comm", sums[r].exposed_s}})
      rows.push_back({{"rank", r}, {"phase", phase}, {"layer", -1}, {"calls", steps}, {"total_s", total}});
  return {{"source", "comm_timers"}, {"rows", rows}};
}

// The trace's files, its stragglers and one step's timeline (trace/trace_summary.h).
nlohmann::json trace_json(const RunSummary& run) {
  const TraceSummary& t = *run.trace;
  nlohmann::json stragglers = nlohmann::json::array();
  for (const StragglerRow& s : t.stragglers)
    stragglers.push_back({{"step", s.step}, {"slowest_rank", s.slowest_rank}, {"busy_s", s.busy_s},
                          {"median_busy_s", s.median_busy_s}, {"lag_s", s.lag_s}, {"phase", s.phase},
                          {"phase_lag_s", s.phase_lag_s}});
  nlohmann::json events = nlohmann::json::array();
  for (const TimelineEvent& e : t.timeline) {
    nlohmann::json ej = {{"rank", e.rank}, {"lane", e.lane}, {"kind", e.kind}, {"name", e.name},
                         {"id", e.id}, {"begin_s", e.begin_s}, {"end_s", e.end_s}};
    if (e.bytes) ej["bytes"] = e.bytes;
    events.push_back(ej);
  }
  nlohmann::json j = {{"files", run.trace_files},
                      {"ranks", t.ranks},
                      {"dropped_events", t.dropped_events},
                      {"clock_residual_s", t.clock_residual_s},
                      {"stragglers", stragglers},
                      {"timeline", {{"step", t.timeline_step}, {"events", events}}}};
  if (!run.trace_write_error.empty()) j["write_error"] = run.trace_write_error;
  return j;
}

}  // namespace

namespace {

// The machine and build the run ran on.
nlohmann::json environment_json(const Environment& env) {
  nlohmann::json j = {{"host", env.host},       {"cpu_model", env.cpu_model}, {"cores", env.cores},
                      {"compiler", env.compiler}, {"blas", env.blas},         {"onednn", env.onednn},
                      {"mpi", env.mpi},           {"cuda", env.cuda},         {"build_type", env.build_type},
                      {"dtnn_version", env.dtnn_version}, {"build_commit", env.build_commit},
                      {"build_dirty", env.build_dirty},   {"build_flags", env.build_flags}};
  const MachineIdentity& m = env.machine;
  j["machine"] = {
      {"vendor", m.vendor},         {"family", m.family},         {"model", m.model},
      {"stepping", m.stepping},     {"model_name", m.model_name}, {"isa", m.isa},
      {"logical_cpus", m.logical_cpus}, {"physical_cores", m.physical_cores}, {"sockets", m.sockets},
      {"l1d_kib", m.l1d_kib},       {"l2_kib", m.l2_kib},         {"l3_kib", m.l3_kib},
      {"kernel", m.kernel},         {"hypervisor", m.hypervisor}, {"key", m.key()}};
  return j;
}

// The model: every layer (its shape, algorithm and times per training step), every convolution (block children
// included: its problem, algorithm and how that was chosen) and the bytes its buffers hold.
nlohmann::json model_json(const Model& model) {
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const Layer& l = model.layer(i);
    nlohmann::json lj = {{"id", l.id}, {"type", l.type()}, {"params", l.num_params()},
                         {"output_shape", l.output_shape().str()}, {"details", l.describe()}};
    if (!l.algorithm_name().empty()) lj["conv_algo"] = l.algorithm_name();
    if (!l.problem_string().empty()) lj["problem"] = l.problem_string();
    const Model::LayerTime& t = model.layer_times()[i];
    if (t.forward_calls) lj["forward_ms"] = 1e3 * t.forward_s / t.forward_calls;
    if (t.forward_calls) lj["forward_calls"] = t.forward_calls;  // training steps timed (evaluation passes are not)
    if (t.backward_calls) lj["backward_ms"] = 1e3 * t.backward_s / t.backward_calls;
    layers.push_back(lj);
  }
  nlohmann::json convs = nlohmann::json::array();
  for (const Layer* l : model.all_layers())
    if (!l->problem_string().empty())
      convs.push_back({{"id", l->id}, {"problem", l->problem_string()}, {"conv_algo", l->algorithm_name()},
                       {"choice", l->algorithm_choice()}});
  const Model::Memory& mem = model.memory();
  return {{"name", model.name()}, {"params", model.num_params()}, {"tensor_format", layout_name(model.layout())},
          {"layers", layers}, {"conv_layers", convs},
          {"buffer_bytes", {{"activations", mem.activations}, {"activation_gradients", mem.gradients},
                            {"workspace", mem.workspace}, {"parameters", mem.parameters}}}};
}

}  // namespace

void write_report(const std::string& path, const TrainOptions& options, const Environment& env, const Model& model,
                  const Trainer& trainer, const RunSummary& run) {
  nlohmann::json j;
  j["schema"] = "dtnn.run_report/1";
  j["framework"] = "dtnn";
  j["status"] = run.diverged.empty() ? "ok" : "diverged";
  if (!run.diverged.empty()) j["error"] = run.diverged;
  if (run.weights_differ_after_epoch > 0) j["weights_differ_after_epoch"] = run.weights_differ_after_epoch;
  // The runner (experiments/runner.cpp) names each attempt; a report naming another attempt is not ingested.
  if (const char* nonce = std::getenv("DTNN_RUN_NONCE"); nonce && *nonce) j["run_nonce"] = nonce;
  nlohmann::json opts = nlohmann::json::object();
  for (const auto& [name, value] : options_list(options)) opts[name] = value;
  j["options"] = opts;
  // What targets match a run's recipe on (analysis/targets.cpp, migration 20): `--learning_rate=0.01` on 2 ranks
  // ran at 0.02, and a recipe says 0.01 for every rank count.
  nlohmann::json given = nlohmann::json::object();
  for (const auto& [name, value] : run.options_given)
    if (!opts.contains(name) || opts[name] != value) given[name] = value;
  if (!given.empty()) j["options_given"] = given;
  j["environment"] = environment_json(env);
  j["model"] = model_json(model);
  if (!run.memory.empty()) j["memory"] = memory_json(run.memory, model.memory());
  j["parallel"] = {{"ranks", run.ranks}, {"threads", run.threads}, {"mode", options.parallel},
                   {"model_averaging", options.model_averaging}};
  // --rank_batch_shares: how a full global batch was split (auto: as measured after the first steps). Not
  // with model averaging, where each worker trains its own --batch_size.
  const RankShares& shares = trainer.shares();
  if (options.model_averaging == "none")
    j["parallel"]["rank_batch_shares"] = {
        {"option", options.rank_batch_shares}, {"mode", shares.mode()},
        {"split", shares.format(global_batch(options, run.ranks))}};
  const Placement& pl = run.placement;
  j["placement"] = {{"scheduler", pl.scheduler},       {"cluster", pl.cluster},
                    {"job_id", pl.job_id},             {"step_id", pl.step_id},
                    {"node_list", pl.node_list},       {"tasks_per_node", pl.tasks_per_node},
                    {"launcher", pl.launcher},         {"launcher_version", pl.launcher_version}};
  // The run's averages (the final one included): communication rounds, bytes and time waited in them.
  if (run.averaging) {
    nlohmann::json a = averaging_json(*run.averaging);
    const int64_t steps = options.model_averaging == "partially_asynchronous"
                              ? std::max<int64_t>(1, options.average_every_steps)  // 0 means every step
                              : options.average_every_steps;
    a["every_epochs"] = steps > 0 ? 0 : options.average_every_epochs;
    a["every_steps"] = options.dynamic_blocks && options.model_averaging == "partially_asynchronous" ? 0 : steps;
    a["dynamic_blocks"] = options.dynamic_blocks;
    j["averaging"] = a;
  }
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochRecord& e : run.epochs) {
    nlohmann::json ej = {{"epoch", e.epoch},
                         {"samples", e.train.samples},
                         {"time_s", e.train.time_s},
                         {"samples_per_s", e.train.samples_per_s()},
                         {"lr", e.learning_rate},
                         {"train", pass_json(trainer, e.train, false)}};
    if (e.val) ej["val"] = pass_json(trainer, *e.val, false);
    if (!e.comm.mode.empty()) ej["communication"] = comm_json(e.comm, options);
    if (e.averaging) ej["averaging"] = averaging_json(*e.averaging);
    epochs.push_back(ej);
  }
  j["epochs"] = epochs;
  // Whether these weights were trained by this recipe from the seeded initialization: dtnn check and
  // v_accuracy_vs_target judge no other run. initial_weights: "" seeded, a path the weights file loaded, null
  // resumed from a checkpoint that does not record it.
  const TrainingStart& s = run.start;
  j["start"] = {{"trained_from_scratch", s.trained_from_scratch()},
                {"initial_weights", s.initial_weights ? nlohmann::json(*s.initial_weights) : nlohmann::json()},
                {"evaluate_only", s.evaluate_only}};
  if (!s.resumed_from.empty()) {
    j["start"]["resumed_from"] = s.resumed_from;
    j["start"]["resumed_after_epoch"] = s.resumed_after_epoch;
  }
  j["training"] = {{"time_s", run.train_time_s},
                   {"wall_time_s", run.wall_time_s},
                   {"samples", run.train_samples},
                   {"samples_per_s", run.train_time_s > 0 ? run.train_samples / run.train_time_s : 0.0},
                   {"epochs_run", run.epochs.size()}};
  if (run.test) j["test"] = pass_json(trainer, *run.test, true);
  if (nlohmann::json p = phases_json(run); !p.is_null()) j["phases"] = p;
  if (run.trace) j["trace"] = trace_json(run);
  escape_invalid_utf8(j);  // the options carry paths, which are bytes
  write_file_atomically(path, j.dump(2) + "\n");
}

void write_history(const std::string& path, const RunSummary& run) {
  std::string text;
  char buf[64];
  for (const EpochRecord& e : run.epochs) {
    std::snprintf(buf, sizeof buf, "%3d", e.epoch - 1);
    text += buf;
    for (double v : e.train.values) {
      std::snprintf(buf, sizeof buf, "%20.4f", v);
      text += buf;
    }
    if (e.val)
      for (double v : e.val->values) {
        std::snprintf(buf, sizeof buf, "%20.4f", v);
        text += buf;
      }
    text += "\n";
  }
  write_file_atomically(path, text);
}

}  // namespace dtnn
