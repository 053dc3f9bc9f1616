// See runner_predict.h.
#include "experiments/runner_predict.h"
#include "experiments/source_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/perfmodel/predict_command.h"
#include "analysis/perfmodel/predict_store.h"
#include "core/error.h"
#include "core/strings.h"

namespace dtnn {

namespace {

// The trial's parameters that a measured run of its configuration has too.
std::map<std::string, std::string> measured_params(const std::map<std::string, std::string>& params) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : params)
    if (name != "ranks" && !is_prediction_param(name)) out[name] = value;
  return out;
}

perf::PredictCommandOptions predict_options(const std::string& db, const Trial& trial, int64_t run) {
  perf::PredictCommandOptions o;
  o.db = db;
  o.from_run = run;
  o.ranks = std::to_string(trial.ranks());
  o.platform = trial.get("platform", "ib100");
  o.mode = trial.get("non_blocking_mpi", "False") == "True" ? "non_blocking" : "blocking";
  o.scaling = trial.get("scaling", "weak");
  // Strong scaling: the matrix's batch_size is the global batch (as for measured trials).
  if (o.scaling == "strong") o.global_batch = std::stod(trial.get("batch_size", "64"));
  o.json = true;
  return o;
}

std::string command_line(const perf::PredictCommandOptions& o) {
  std::string s = "dtnn predict --from-run " + std::to_string(o.from_run.value_or(0)) + " --db " + shell_quote(o.db) +
                  " --ranks " + o.ranks + " --platform " + shell_quote(o.platform) + " --mode " + o.mode +
                  " --scaling " + o.scaling;
  if (o.global_batch > 0) s += " --global_batch " + format_double(o.global_batch);
  return s + " --store";
}

// The SimGrid platform file of a preset (suites/step_replay/platforms/), "" when there is none.
std::string platform_file(const std::string& platform) {
  static const std::map<std::string, std::string> files = {{"eth10g", "eth10g.xml"}, {"ib100", "ib100_fattree.xml"},
                                                           {"nvlink8", "nvlink8.xml"}, {"localhost2", "localhost2.xml"}};
  const auto it = files.find(platform);
  return it == files.end() ? "" : source_dir() + "/suites/step_replay/platforms/" + it->second;
}

// predictor = "simgrid": the calibration run's step profile replayed by suites/step_replay under SimGrid's
// smpirun (suites/step_replay/simgrid_replay.sh, which runs 1 rank too for the efficiency), its row for the trial's rank
// count stored with source simgrid.
PredictedOutcome simgrid_trial(ResultStore& store, int64_t matrix_id, const Trial& trial, int64_t run,
                               perf::PredictCommandOptions o) {
  const std::string xml = platform_file(o.platform);
  const std::string proxy = DTNN_STEP_REPLAY_SMPI;
  const std::string script = source_dir() + "/suites/step_replay/simgrid_replay.sh";
  std::string command = "dtnn predict --from-run " + std::to_string(run) + " --db " + shell_quote(store.path()) +
                        " --write-profile P.json; PREDICTION_JSON=R.json " + script + " P.json " + xml + " " +
                        std::to_string(trial.ranks()) + " -- --mode " + o.mode +
                        (o.global_batch > 0 ? " --global-batch " + format_double(o.global_batch) : "") +
                        "; dtnn predict --from-simgrid R.json --store";
  if (xml.empty()) return {"unsupported", "no SimGrid platform file for platform " + o.platform, command};
  if (std::system("command -v smpirun > /dev/null 2>&1") != 0)
    return {"unsupported", "smpirun not found (Debian: apt-get install libsimgrid-dev)", command};
  if (!std::filesystem::exists(proxy))
    return {"unsupported", proxy + " is not built (ninja step_replay_smpi; needs smpicxx)", command};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("dtnn_simgrid_" + std::to_string(::getpid()) + "_" + std::to_string(run));
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() { std::filesystem::remove_all(d); }
  } cleanup{dir};
  const std::string profile = (dir / "profile.json").string(), result = (dir / "prediction.json").string(),
                    log = (dir / "log").string();
  o.write_profile = profile;
  std::ostringstream ignored;
  try {
    perf::run_predict_command(o, ignored);
  } catch (const Error& e) {
    return {"failed", std::string("dtnn predict: ") + e.what(), command};
  }
  const std::string sh = "PREDICTION_JSON=" + shell_quote(result) + " STEP_REPLAY_SMPI=" + shell_quote(proxy) +
                         " bash " + shell_quote(script) + " " + shell_quote(profile) + " " + shell_quote(xml) + " " +
                         std::to_string(trial.ranks()) + " -- --mode " + o.mode +
                         (o.global_batch > 0 ? " --global-batch " + format_double(o.global_batch) : "") + " > " +
                         shell_quote(log) + " 2>&1";
  if (std::system(sh.c_str()) != 0) {
    std::string last, line;
    std::ifstream in(log);
    while (std::getline(in, line))
      if (!line.empty()) last = line;
    return {"failed", "suites/step_replay/simgrid_replay.sh failed: " + last, command};
  }
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(result));
  nlohmann::json rows = nlohmann::json::array();
  for (const nlohmann::json& r : doc.at("rows"))
    if (r.at("ranks").get<int>() == trial.ranks()) rows.push_back(r);
  doc["rows"] = rows;
  doc["platform"]["name"] = o.platform;  // the preset the trial names (the script names the file)
  perf::PredictionOrigin origin = perf::origin_of_run(store, run);
  origin.source = "simgrid";
  origin.matrix_id = matrix_id;
  origin.trial_key = trial.key;
  origin.label = trial.label;
  store.add_predictions(perf::prediction_rows(doc, origin));
  return {"ok", "", command};
}

}  // namespace

