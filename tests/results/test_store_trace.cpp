// The store's trace figures (migration 7): a report's "phases" rows become run_phases, its "trace"
// stragglers and timeline run_stragglers and run_timeline; v_phases sums layers per phase and divides by the
// step calls, v_stragglers summarises a run's stragglers. The objects are planted in a real 1-rank report
// (every other field as `dtnn train` writes it) and the views' figures worked out by hand. A bad phases
// source or a straggler without its lag is refused and the whole report rolled back. A version-6 database
// migrates with its runs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "helpers.h"
#include "results/store.h"
#include "store_test_helpers.h"

using Catch::Contains;

namespace {

namespace fs = std::filesystem;

using dtnn::test::fresh_db;
using dtnn::test::one;

// A real report of `dtnn train` (1 rank, untraced: it has no "phases" and no "trace").
const nlohmann::json& plain_report() {
  static const nlohmann::json j = [] {
    const std::string path = dtnn::test::temp_path("trace_store_report.json");
    const std::string cmd = std::string(DTNN_BINARY) +
                            " train --model=simplemlp --use_synthetic_data=True --num_epochs=1 --steps_per_epoch=2"
                            " --threads=1 --progress=False --evaluate_on_test=False --report=" + path +
                            " > /dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    fs::remove(path);
    return nlohmann::json::parse(ss.str());
  }();
  return j;
}

nlohmann::json phase(int rank, const std::string& name, int layer, int64_t calls, double total, double median) {
  return {{"rank", rank}, {"phase", name}, {"layer", layer}, {"calls", calls}, {"total_s", total}, {"median_s", median}};
}

nlohmann::json straggler(int64_t step, int slowest, double busy, double median_busy, double lag,
                         const std::string& name, double phase_lag) {
  return {{"step", step},           {"slowest_rank", slowest}, {"busy_s", busy},          {"median_busy_s", median_busy},
          {"lag_s", lag},           {"phase", name},           {"phase_lag_s", phase_lag}};
}

// A 2-rank traced report. Phases: rank 0 steps 4 x 0.5 s = 2 s, forward layer 1 0.4 s and layer 3 0.6 s
// (v_phases: forward 1000 ms, 250 ms per step), backward layer 3 0.8 s; rank 1 steps 4 calls 2.2 s,
// forward 0.3 + 0.5 s (800 ms, 200 ms per step). Stragglers of steps 1..3: median busy 0.1, 0.1, 0.2 s,
// lags 0.01, 0.03, 0.02 s (fractions 0.1, 0.3, 0.1), slowest ranks 1, 1, 0, phases backward 3 twice.
nlohmann::json traced_report() {
  nlohmann::json j = plain_report();
  j["parallel"]["ranks"] = 2;
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back(phase(0, "step", -1, 4, 2.0, 0.5));
  rows.push_back(phase(0, "forward", 1, 4, 0.4, 0.1));
  rows.push_back(phase(0, "forward", 3, 4, 0.6, 0.125));
  rows.push_back(phase(0, "backward", 3, 4, 0.8, 0.25));
  rows.push_back(phase(1, "step", -1, 4, 2.2, 0.55));
  rows.push_back(phase(1, "forward", 1, 4, 0.3, 0.075));
  rows.push_back(phase(1, "forward", 3, 4, 0.5, 0.125));
  rows.push_back(phase(1, "data_wait", -1, 5, 0.05, 0.01));
  j["phases"] = {{"source", "trace"}, {"rows", rows}};
  nlohmann::json stragglers = nlohmann::json::array();
  stragglers.push_back(straggler(1, 1, 0.11, 0.1, 0.01, "backward 003_Conv2D", 0.008));
  stragglers.push_back(straggler(2, 1, 0.13, 0.1, 0.03, "backward 003_Conv2D", 0.02));
  stragglers.push_back(straggler(3, 0, 0.22, 0.2, 0.02, "data_wait", 0.015));
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"rank", 0}, {"lane", 0}, {"kind", "step"}, {"name", "step"}, {"id", -1},
                    {"begin_s", 0.001}, {"end_s", 0.5}});
  events.push_back({{"rank", 0}, {"lane", 1}, {"kind", "in_flight"}, {"name", "bucket 0 allreduce"}, {"id", 0},
                    {"begin_s", 0.2}, {"end_s", 0.3}, {"bytes", 4096}});
  events.push_back({{"rank", 1}, {"lane", 0}, {"kind", "data_wait"}, {"name", "data_wait"}, {"id", -1},
                    {"begin_s", 0.0}, {"end_s", 0.002}});
  events.push_back({{"rank", 1}, {"lane", 0}, {"kind", "forward"}, {"name", "003_Conv2D forward"}, {"id", 3},
                    {"begin_s", 0.01}, {"end_s", 0.05}});
  j["trace"] = {{"files", {"/x/run.trace.json", "/x/run.trace.csv"}},
                {"ranks", 2},
                {"dropped_events", 0},
                {"clock_residual_s", 1e-5},
                {"stragglers", stragglers},
                {"timeline", {{"step", 2}, {"events", events}}}};
  return j;
}

