// Storing a run report's "phases" and "trace" objects (engine/train/report.cpp): run_phases, run_stragglers,
// run_timeline (migration 7). Called inside finish_run_with_report's transaction.
#include "core/json_int.h"
#include "results/store_trace.h"

#include "results/sqlite_util.h"

namespace dtnn::store_detail {

void store_run_trace(sqlite3* db, const std::string& path, int64_t run_id, const nlohmann::json& report) {
  if (report.contains("phases")) {
    const nlohmann::json& p = report.at("phases");
    const std::string source = p.at("source").get<std::string>();
    if (source != "trace" && source != "comm_timers") fail("run report: phases.source is neither trace nor comm_timers");
    Statement row(db, path,
                  "INSERT INTO run_phases (run_id, rank, phase, layer, calls, total_s, median_s, source) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const nlohmann::json& r : p.at("rows")) {
      std::optional<double> median;
      if (r.contains("median_s")) median = r.at("median_s").get<double>();
      row.bind(1, run_id).bind(2, json_int_at(r, "rank")).bind(3, r.at("phase").get<std::string>());
      row.bind(4, json_int_at(r, "layer")).bind(5, json_int_at(r, "calls"));
      row.bind(6, r.at("total_s").get<double>()).bind(7, median).bind(8, source);
      row.run();
      row.reset();
    }
  }
  if (!report.contains("trace")) return;
  const nlohmann::json& t = report.at("trace");
  Statement straggler(db, path,
                      "INSERT INTO run_stragglers (run_id, step, slowest_rank, busy_s, median_busy_s, lag_s, phase, "
                      "phase_lag_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  for (const nlohmann::json& s : t.at("stragglers")) {
    straggler.bind(1, run_id).bind(2, json_int_at(s, "step")).bind(3, json_int_at(s, "slowest_rank"));
    straggler.bind(4, s.at("busy_s").get<double>()).bind(5, s.at("median_busy_s").get<double>());
    straggler.bind(6, s.at("lag_s").get<double>()).bind(7, s.at("phase").get<std::string>());
    straggler.bind(8, s.at("phase_lag_s").get<double>());
    straggler.run();
    straggler.reset();
  }
  const nlohmann::json& tl = t.at("timeline");
  const int64_t step = json_int_at(tl, "step");
  Statement event(db, path,
                  "INSERT INTO run_timeline (run_id, step, rank, lane, kind, name, id, begin_s, end_s, bytes) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const nlohmann::json& e : tl.at("events")) {
    event.bind(1, run_id).bind(2, step).bind(3, json_int_at(e, "rank")).bind(4, json_int_at(e, "lane"));
    event.bind(5, e.at("kind").get<std::string>()).bind(6, e.at("name").get<std::string>());
    event.bind(7, json_int_at(e, "id")).bind(8, e.at("begin_s").get<double>());
    event.bind(9, e.at("end_s").get<double>()).bind(10, json_int_or(e, "bytes", 0));
    event.run();
    event.reset();
  }
}

}  // namespace dtnn::store_detail