bool is_prediction_param(const std::string& name) {
  return name == "mode" || name == "platform" || name == "predictor";
}

bool is_predicted(const Trial& trial) { return trial.get("mode", "run") == "predict"; }

std::string predicted_description(const Trial& trial) {
  return "predicted (" + trial.get("predictor", "model") + ", platform " + trial.get("platform", "ib100") + ", " +
         std::to_string(trial.ranks()) + " ranks), calibrated from the store's measured run of this configuration "
         "with the fewest ranks on this machine and commit";
}

int64_t calibration_run(const ResultStore& store, const Trial& trial, int64_t env_id) {
  const std::map<std::string, std::string> want = measured_params(trial.params);
  // The model narrows the candidates; the parameters decide.
  const std::string model = trial.get("model");
  std::string quoted = "'";
  for (char c : model) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  const QueryResult r = store.query("SELECT id, params FROM runs WHERE status = 'ok' AND samples_per_s IS NOT NULL "
                                    "AND environment_id = " + std::to_string(env_id) + " AND model = " + quoted +
                                    "' ORDER BY ranks, id DESC");
  for (const auto& row : r.rows) {
    std::map<std::string, std::string> have;
    const nlohmann::json params = nlohmann::json::parse(row[1].value_or("{}"));
    for (const auto& [name, value] : params.items())
      have[name] = value.is_string() ? value.get<std::string>() : value.dump();
    if (measured_params(have) == want) return std::stoll(row[0].value());
  }
  return 0;
}

PredictedOutcome run_predicted_trial(ResultStore& store, int64_t matrix_id, const Trial& trial, int64_t env_id) {
  PredictedOutcome out;
  const int64_t run = calibration_run(store, trial, env_id);
  perf::PredictCommandOptions o = predict_options(store.path(), trial, run);
  out.command = command_line(o);
  if (trial.framework() != "dtnn") return {"unsupported", "the performance model predicts dtnn, not " + trial.framework(), out.command};
  if (run == 0)
    return {"failed",
            "no ok measured run of this configuration on this machine and commit in " + store.path() +
            " to calibrate the prediction from: add "
            "the same trial with mode = \"run\" (e.g. ranks = 1) to the matrix, or run it first",
            out.command};
  if (trial.get("predictor", "model") == "simgrid") return simgrid_trial(store, matrix_id, trial, run, o);
  std::ostringstream text;
  try {
    perf::run_predict_command(o, text);
  } catch (const Error& e) {
    return {"failed", std::string("dtnn predict: ") + e.what(), out.command};
  }
  perf::PredictionOrigin origin = perf::origin_of_run(store, run);
  origin.matrix_id = matrix_id;
  origin.trial_key = trial.key;
  origin.label = trial.label;
  store.add_predictions(perf::prediction_rows(nlohmann::json::parse(text.str()), origin));
  out.status = "ok";
  return out;
}

}  // namespace dtnn
