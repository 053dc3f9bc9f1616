// See predict_store.h.
#include "analysis/perfmodel/predict_store.h"

#include <ostream>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_int.h"

namespace dtnn::perf {

using nlohmann::json;

PredictionOrigin origin_of_run(const ResultStore& store, int64_t run_id) {
  const QueryResult r = store.query("SELECT environment_id, config_key, matrix_id FROM runs WHERE id = " +
                                    std::to_string(run_id));
  DTNN_CHECK(!r.rows.empty(), store.path(), ": no such run ", run_id);
  PredictionOrigin o;
  o.calibration_runs = {run_id};
  o.environment_id = std::stoll(r.rows[0][0].value());
  o.config_key = r.rows[0][1];
  o.matrix_id = std::stoll(r.rows[0][2].value());
  o.profile = "run " + std::to_string(run_id);
  return o;
}

std::vector<PredictionRow> prediction_rows(const json& doc, const PredictionOrigin& origin) {
  DTNN_CHECK(doc.is_object() && doc.contains("schema") && doc["schema"] == "dtnn.prediction/1" && doc.contains("rows"),
             "not a dtnn.prediction/1 document");
  json provenance = {{"profile", origin.profile}};
  for (const char* key : {"source_run", "measured", "notes", "fit", "parameters"})
    if (doc.contains(key)) provenance[key] = doc[key];
  std::vector<PredictionRow> rows;
  try {
    for (const json& r : doc.at("rows")) {
      PredictionRow p;
      p.source = origin.source;
      p.model_version = doc.at("model_version").get<std::string>();
      p.model_kind = doc.at("model_kind").get<std::string>();
      p.model = doc.at("model").get<std::string>();
      p.platform = doc.at("platform").at("name").get<std::string>();
      p.platform_params = doc.at("platform").dump();
      if (doc.contains("rules")) p.rules = doc["rules"].get<std::string>();
      p.mode = doc.at("mode").get<std::string>();
      p.scaling = doc.at("scaling").get<std::string>();
      // (json_int: a 1e30 is refused, not cast)
      if (doc.contains("batch_size")) p.batch_size = json_int(doc["batch_size"], "batch_size");
      const int64_t ranks = json_int(r.at("ranks"), "ranks");
      DTNN_CHECK(ranks >= 1 && ranks <= INT32_MAX, "field 'ranks' holds ", ranks, ", not a rank count");
      p.ranks = static_cast<int>(ranks);
      p.samples_per_rank = r.at("samples_per_rank").get<double>();
      p.global_batch = p.samples_per_rank * p.ranks;
      p.step_s = r.at("step_s").get<double>();
      p.compute_s = r.at("compute_s").get<double>();
      p.exposed_s = r.at("exposed_s").get<double>();
      p.comm_s = r.at("comm_s").get<double>();
      p.samples_per_s = r.at("samples_per_s").get<double>();
      p.efficiency = r.at("efficiency").get<double>();
      p.speedup = p.efficiency * p.ranks;
      p.algorithms = r.at("allreduce").get<std::string>();
      p.variant = doc.value("variant", std::string());  // absent: SimGrid's documents, older dtnn
      p.provenance = provenance.dump();
      p.calibration_runs = origin.calibration_runs;
      p.environment_id = origin.environment_id;
      p.matrix_id = origin.matrix_id;
      p.config_key = origin.config_key;
      p.trial_key = origin.trial_key;
      p.label = origin.label;
      rows.push_back(std::move(p));
    }
  } catch (const json::exception& e) {
    fail("a dtnn.prediction/1 document without a field the store needs (", e.what(), ")");
  }
  return rows;
}

int run_predict_and_store(const PredictCommandOptions& options, std::ostream& out) {
  PredictCommandOptions o = options;
  o.json = true;
  std::ostringstream text;
  run_predict_command(o, text);  // throws before anything is stored
  PredictionOrigin origin;
  ResultStore store = ResultStore::open_existing(options.db);
  if (o.from_run) origin = origin_of_run(store, *o.from_run);
  else if (!o.from_report.empty()) origin.profile = "report " + o.from_report;
  else if (!o.profile.empty()) origin.profile = "profile " + o.profile;
  const std::vector<int64_t> ids = store.add_predictions(prediction_rows(json::parse(text.str()), origin));
  if (options.json) {
    out << text.str();
    return 0;
  }
  o.json = false;
  o.write_profile.clear();  // written once already
  const int rc = run_predict_command(o, out);
  out << "stored " << ids.size() << " predicted row" << (ids.size() == 1 ? "" : "s") << " in " << options.db
      << " (predictions " << ids.front() << ".." << ids.back() << "; dtnn query predictions)\n";
  return rc;
}

int store_simgrid_prediction(const std::string& file, const std::string& db, std::ostream& out) {
  json doc;
  try {
    doc = json::parse(read_file(file, kMaxJsonFileBytes));
  } catch (const json::exception&) {
    fail(file, ": not JSON (expected suites/step_replay/simgrid_replay.sh's PREDICTION_JSON output)");
  }
  DTNN_CHECK(doc.is_object() && doc.contains("source") && doc["source"] == "simgrid", file,
             ": not a SimGrid prediction (\"source\": \"simgrid\"; suites/step_replay/simgrid_replay.sh's PREDICTION_JSON)");
  ResultStore store = ResultStore::open_existing(db);
  PredictionOrigin origin;
  if (doc.contains("source_run") && doc["source_run"].is_number_integer()) {
    origin = origin_of_run(store, doc["source_run"].get<int64_t>());
  } else {
    origin.profile = "simgrid " + file;
  }
  origin.source = "simgrid";
  std::vector<PredictionRow> rows;
  try {
    rows = prediction_rows(doc, origin);
  } catch (const Error& e) {
    fail(file, ": ", e.what());
  }
  DTNN_CHECK(!rows.empty(), file, ": no rows");
  const std::vector<int64_t> ids = store.add_predictions(rows);
  out << "stored " << ids.size() << " SimGrid row" << (ids.size() == 1 ? "" : "s") << " of " << file << " in " << db
      << " (predictions " << ids.front() << ".." << ids.back() << "; dtnn query predictions)\n";
  return 0;
}

}  // namespace dtnn::perf
