// The predictions table (migration 8): predicted rows apart from measured runs, and v_scaling with a source
// column. A version-7 database with runs migrates with its v_scaling rows unchanged in value (compared with
// the rows version 7 gave); predicted rows join the measured group of their calibration run with the values
// worked out by hand; the newest prediction of a curve and rank count wins; a bad row is refused whole.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "results/store.h"
#include "store_test_helpers.h"

using Catch::Contains;

namespace {

using dtnn::test::fresh_db;
using dtnn::test::one;

// Every row of a query as "a|b|c" lines.
std::vector<std::string> lines(const dtnn::ResultStore& store, const std::string& sql) {
  std::vector<std::string> out;
  for (const auto& row : store.query(sql).rows) {
    std::string s;
    for (const auto& v : row) s += (s.empty() ? "" : "|") + v.value_or("NULL");
    out.push_back(s);
  }
  return out;
}

// Runs 1..4 of one configuration 'c' (ranks 1, 1, 2, 4 at 1000, 1200, 1900, 3000 samples/s) and run 5 of
// another (ranks 1), all ok, plus a failed one.
void add_runs(dtnn::ResultStore& s) {
  s.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
         "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
         " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
         " 'c0ffee',0,'{}');");
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"c", "1, 1000.0, 'ok'"}, {"c", "1, 1200.0, 'ok'"}, {"c", "2, 1900.0, 'ok'"}, {"c", "4, 3000.0, 'ok'"},
      {"d", "1, 500.0, 'ok'"},  {"c", "8, NULL, 'failed'"}};
  for (const auto& [config, values] : runs)
    s.exec("INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model, "
           "dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, command, log_path, "
           "runner_pid, runner_host, samples_per_s, status) VALUES (1, 1, 'k', '" + config + "', 'l', 0, 'dtnn', "
           "'simplecnn', 'mnist', 'auto', " + values.substr(0, values.find(',')) + ", 1, 'cpu', 64, 5, 'sgd', '{}', "
           "'x', 'y', 1, 'h'" + values.substr(values.find(',')) + ")");
}

dtnn::PredictionRow row(int ranks, double sps, double efficiency) {
  dtnn::PredictionRow p;
  p.model_version = "dtnn-perfmodel/1";
  p.model_kind = "dtnn";
  p.model = "simplecnn";
  p.platform = "ib100";
  p.rules = "ompi41";
  p.mode = "non_blocking";
  p.scaling = "weak";
  p.ranks = ranks;
  p.batch_size = 64;
  p.samples_per_rank = 64;
  p.global_batch = 64.0 * ranks;
  p.step_s = 0.05;
  p.compute_s = 0.04;
  p.exposed_s = 0.01;
  p.comm_s = 0.02;
  p.samples_per_s = sps;
  p.efficiency = efficiency;
  p.speedup = efficiency * ranks;
  p.algorithms = "ring";
  p.calibration_runs = {1};
  p.environment_id = 1;
  p.matrix_id = 1;
  p.config_key = "c";
  return p;
}

}  // namespace

TEST_CASE("store: a version-7 database migrates to predictions with its v_scaling rows unchanged", "[store]") {
  const std::string path = fresh_db("predictions_v7");
  {
    dtnn::ResultStore v7 = dtnn::ResultStore::open_at_version(path, 7);
    REQUIRE(v7.version() == 7);
    CHECK_THROWS(v7.query("SELECT * FROM predictions"));
    add_runs(v7);
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() >= 8);  // and later migrations
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM runs") == "6");
  // By hand: config c, 1 rank: mean(1000, 1200) = 1100; 2 ranks 1900/1100 = 1.727, /2 = 0.864; 4 ranks
  // 3000/1100 = 2.727, /4 = 0.682. Config d: 1 rank only.
  CHECK(lines(latest, "SELECT config_key, ranks, runs, mean_samples_per_s, speedup, efficiency, source, platform, curve "
                      "FROM v_scaling") ==
        std::vector<std::string>{"c|1|2|1100.0|1.0|1.0|measured|NULL|NULL", "c|2|1|1900.0|1.727|0.864|measured|NULL|NULL",
                                 "c|4|1|3000.0|2.727|0.682|measured|NULL|NULL", "d|1|1|500.0|1.0|1.0|measured|NULL|NULL"});
  CHECK(one(latest, "SELECT count(*) FROM predictions") == "0");
}

