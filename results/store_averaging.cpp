// Storing a run report's model averaging figures (engine/train/report.cpp: "averaging", epochs[].averaging,
// parallel.model_averaging). Called inside finish_run_with_report's transaction. See store_averaging.h.
#include "core/json_int.h"
#include "results/store_averaging.h"

#include <optional>

#include "results/sqlite_util.h"

namespace dtnn::store_detail {

namespace {

struct Figures {
  int64_t averages;
  double bytes, wait_rank0, wait_max;
};

// One "averaging" object's four figures, refusing negative ones (a stored result is never wrong).
Figures figures(const nlohmann::json& a, const std::string& where) {
  const Figures f{json_int_at(a, "averages"), a.at("bytes_per_rank").get<double>(),
                  a.at("wait_s_rank0").get<double>(), a.at("wait_s_max").get<double>()};
  if (f.averages < 0 || f.bytes < 0 || f.wait_rank0 < 0 || f.wait_max < 0)
    fail("run report: ", where, " has a negative averages, bytes_per_rank or wait");
  return f;
}

}  // namespace

void store_run_averaging(sqlite3* db, const std::string& path, int64_t run_id, const nlohmann::json& report) {
  const nlohmann::json& epochs = report.at("epochs");
  if (!report.contains("averaging")) {
    for (const nlohmann::json& e : epochs)
      if (e.contains("averaging")) fail("run report: epoch ", e.at("epoch").dump(), " has averaging but the run has none");
    return;
  }
  const nlohmann::json& a = report.at("averaging");
  const std::string mode = report.at("parallel").at("model_averaging").get<std::string>();
  if (mode != "synchronous" && mode != "asynchronous" && mode != "partially_asynchronous")
    fail("run report: averaging with parallel.model_averaging '", mode,
         "' (not synchronous, asynchronous or partially_asynchronous)");
  const int64_t every_epochs = json_int_at(a, "every_epochs"), every_steps = json_int_at(a, "every_steps");
  if (every_epochs < 0 || every_steps < 0) fail("run report: averaging has a negative every_epochs or every_steps");
  const Figures run = figures(a, "averaging");
  std::optional<std::string> merges;  // asynchronous modes: each rank's merges
  if (a.contains("merges_per_rank")) {
    if (!a.at("merges_per_rank").is_array()) fail("run report: averaging.merges_per_rank is not an array");
    for (const nlohmann::json& m : a.at("merges_per_rank"))
      if (json_int(m, "merges_per_rank") < 0) fail("run report: averaging.merges_per_rank has a negative count");
    merges = a.at("merges_per_rank").dump();
  }
  Statement row(db, path,
                "INSERT INTO run_averaging (run_id, mode, every_epochs, every_steps, averages, bytes_per_rank, "
                "wait_s_rank0, wait_s_max, merges_per_rank) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  row.bind(1, run_id).bind(2, mode).bind(3, every_epochs).bind(4, every_steps).bind(5, run.averages);
  row.bind(6, run.bytes).bind(7, run.wait_rank0).bind(8, run.wait_max).bind(9, merges);
  row.run();
  Statement epoch(db, path,
                  "INSERT INTO epoch_averaging (run_id, epoch, averages, bytes_per_rank, wait_s_rank0, wait_s_max) "
                  "VALUES (?, ?, ?, ?, ?, ?)");
  for (const nlohmann::json& e : epochs) {
    if (!e.contains("averaging")) continue;
    const int64_t n = json_int_at(e, "epoch");
    const Figures f = figures(e.at("averaging"), "epoch " + std::to_string(n) + "'s averaging");
    epoch.bind(1, run_id).bind(2, n).bind(3, f.averages).bind(4, f.bytes).bind(5, f.wait_rank0).bind(6, f.wait_max);
    epoch.run();
    epoch.reset();
  }
}

}  // namespace dtnn::store_detail
