// The store's model averaging figures (migration 9): a report's "averaging" and epochs[].averaging become
// run_averaging and epoch_averaging; v_averaging_epochs accumulates communication rounds, bytes, wait and
// training time per epoch beside the accuracies, v_averaging gives a run's totals. A real 1-rank synchronous
// report of `dtnn train` is stored as written (its counts worked out from the averaging period); its figures
// are then replaced by hand-made ones whose sums are worked out here. A gradient (--parallel=data) run of an
// averaging matrix reads its rounds from epoch_comm; a run of another matrix is not in the views. Bad
// figures roll the whole report back. A version-8 database migrates with its runs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/query.h"
#include "cli_helpers.h"
#include "core/error.h"
#include "core/file_io.h"
#include "results/store.h"
#include "store_test_helpers.h"

using Catch::Contains;

namespace {

using dtnn::test::fresh_db;
using dtnn::test::one;

// A real report: simplemlp, 1 rank, synchronous averaging every step, 2 epochs of 3 steps.
const nlohmann::json& synchronous_report() {
  static const nlohmann::json j = [] {
    const std::string path = dtnn::test::temp_path("averaging_store_report.json");
    REQUIRE(dtnn::test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --num_epochs=2 "
                                 "--steps_per_epoch=3 --threads=1 --progress=False --evaluate_on_test=False "
                                 "--model_averaging=synchronous --average_every_steps=1 --report=" + path)
                .status == 0);
    const std::string text = dtnn::read_file(path);
    std::filesystem::remove(path);
    return nlohmann::json::parse(text);
  }();
  return j;
}

nlohmann::json figures(int64_t averages, double bytes, double wait0, double wait_max) {
  return {{"averages", averages}, {"bytes_per_rank", bytes}, {"wait_s_rank0", wait0}, {"wait_s_max", wait_max}};
}

// Three epochs of 1.0, 2.0 and 1.5 s with validation accuracies 50, 60, 70; averages 3, 4, 5 per epoch
// (bytes 1200, 1600, 2000; slowest wait 0.2, 0.3, 0.5 s) and one more after the last epoch: 13 in the run.
nlohmann::json planted_report(const std::string& mode) {
  nlohmann::json j = synchronous_report();
  j["parallel"]["ranks"] = 2;
  j["parallel"]["model_averaging"] = mode;
  j["options"]["straggler_ms"] = "1:50";
  const nlohmann::json e0 = j["epochs"][0];
  j["epochs"] = nlohmann::json::array();
  const double times[] = {1.0, 2.0, 1.5}, accs[] = {50, 60, 70};
  const nlohmann::json per_epoch[] = {figures(3, 1200, 0.1, 0.2), figures(4, 1600, 0.2, 0.3), figures(5, 2000, 0.1, 0.5)};
  for (int i = 0; i < 3; ++i) {
    nlohmann::json e = e0;
    e["epoch"] = i + 1;
    e["time_s"] = times[i];
    e["val"] = {{"categorical_accuracy", accs[i]}};
    e["averaging"] = per_epoch[i];
    j["epochs"].push_back(e);
  }
  j["averaging"] = figures(13, 5200, 0.4, 1.1);
  j["averaging"]["every_epochs"] = 0;
  j["averaging"]["every_steps"] = 8;
  return j;
}

nlohmann::json comm_times(double exposed) {
  return {{"step_s", 1.0}, {"compute_s", 0.8}, {"comm_s", 0.1}, {"exposed_s", exposed}};
}

// A 2-rank gradient run: 2 epochs of 10 steps, 100 bytes per step, rank 0 exposed 0.05 then 0.03 s, the
// slowest rank 0.07 then 0.04 s.
nlohmann::json gradient_report() {
  nlohmann::json j = synchronous_report();
  j.erase("averaging");
  j["parallel"]["ranks"] = 2;
  j["parallel"]["model_averaging"] = "none";
  const double rank0[] = {0.05, 0.03}, max[] = {0.07, 0.04};
  for (int i = 0; i < 2; ++i) {
    nlohmann::json& e = j["epochs"][i];
    e.erase("averaging");
    e["communication"] = {{"mode", "blocking"},           {"steps", 10},     {"buckets_per_step", 1},
                          {"bytes_per_step", 100.0},      {"rank0", comm_times(rank0[i])},
                          {"min", comm_times(0.01)},      {"median", comm_times(0.02)}, {"max", comm_times(max[i])}};
  }
  return j;
}

using Fixture = dtnn::test::RunFixture;

// The parameter a run of the averaging matrix has even without averaging (its base sets it).
const std::map<std::string, std::string> kAveragingMatrix = {{"model_averaging", "none"}};

}  // namespace