TEST_CASE("store: predicted rows join their calibration run's group in v_scaling, labelled, never as runs", "[store]") {
  const std::string path = fresh_db("predictions_view");
  dtnn::ResultStore s = dtnn::ResultStore::open(path);
  add_runs(s);
  dtnn::PredictionRow old8 = row(8, 4000, 0.5);
  const std::vector<int64_t> first = s.add_predictions({row(1, 1000, 1.0), old8});
  REQUIRE(first.size() == 2);
  // The same curve predicted again (8 ranks): the newer row is the one v_scaling shows.
  dtnn::PredictionRow eth = row(8, 3200, 0.4);
  eth.platform = "eth10g";
  eth.mode = "blocking";
  const std::vector<int64_t> second = s.add_predictions({row(8, 4800, 0.6), eth});
  CHECK(second[0] > first[1]);
  CHECK(one(s, "SELECT count(*) FROM predictions") == "4");
  CHECK(one(s, "SELECT count(*) FROM runs") == "6");  // nothing predicted is a run
  CHECK(one(s, "SELECT count(*) FROM v_throughput") == "5");
  CHECK(lines(s, "SELECT source, curve, ranks, runs, mean_samples_per_s, speedup, efficiency, compute_fraction, "
                 "exposed_comm_fraction, platform, framework, dataset, threads FROM v_scaling WHERE config_key = 'c'") ==
        std::vector<std::string>{
            "measured|NULL|1|2|1100.0|1.0|1.0|NULL|NULL|NULL|dtnn|mnist|1",
            "measured|NULL|2|1|1900.0|1.727|0.864|NULL|NULL|NULL|dtnn|mnist|1",
            "measured|NULL|4|1|3000.0|2.727|0.682|NULL|NULL|NULL|dtnn|mnist|1",
            // 8 x 0.4 = 3.2; compute 0.04 / 0.05 = 0.8, exposed 0.01 / 0.05 = 0.2
            "model|model, eth10g, blocking|8|0|3200.0|3.2|0.4|0.8|0.2|eth10g|dtnn|mnist|1",
            "model|model, ib100, non_blocking|1|0|1000.0|1.0|1.0|0.8|0.2|ib100|dtnn|mnist|1",
            "model|model, ib100, non_blocking|8|0|4800.0|4.8|0.6|0.8|0.2|ib100|dtnn|mnist|1"});
  CHECK(one(s, "SELECT group_concat(run_id) FROM prediction_runs WHERE prediction_id = " + std::to_string(second[0])) ==
        "1");
  CHECK(s.count_predictions(1, 1, "t") == 0);
  dtnn::PredictionRow trial = row(16, 5000, 0.3);
  trial.trial_key = "t";
  s.add_predictions({trial});
  CHECK(s.count_predictions(1, 1, "t") == 1);
}

TEST_CASE("store: a bad predicted row is refused in one line and nothing of its batch is stored", "[store]") {
  const std::string path = fresh_db("predictions_bad");
  dtnn::ResultStore s = dtnn::ResultStore::open(path);
  add_runs(s);
  dtnn::PredictionRow bad_mode = row(2, 1, 1);
  bad_mode.mode = "async";
  CHECK_THROWS_WITH(s.add_predictions({row(1, 1, 1), bad_mode}), Contains("mode must be blocking or non_blocking"));
  dtnn::PredictionRow no_step = row(2, 1, 1);
  no_step.step_s = 0;
  CHECK_THROWS_WITH(s.add_predictions({row(1, 1, 1), no_step}), Contains("no step time"));
  dtnn::PredictionRow no_run = row(2, 1, 1);
  no_run.calibration_runs = {99};  // a foreign key to a run that does not exist
  CHECK_THROWS(s.add_predictions({row(1, 1, 1), no_run}));
  CHECK(one(s, "SELECT count(*) FROM predictions") == "0");
}