using Fixture = dtnn::test::RunFixture;

}  // namespace

TEST_CASE("store: a traced report's phases, stragglers and timeline, v_phases and v_stragglers", "[store]") {
  Fixture f("trace_store");
  const nlohmann::json report = traced_report();
  const int64_t run = f.begin("traced", 2);
  f.store.finish_run_ok(run, report.dump(), 1.0);
  f.store.set_trace_path(run, "/x/run.trace.json");
  const std::string where = " WHERE run_id = " + std::to_string(run);
  CHECK(one(f.store, "SELECT status || ',' || trace_path FROM runs WHERE id = " + std::to_string(run)) ==
        "ok,/x/run.trace.json");

  // Every row as the report has it.
  REQUIRE(f.rows("run_phases", run) == 8);
  for (const nlohmann::json& r : report["phases"]["rows"]) {
    const dtnn::QueryResult q = f.store.query(
        "SELECT calls, total_s, median_s, source FROM run_phases" + where + " AND rank = " + r["rank"].dump() +
        " AND phase = '" + r["phase"].get<std::string>() + "' AND layer = " + r["layer"].dump());
    INFO(r.dump());
    REQUIRE(q.rows.size() == 1);
    CHECK(std::stoll(*q.rows[0][0]) == r["calls"].get<int64_t>());
    CHECK(std::stod(*q.rows[0][1]) == Approx(r["total_s"].get<double>()));
    CHECK(std::stod(*q.rows[0][2]) == Approx(r["median_s"].get<double>()));
    CHECK(*q.rows[0][3] == "trace");
  }
  REQUIRE(f.rows("run_stragglers", run) == 3);
  for (const nlohmann::json& s : report["trace"]["stragglers"]) {
    const dtnn::QueryResult q = f.store.query(
        "SELECT slowest_rank, busy_s, median_busy_s, lag_s, phase, phase_lag_s FROM run_stragglers" + where +
        " AND step = " + s["step"].dump());
    INFO(s.dump());
    REQUIRE(q.rows.size() == 1);
    CHECK(std::stoll(*q.rows[0][0]) == s["slowest_rank"].get<int64_t>());
    CHECK(std::stod(*q.rows[0][1]) == Approx(s["busy_s"].get<double>()));
    CHECK(std::stod(*q.rows[0][2]) == Approx(s["median_busy_s"].get<double>()));
    CHECK(std::stod(*q.rows[0][3]) == Approx(s["lag_s"].get<double>()));
    CHECK(*q.rows[0][4] == s["phase"].get<std::string>());
    CHECK(std::stod(*q.rows[0][5]) == Approx(s["phase_lag_s"].get<double>()));
  }
  const dtnn::QueryResult tl = f.store.query(
      "SELECT step, rank, lane, kind, name, id, begin_s, end_s, bytes FROM run_timeline" + where +
      " ORDER BY rank, lane, begin_s");
  const auto& events = report["trace"]["timeline"]["events"];
  REQUIRE(tl.rows.size() == events.size());
  for (size_t i = 0; i < events.size(); ++i) {  // the planted events are in (rank, lane, begin) order
    const nlohmann::json& e = events[i];
    const auto& r = tl.rows[i];
    INFO(e.dump());
    CHECK(*r[0] == "2");  // the timeline's step on every event
    CHECK(std::stoll(*r[1]) == e["rank"].get<int64_t>());
    CHECK(std::stoll(*r[2]) == e["lane"].get<int64_t>());
    CHECK(*r[3] == e["kind"].get<std::string>());
    CHECK(*r[4] == e["name"].get<std::string>());
    CHECK(std::stoll(*r[5]) == e["id"].get<int64_t>());
    CHECK(std::stod(*r[6]) == Approx(e["begin_s"].get<double>()));
    CHECK(std::stod(*r[7]) == Approx(e["end_s"].get<double>()));
    CHECK(std::stoll(*r[8]) == e.value("bytes", int64_t{0}));  // absent: 0
  }

  // v_phases: forward summed over layers 1 and 3, divided by the rank's 4 step calls.
  const std::string v = "SELECT calls || ',' || total_ms || ',' || ms_per_step FROM v_phases" + where;
  CHECK(one(f.store, v + " AND rank = 0 AND phase = 'forward'") == "8,1000.0,250.0");
  CHECK(one(f.store, v + " AND rank = 0 AND phase = 'backward'") == "4,800.0,200.0");
  CHECK(one(f.store, v + " AND rank = 0 AND phase = 'step'") == "4,2000.0,500.0");
  CHECK(one(f.store, v + " AND rank = 1 AND phase = 'forward'") == "8,800.0,200.0");
  CHECK(one(f.store, v + " AND rank = 1 AND phase = 'data_wait'") == "5,50.0,12.5");
  CHECK(one(f.store, "SELECT count(*) FROM v_phases" + where) == "6");
  CHECK(one(f.store, "SELECT model || ',' || ranks || ',' || source FROM v_phases" + where +
                         " AND rank = 1 AND phase = 'step'") == "simplemlp,2,trace");

  // v_stragglers: 3 steps; median busy (0.1 + 0.1 + 0.2) / 3 s; lags 0.01, 0.03, 0.02 s; lag fractions
  // 0.1, 0.3, 0.1 -> 0.1667; rank 1 slowest twice; backward 003_Conv2D twice.
  const dtnn::QueryResult s = f.store.query(
      "SELECT steps, median_busy_ms, mean_lag_ms, max_lag_ms, mean_lag_fraction, most_often_slowest, "
      "times_slowest, usual_phase, ranks FROM v_stragglers" + where);
  REQUIRE(s.rows.size() == 1);
  const auto& sr = s.rows[0];
  CHECK(*sr[0] == "3");
  CHECK(*sr[1] == "133.333");
  CHECK(*sr[2] == "20.0");
  CHECK(*sr[3] == "30.0");
  CHECK(*sr[4] == "0.1667");
  CHECK(*sr[5] == "1");
  CHECK(*sr[6] == "2");
  CHECK(*sr[7] == "backward 003_Conv2D");
  CHECK(*sr[8] == "2");

  // Deleting the run deletes its rows (ON DELETE CASCADE).
  f.store.exec("DELETE FROM epochs WHERE run_id = " + std::to_string(run));
  f.store.exec("DELETE FROM runs WHERE id = " + std::to_string(run));
  CHECK(one(f.store, "SELECT count(*) FROM run_phases") == "0");
  CHECK(one(f.store, "SELECT count(*) FROM run_stragglers") == "0");
  CHECK(one(f.store, "SELECT count(*) FROM run_timeline") == "0");
}