TEST_CASE("store: a real synchronous report's averaging counts, as the period makes them", "[store][averaging]") {
  Fixture f("averaging_real");
  const int64_t run = f.begin("real", 1);
  f.store.finish_run_ok(run, synchronous_report().dump(), 1.0);
  // Every step averages: 3 per epoch, none left for the end; one rank sends nothing.
  CHECK(one(f.store, "SELECT mode || ',' || every_epochs || ',' || every_steps || ',' || averages || ',' || "
                     "bytes_per_rank FROM run_averaging WHERE run_id = " + std::to_string(run)) ==
        "synchronous,0,1,6,0.0");
  CHECK(one(f.store, "SELECT group_concat(averages) FROM epoch_averaging WHERE run_id = " + std::to_string(run)) ==
        "3,3");
  CHECK(one(f.store, "SELECT group_concat(rounds) FROM v_averaging_epochs WHERE run_id = " + std::to_string(run)) ==
        "3,6");
  CHECK(one(f.store, "SELECT mode || ',' || rounds || ',' || straggler || ',' || epochs || ',' || "
                     "coalesce(merges_per_rank, 'NULL') FROM v_averaging") == "synchronous,6,,2,NULL");
}

TEST_CASE("store: averaging per epoch and per run, v_averaging_epochs and v_averaging", "[store][averaging]") {
  Fixture f("averaging_views");
  const int64_t avg = f.begin("avg", 2), grad = f.begin("grad", 2, kAveragingMatrix),
                other = f.begin("other", 2);
  nlohmann::json async = planted_report("asynchronous");
  async["averaging"]["merges_per_rank"] = {13, 9};  // rank 1 (the straggler) merged less often
  f.store.finish_run_ok(avg, async.dump(), 7.0);
  f.store.finish_run_ok(grad, gradient_report().dump(), 3.0);
  f.store.finish_run_ok(other, gradient_report().dump(), 3.0);
  const std::string a = " WHERE run_id = " + std::to_string(avg);
  CHECK(f.rows("epoch_averaging", avg) == 3);
  CHECK(f.rows("run_averaging", grad) == 0);  // runs without averaging: no rows
  CHECK(f.rows("epoch_averaging", grad) == 0);

  // Cumulative per epoch: rounds 3, 7, 12; bytes 1200, 2800, 4800; slowest wait 0.2, 0.5, 1.0; time 1, 3, 4.5.
  const dtnn::QueryResult e = f.store.query(
      "SELECT epoch, epoch_rounds, rounds, bytes_per_rank, wait_s_max, time_s, val_accuracy, mode, every_steps, "
      "straggler FROM v_averaging_epochs" + a);
  REQUIRE(e.rows.size() == 3);
  const char* want[3][7] = {{"1", "3", "3", "1200.0", "0.2", "1.0", "50.0"},
                            {"2", "4", "7", "2800.0", "0.5", "3.0", "60.0"},
                            {"3", "5", "12", "4800.0", "1.0", "4.5", "70.0"}};
  for (int i = 0; i < 3; ++i) {
    for (int c = 0; c < 7; ++c) CHECK(*e.rows[i][c] == want[i][c]);
    CHECK(*e.rows[i][7] == "asynchronous");
    CHECK(*e.rows[i][8] == "8");
    CHECK(*e.rows[i][9] == "1:50");
  }
  // The run's totals are the report's (13 rounds: the average after the last epoch counts).
  CHECK(one(f.store, "SELECT mode || ',' || every_epochs || ',' || every_steps || ',' || rounds || ',' || "
                     "bytes_per_rank || ',' || wait_s_rank0 || ',' || wait_s_max || ',' || duration_s || ',' || epochs "
                     "|| ',' || merges_per_rank FROM v_averaging" + a) == "asynchronous,0,8,13,5200.0,0.4,1.1,7.0,3,[13,9]");

  // The gradient run: a round per step (10, 20), bytes 100 x steps, slowest exposed 0.07 + 0.04 s; rank 0's
  // 0.05 + 0.03 s.
  const std::string g = " WHERE run_id = " + std::to_string(grad);
  CHECK(one(f.store, "SELECT group_concat(rounds || '/' || bytes_per_rank || '/' || wait_s_max, ' ') FROM "
                     "v_averaging_epochs" + g) == "10/1000.0/0.07 20/2000.0/0.11");
  CHECK(one(f.store, "SELECT mode || ',' || coalesce(every_steps, 'NULL') || ',' || rounds || ',' || bytes_per_rank "
                     "|| ',' || wait_s_rank0 || ',' || wait_s_max FROM v_averaging" + g) ==
        "gradient,NULL,20,2000.0,0.08,0.11");
  // The other matrix's run (no model_averaging parameter, no averaging) is in neither view.
  CHECK(one(f.store, "SELECT count(*) FROM v_averaging WHERE run_id = " + std::to_string(other)) == "0");
  CHECK(one(f.store, "SELECT count(*) FROM v_averaging_epochs WHERE run_id = " + std::to_string(other)) == "0");
  CHECK(one(f.store, "SELECT count(*) FROM v_averaging") == "2");
  // `dtnn query averaging` and `averaging_epochs` are these views.
  CHECK(f.store.query(dtnn::query_sql("averaging")).rows.size() == 2);
  CHECK(f.store.query(dtnn::query_sql("averaging_epochs")).rows.size() == 5);

  // A 1-rank run of the matrix without averaging: mode none, no rounds.
  const int64_t single = f.begin("single", 1, kAveragingMatrix);
  nlohmann::json plain = synchronous_report();
  plain.erase("averaging");
  for (nlohmann::json& ep : plain["epochs"]) ep.erase("averaging");
  plain["parallel"]["model_averaging"] = "none";
  f.store.finish_run_ok(single, plain.dump(), 1.0);
  CHECK(one(f.store, "SELECT mode || ',' || rounds FROM v_averaging WHERE run_id = " + std::to_string(single)) ==
        "none,0");

  // Deleting a run deletes its averaging rows.
  for (const char* t : {"epochs", "epoch_comm"}) f.store.exec(std::string("DELETE FROM ") + t + a);
  f.store.exec("DELETE FROM runs WHERE id = " + std::to_string(avg));
  CHECK(one(f.store, "SELECT count(*) FROM run_averaging") == "0");
  CHECK(one(f.store, "SELECT count(*) FROM epoch_averaging") == "0");
}

