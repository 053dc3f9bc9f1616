// The JSON run report (schema "dtnn.run_report/1") and the history file.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
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

nlohmann::json comm_json(const EpochComm& c, const TrainOptions& options) {
  nlohmann::json j = {{"mode", c.mode},
                      {"steps", c.steps},
                      {"buckets_per_step", c.buckets_per_step},
                      {"bytes_per_step", c.bytes_per_step},
                      {"rank0", times_json(c.rank0)},
                      {"min", times_json(c.min)},
                      {"median", times_json(c.median)},
                      {"max", times_json(c.max)}};
  if (c.mode == "non_blocking") j["bucket_mb"] = options.gradient_bucket_mb;
  return j;
}

}  // namespace

void write_report(const std::string& path, const TrainOptions& options, const Environment& env, const Model& model,
                  const Trainer& trainer, const RunSummary& run) {
  nlohmann::json j;
  j["schema"] = "dtnn.run_report/1";
  j["framework"] = "dtnn";
  j["status"] = run.diverged.empty() ? "ok" : "diverged";
  if (!run.diverged.empty()) j["error"] = run.diverged;
  // The runner (experiments/runner.cpp) names each attempt; a report naming another attempt is not ingested.
  if (const char* nonce = std::getenv("DTNN_RUN_NONCE"); nonce && *nonce) j["run_nonce"] = nonce;
  nlohmann::json opts = nlohmann::json::object();
  for (const auto& [name, value] : options_list(options)) opts[name] = value;
  j["options"] = opts;
  j["environment"] = {{"host", env.host},       {"cpu_model", env.cpu_model}, {"cores", env.cores},
                      {"compiler", env.compiler}, {"blas", env.blas},         {"onednn", env.onednn},
                      {"mpi", env.mpi},           {"cuda", env.cuda},         {"build_type", env.build_type},
                      {"dtnn_version", env.dtnn_version}};
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const Layer& l = model.layer(i);
    nlohmann::json lj = {{"id", l.id}, {"type", l.type()}, {"params", l.num_params()},
                         {"output_shape", l.output_shape().str()}, {"details", l.describe()}};
    if (!l.algorithm_name().empty()) lj["conv_algo"] = l.algorithm_name();
    if (!l.problem_string().empty()) lj["problem"] = l.problem_string();
    const Model::LayerTime& t = model.layer_times()[i];
    if (t.forward_calls) lj["forward_ms"] = 1e3 * t.forward_s / t.forward_calls;
    if (t.backward_calls) lj["backward_ms"] = 1e3 * t.backward_s / t.backward_calls;
    layers.push_back(lj);
  }
  // Every convolution, block children included: its problem, algorithm and how that was chosen.
  nlohmann::json convs = nlohmann::json::array();
  for (const Layer* l : model.all_layers())
    if (!l->problem_string().empty())
      convs.push_back({{"id", l->id}, {"problem", l->problem_string()}, {"conv_algo", l->algorithm_name()},
                       {"choice", l->algorithm_choice()}});
  j["model"] = {{"name", model.name()}, {"params", model.num_params()}, {"tensor_format", layout_name(model.layout())},
                {"layers", layers}, {"conv_layers", convs}};
  j["parallel"] = {{"ranks", run.ranks}, {"threads", run.threads}, {"mode", options.parallel}};
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
    epochs.push_back(ej);
  }
  j["epochs"] = epochs;
  j["training"] = {{"time_s", run.train_time_s},
                   {"wall_time_s", run.wall_time_s},
                   {"samples", run.train_samples},
                   {"samples_per_s", run.train_time_s > 0 ? run.train_samples / run.train_time_s : 0.0},
                   {"epochs_run", run.epochs.size()}};
  if (run.test) j["test"] = pass_json(trainer, *run.test, true);
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