TEST_CASE("store: a bad phases source or a straggler without its lag rolls the whole report back", "[store]") {
  Fixture f("trace_store_bad");
  nlohmann::json bogus = traced_report();
  bogus["phases"]["source"] = "bogus";
  nlohmann::json no_lag = traced_report();
  no_lag["trace"]["stragglers"][1].erase("lag_s");
  nlohmann::json no_timeline = traced_report();
  no_timeline["trace"].erase("timeline");
  std::vector<int64_t> runs;
  for (const auto& [bad, says] : {std::pair{bogus, "neither trace nor comm_timers"}, {no_lag, "lag_s"},
                                  {no_timeline, "timeline"}}) {
    const int64_t run = f.begin("bad" + std::to_string(runs.size()), 2);
    runs.push_back(run);
    INFO(says);
    CHECK_THROWS_AS(f.store.finish_run_ok(run, bad.dump(), 1.0), dtnn::Error);
    CHECK_THROWS_WITH(f.store.finish_run_ok(run, bad.dump(), 1.0), Contains(says));
    CHECK(one(f.store, "SELECT status FROM runs WHERE id = " + std::to_string(run)) == "running");
    // Phases stored before the bad straggler are gone with the rest of the report.
    for (const char* table : {"run_phases", "run_stragglers", "run_timeline", "epochs"}) CHECK(f.rows(table, run) == 0);
  }
  // Nothing was left behind: the run still takes its good report.
  f.store.finish_run_ok(runs[1], traced_report().dump(), 1.0);
  CHECK(f.rows("run_phases", runs[1]) == 8);
  CHECK(f.rows("run_stragglers", runs[1]) == 3);
  CHECK(f.rows("run_timeline", runs[1]) == 4);
}