TEST_CASE("store: bad averaging figures roll the whole report back", "[store][averaging]") {
  Fixture f("averaging_bad");
  nlohmann::json no_mode = planted_report("none");
  nlohmann::json negative = planted_report("synchronous");
  negative["epochs"][1]["averaging"]["wait_s_max"] = -0.1;
  nlohmann::json orphan = planted_report("synchronous");
  orphan.erase("averaging");
  nlohmann::json no_bytes = planted_report("synchronous");
  no_bytes["averaging"].erase("bytes_per_rank");
  int n = 0;
  for (const auto& [bad, says] : {std::pair{no_mode, "model_averaging 'none'"}, {negative, "epoch 2's averaging"},
                                  {orphan, "epoch 1 has averaging but the run has none"}, {no_bytes, "bytes_per_rank"}}) {
    const int64_t run = f.begin("bad" + std::to_string(n++), 2);
    INFO(says);
    CHECK_THROWS_WITH(f.store.finish_run_ok(run, bad.dump(), 1.0), Contains(says));
    CHECK(one(f.store, "SELECT status FROM runs WHERE id = " + std::to_string(run)) == "running");
    for (const char* table : {"run_averaging", "epoch_averaging", "epochs"}) CHECK(f.rows(table, run) == 0);
  }
  const int64_t good = f.begin("good", 2);
  f.store.finish_run_ok(good, planted_report("partially_asynchronous").dump(), 1.0);
  CHECK(one(f.store, "SELECT mode FROM v_averaging") == "partially_asynchronous");
}

TEST_CASE("store: a version-8 database migrates to the averaging tables and keeps its runs", "[store][averaging]") {
  const std::string path = fresh_db("averaging_v8");
  {
    dtnn::ResultStore v8 = dtnn::ResultStore::open_at_version(path, 8);
    REQUIRE(v8.version() == 8);
    CHECK_THROWS(v8.query("SELECT * FROM run_averaging"));
    v8.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
            "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
            " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
            " 'c0ffee',0,'{}');"
            "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
            " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
            " log_path, runner_pid, runner_host, samples_per_s, test_accuracy) VALUES"
            " (1, 1, 'k1', 'c', 'l', 0, 'dtnn', 'simplecnn', 'mnist', 'auto', 2, 1, 'cpu', 64, 1, 'sgd',"
            " '{\"model_averaging\": \"none\"}', 'ok', 'x', 'y', 1, 'h', 1900.0, 81.5),"
            " (1, 1, 'k2', 'c', 'l', 0, 'dtnn', 'simplecnn', 'mnist', 'auto', 2, 1, 'cpu', 64, 1, 'sgd', '{}', 'ok',"
            " 'x', 'y', 1, 'h', 1800.0, 80.0);"
            "INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) VALUES"
            " (1, 1, 640, 2.5, 256.0, '{}'), (2, 1, 640, 2.0, 320.0, '{}');"
            "INSERT INTO epoch_comm (run_id, epoch, stat, mode, steps, buckets_per_step, bytes_per_step, step_s,"
            " compute_s, comm_s, exposed_s) VALUES (1, 1, 'rank0', 'blocking', 10, 1, 64.0, 2.0, 1.5, 0.4, 0.25),"
            " (1, 1, 'max', 'blocking', 10, 1, 64.0, 2.0, 1.5, 0.4, 0.5);");
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() >= 9);
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM runs") == "2");
  CHECK(one(latest, "SELECT group_concat(samples_per_s) FROM runs") == "1900.0,1800.0");
  for (const char* t : {"run_averaging", "epoch_averaging"}) CHECK(one(latest, std::string("SELECT count(*) FROM ") + t) == "0");
  // The old gradient run of an averaging matrix: 10 rounds of 64 bytes, its waits; the other run is not there.
  CHECK(one(latest, "SELECT run_id || ',' || mode || ',' || rounds || ',' || bytes_per_rank || ',' || wait_s_rank0 "
                    "|| ',' || wait_s_max || ',' || test_accuracy || ',' || straggler FROM v_averaging") ==
        "1,gradient,10,640.0,0.25,0.5,81.5,");
}
