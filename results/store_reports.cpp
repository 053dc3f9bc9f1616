// Storing a finished run's report (dtnn.run_report/1 JSON) in the results store: the run row's results,
// its epochs and its layer timings (phases and trace: store_trace.h; model averaging: store_averaging.h).
// See store.h.
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/json_int.h"
#include "results/sqlite_util.h"
#include "results/store.h"
#include "results/store_averaging.h"
#include "results/store_trace.h"

namespace dtnn {

using namespace store_detail;

namespace {

std::optional<double> number_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// One epoch's "communication" object: a row per statistic over the ranks (rank0, min, median, max).
void store_epoch_comm(sqlite3* db_, const std::string& path_, int64_t run_id, int64_t epoch, const nlohmann::json& c) {
  for (const char* stat : {"rank0", "min", "median", "max"}) {
    const nlohmann::json& t = c.at(stat);
    Statement row(db_, path_,
                  "INSERT INTO epoch_comm (run_id, epoch, stat, mode, steps, buckets_per_step, bytes_per_step, step_s, "
                  "compute_s, comm_s, exposed_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    row.bind(1, run_id).bind(2, epoch).bind(3, std::string(stat)).bind(4, c.at("mode").get<std::string>());
    row.bind(5, json_int_at(c, "steps")).bind(6, json_int_at(c, "buckets_per_step"));
    row.bind(7, c.at("bytes_per_step").get<double>()).bind(8, t.at("step_s").get<double>());
    row.bind(9, t.at("compute_s").get<double>()).bind(10, t.at("comm_s").get<double>());
    row.bind(11, t.at("exposed_s").get<double>());
    row.run();
  }
}

}  // namespace

void ResultStore::finish_run_ok(int64_t run_id, const std::string& report_json, double duration_s) {
  finish_run_with_report(run_id, report_json, duration_s, "ok", "");
}

void ResultStore::finish_run_diverged(int64_t run_id, const std::string& report_json, const std::string& error,
                                      double duration_s) {
  finish_run_with_report(run_id, report_json, duration_s, "diverged", error);
}

void ResultStore::finish_run_with_report(int64_t run_id, const std::string& report_json, double duration_s,
                                         const std::string& status, const std::string& error) {
  const bool ok = status == "ok";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(report_json);
  } catch (const nlohmann::json::exception& e) {
    fail("run report: not valid JSON (", e.what(), ")");
  }
  try {
    if (!j.is_object() || j.value("schema", "") != "dtnn.run_report/1")
      fail("run report: not a dtnn.run_report/1 document");
    if (j.value("status", "") != status) fail("run report: status is not ", status);
    const nlohmann::json& training = j.at("training");
    const nlohmann::json& epochs = j.at("epochs");
    if (!epochs.is_array()) fail("run report: 'epochs' is not an array");
    const std::string loss = j.at("options").value("loss_func", "categorical_cross_entropy");
    auto metric = [&](const nlohmann::json& pass, const std::string& name) -> std::optional<double> {
      return pass.is_object() ? number_at(pass, name.c_str()) : std::nullopt;
    };
    std::optional<double> test_loss, test_acc, val_acc;
    if (j.contains("test")) {
      test_loss = metric(j["test"], loss);
      test_acc = metric(j["test"], "categorical_accuracy");
    }
    if (!epochs.empty() && epochs.back().contains("val")) val_acc = metric(epochs.back()["val"], "categorical_accuracy");

    Transaction tx(db_, path_);
    // A diverged run keeps its report, epochs and layers but no run-level throughput or accuracy: nothing
    // that sums or averages those columns can count it.
    std::optional<double> samples_per_s = training.at("samples_per_s").get<double>();
    if (!ok) samples_per_s = test_loss = test_acc = val_acc = std::nullopt;
    // A run that trained no sample (num_epochs = 0, --evaluate_only, a resume with nothing left) measured no
    // throughput: NULL, not 0 samples/s, which the throughput and scaling views would average in.
    if (json_int_at(training, "samples") == 0) samples_per_s = std::nullopt;
    Statement up(db_, path_,
                 "UPDATE runs SET status = ?, error = ?, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), "
                 "duration_s = ?, samples_per_s = ?, train_time_s = ?, train_samples = ?, test_loss = ?, "
                 "test_accuracy = ?, val_accuracy = ?, report = ? WHERE id = ? AND status = 'running'");
    up.bind(1, status).bind(2, ok ? std::nullopt : std::optional<std::string>(error));
    up.bind(3, duration_s).bind(4, samples_per_s);
    up.bind(5, training.at("time_s").get<double>()).bind(6, json_int_at(training, "samples"));
    up.bind(7, test_loss).bind(8, test_acc).bind(9, val_acc).bind(10, report_json).bind(11, run_id);
    up.run();
    if (sqlite3_changes(db_) != 1) fail(path_, ": run ", run_id, " is not a running run");
    for (const nlohmann::json& e : epochs) {
      const nlohmann::json train = e.value("train", nlohmann::json::object());
      const nlohmann::json val = e.value("val", nlohmann::json());
      nlohmann::json metrics = {{"train", train}};
      if (!val.is_null()) metrics["val"] = val;
      Statement row(db_, path_,
                    "INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, lr, train_loss, "
                    "train_accuracy, val_loss, val_accuracy, metrics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      row.bind(1, run_id).bind(2, json_int_at(e, "epoch")).bind(3, json_int_at(e, "samples"));
      row.bind(4, e.at("time_s").get<double>()).bind(5, e.at("samples_per_s").get<double>());
      row.bind(6, number_at(e, "lr")).bind(7, metric(train, loss)).bind(8, metric(train, "categorical_accuracy"));
      row.bind(9, metric(val, loss)).bind(10, metric(val, "categorical_accuracy")).bind(11, metrics.dump());
      row.run();
      if (e.contains("communication")) store_epoch_comm(db_, path_, run_id, json_int_at(e, "epoch"), e["communication"]);
    }
    if (j.contains("model") && j["model"].contains("layers")) {
      for (const nlohmann::json& l : j["model"]["layers"]) {
        Statement row(db_, path_,
                      "INSERT INTO layer_timings (run_id, layer_id, type, conv_algo, problem, output_shape, params, "
                      "forward_ms, backward_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
        row.bind(1, run_id).bind(2, json_int_at(l, "id")).bind(3, l.at("type").get<std::string>());
        row.bind(4, l.value("conv_algo", "")).bind(5, l.value("problem", ""));
        row.bind(6, l.value("output_shape", "")).bind(7, json_int_or(l, "params", 0));
        row.bind(8, number_at(l, "forward_ms")).bind(9, number_at(l, "backward_ms"));
        row.run();
      }
    }
    if (j.contains("placement")) {  // reports from before it have none: the columns stay ''
      const nlohmann::json& pl = j["placement"];
      Statement row(db_, path_,
                    "UPDATE runs SET scheduler = ?, cluster = ?, job_id = ?, step_id = ?, node_list = ?, "
                    "tasks_per_node = ?, launcher = ?, launcher_version = ? WHERE id = ?");
      int col = 1;
      for (const char* key : {"scheduler", "cluster", "job_id", "step_id", "node_list", "tasks_per_node", "launcher",
                              "launcher_version"})
        row.bind(col++, pl.at(key).get<std::string>());
      row.bind(col, run_id).run();
    }
    store_run_trace(db_, path_, run_id, j);
    store_run_averaging(db_, path_, run_id, j);
    tx.commit();
  } catch (const nlohmann::json::exception& e) {
    fail("run report: missing or mistyped field (", e.what(), ")");
  } catch (const Error& e) {  // json_int's "field 'epoch' holds 1e+300 ..." says what, not where
    const std::string why = e.what();
    if (why.rfind("field '", 0) == 0) fail("run report: ", why);
    throw;
  }
}

}  // namespace dtnn