TEST_CASE("store: comm_timers phases have no median and no trace rows", "[store]") {
  Fixture f("trace_store_comm");
  nlohmann::json j = plain_report();
  j["parallel"]["ranks"] = 2;
  nlohmann::json rows = nlohmann::json::array();
  for (int r = 0; r < 2; ++r)
    for (auto [name, total] : {std::pair{"step", 1.0 + r}, {"compute", 0.75}, {"comm_calls", 0.125}, {"exposed_comm", 0.1}})
      rows.push_back({{"rank", r}, {"phase", name}, {"layer", -1}, {"calls", 8}, {"total_s", total}});
  j["phases"] = {{"source", "comm_timers"}, {"rows", rows}};
  const int64_t run = f.begin("comm", 2);
  f.store.finish_run_ok(run, j.dump(), 1.0);
  const std::string where = " WHERE run_id = " + std::to_string(run);
  CHECK(f.rows("run_phases", run) == 8);
  CHECK(one(f.store, "SELECT count(*) FROM run_phases" + where + " AND median_s IS NULL AND source = 'comm_timers'") ==
        "8");
  CHECK(f.rows("run_stragglers", run) == 0);
  CHECK(f.rows("run_timeline", run) == 0);
  CHECK(one(f.store, "SELECT trace_path FROM runs WHERE id = " + std::to_string(run)) == "NULL");
  // Rank 1's exposed communication: 100 ms over 8 step calls.
  CHECK(one(f.store, "SELECT ms_per_step FROM v_phases" + where + " AND rank = 1 AND phase = 'exposed_comm'") == "12.5");
  CHECK(one(f.store, "SELECT ms_per_step FROM v_phases" + where + " AND rank = 1 AND phase = 'step'") == "250.0");
  CHECK(one(f.store, "SELECT count(*) FROM v_stragglers") == "0");

  // A report with neither object (a plain 1-rank run) stores no rows at all.
  const int64_t plain = f.begin("plain", 1);
  f.store.finish_run_ok(plain, plain_report().dump(), 1.0);
  CHECK(f.rows("run_phases", plain) == 0);
}

TEST_CASE("store: a version-6 database migrates to the trace tables and keeps its runs", "[store]") {
  const std::string path = fresh_db("trace_v6");
  {
    dtnn::ResultStore v6 = dtnn::ResultStore::open_at_version(path, 6);
    REQUIRE(v6.version() == 6);
    CHECK_THROWS(v6.query("SELECT * FROM run_phases"));
    CHECK_THROWS(v6.query("SELECT trace_path FROM runs"));
    v6.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
            "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
            " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
            " 'c0ffee',0,'{}');"
            "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
            " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
            " log_path, runner_pid, runner_host, samples_per_s) VALUES (1, 1, 'k1', 'c', 'l', 0, 'dtnn', 'simplecnn',"
            " 'mnist', 'auto', 2, 1, 'cpu', 64, 5, 'sgd', '{}', 'ok', 'x', 'y', 1, 'h', 1900.0);");
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() >= 7);  // and later migrations
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM runs") == "1");
  CHECK(one(latest, "SELECT samples_per_s || ',' || ranks FROM runs WHERE trial_key = 'k1'") == "1900.0,2");
  CHECK(one(latest, "SELECT trace_path FROM runs WHERE trial_key = 'k1'") == "NULL");
  for (const char* t : {"run_phases", "run_stragglers", "run_timeline", "v_phases", "v_stragglers"})
    CHECK(one(latest, std::string("SELECT count(*) FROM ") + t) == "0");
  // The migrated run takes a trace path like a new one.
  latest.set_trace_path(1, "/x/t.json");
  CHECK(one(latest, "SELECT trace_path FROM runs WHERE id = 1") == "/x/t.json");
}
