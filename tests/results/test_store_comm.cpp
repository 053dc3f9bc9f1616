// The store's communication figures (migration 5): a report's per-epoch "communication" objects become
// epoch_comm rows, v_comm divides them into per-step milliseconds and the exposed fraction, and v_scaling
// carries the compute and exposed-communication fractions per rank count. Values are planted in a real
// 1-rank report (so every other field is what `dtnn train` writes) and the expected figures are worked out
// by hand below. A version-4 database migrates with its runs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.h"
#include "results/store.h"
#include "store_value.h"

using dtnn::test::one;

namespace {

namespace fs = std::filesystem;

nlohmann::json train_report(const std::string& extra) {
  const std::string path = dtnn::test::temp_path("comm_report.json");
  const std::string cmd = std::string(DTNN_BINARY) +
                          " train --model=simplemlp --use_synthetic_data=True --num_epochs=2 --steps_per_epoch=2"
                          " --threads=1 --progress=False --evaluate_on_test=False " + extra + " --report=" + path +
                          " > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  fs::remove(path);
  return nlohmann::json::parse(ss.str());
}

nlohmann::json times(double step, double compute, double comm, double exposed) {
  return {{"step_s", step}, {"compute_s", compute}, {"comm_s", comm}, {"exposed_s", exposed}};
}

}  // namespace

TEST_CASE("store: communication per epoch, v_comm and v_scaling's fractions", "[store]") {
  const nlohmann::json one_rank = train_report("");
  // A one-rank run reduces nothing: mode "none", nothing in communication calls, the step all compute.
  for (const auto& e : one_rank.at("epochs")) {
    CHECK(e.at("communication").at("mode") == "none");
    CHECK(e.at("communication").at("median").at("comm_s") == 0.0);
    CHECK(e.at("communication").at("bytes_per_step") == 0.0);
  }

  const std::string path = dtnn::test::temp_path("comm.db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  dtnn::ResultStore store = dtnn::ResultStore::open(path);
  const int64_t matrix = store.add_matrix("m", "m.toml", "h", "name = \"m\"\n");
  dtnn::StoredEnvironment env;
  env.host = "h";
  const int64_t env_id = store.add_environment(env);
  const auto begin = [&](int ranks) {
    dtnn::RunStart s;
    s.matrix_id = matrix;
    s.environment_id = env_id;
    s.trial_key = "k" + std::to_string(ranks);
    s.config_key = "c";
    s.label = s.trial_key;
    s.params = {{"model", "simplemlp"}, {"ranks", std::to_string(ranks)}};
    s.command = "dtnn train";
    s.log_path = "x.log";
    return store.begin_run(s);
  };
  store.finish_run_ok(begin(1), one_rank.dump(), 1.0);

  // Two ranks: epoch 1 has 10 steps, epoch 2 has 30; the median rank spends 1 s + 3 s stepping, 0.1 s +
  // 0.3 s exposed, so 100 ms per step, 10 ms exposed per step, an exposed fraction of 0.1, compute 0.85.
  nlohmann::json two = one_rank;
  two["parallel"]["ranks"] = 2;
  for (int e = 0; e < 2; ++e) {
    const double k = e == 0 ? 1.0 : 3.0;
    nlohmann::json c = {{"mode", "non_blocking"}, {"steps", e == 0 ? 10 : 30}, {"buckets_per_step", 3},
                        {"bytes_per_step", 4096.0}, {"bucket_mb", 25.0}};
    c["rank0"] = times(k, 0.8 * k, 0.2 * k, 0.15 * k);
    c["min"] = times(0.9 * k, 0.8 * k, 0.1 * k, 0.05 * k);
    c["median"] = times(k, 0.85 * k, 0.15 * k, 0.1 * k);
    c["max"] = times(1.1 * k, 0.9 * k, 0.2 * k, 0.15 * k);
    two["epochs"][e]["communication"] = c;
  }
  two["training"]["samples_per_s"] = 1.8 * one_rank["training"]["samples_per_s"].get<double>();
  const int64_t run2 = begin(2);
  store.finish_run_ok(run2, two.dump(), 1.0);

  CHECK(one(store, "SELECT count(*) FROM epoch_comm WHERE run_id = " + std::to_string(run2)) == "8");
  CHECK(one(store, "SELECT exposed_s FROM epoch_comm WHERE epoch = 2 AND stat = 'max' AND run_id = " + std::to_string(run2)) == "0.45");
  CHECK(one(store, "SELECT mode || ',' || buckets_per_step || ',' || steps FROM v_comm WHERE ranks = 2") == "non_blocking,3,40");
  CHECK(one(store, "SELECT step_ms FROM v_comm WHERE ranks = 2") == "100.0");
  CHECK(one(store, "SELECT exposed_ms FROM v_comm WHERE ranks = 2") == "10.0");
  CHECK(one(store, "SELECT comm_ms FROM v_comm WHERE ranks = 2") == "15.0");
  CHECK(one(store, "SELECT exposed_fraction FROM v_comm WHERE ranks = 2") == "0.1");
  CHECK(one(store, "SELECT speedup FROM v_scaling WHERE ranks = 2") == "1.8");
  CHECK(one(store, "SELECT compute_fraction FROM v_scaling WHERE ranks = 2") == "0.85");
  CHECK(one(store, "SELECT exposed_comm_fraction FROM v_scaling WHERE ranks = 2") == "0.1");
  CHECK(one(store, "SELECT exposed_comm_fraction FROM v_scaling WHERE ranks = 1") == "0.0");
  CHECK(one(store, "SELECT mode || ',' || comm_ms FROM v_comm WHERE ranks = 1") == "none,0.0");

  // A malformed communication object is refused and the run stays 'running' (one transaction).
  nlohmann::json bad = two;
  bad["epochs"][0]["communication"].erase("median");
  const int64_t run3 = begin(3);
  CHECK_THROWS(store.finish_run_ok(run3, bad.dump(), 1.0));
  CHECK(one(store, "SELECT status FROM runs WHERE id = " + std::to_string(run3)) == "running");
  CHECK(one(store, "SELECT count(*) FROM epoch_comm WHERE run_id = " + std::to_string(run3)) == "0");
}

TEST_CASE("store: a version-4 database migrates to epoch_comm and keeps its runs and views", "[store]") {
  const std::string path = dtnn::test::temp_path("v4.db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  {
    dtnn::ResultStore v4 = dtnn::ResultStore::open_at_version(path, 4);
    REQUIRE(v4.version() == 4);
    CHECK_THROWS(v4.query("SELECT * FROM epoch_comm"));
    v4.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
            "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
            " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
            " 'c0ffee',0,'{}');");
    for (const char* ranks : {"1", "2"})
      v4.exec(std::string("INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework,"
              " model, dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status,"
              " command, log_path, runner_pid, runner_host, samples_per_s) VALUES (1, 1, 'k") + ranks +
              "', 'c', 'l', 0, 'dtnn', 'simplecnn', 'mnist', 'auto', " + ranks + ", 1, 'cpu', 64, 5, 'sgd', '{}', 'ok',"
              " 'x', 'y', 1, 'h', " + (ranks[0] == '1' ? "1000.0" : "1900.0") + ");");
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM epoch_comm") == "0");
  CHECK(one(latest, "SELECT speedup FROM v_scaling WHERE ranks = 2") == "1.9");
  // Runs from before migration 5 have no communication figures: NULL, not 0.
  CHECK(latest.query("SELECT exposed_comm_fraction FROM v_scaling WHERE ranks = 2").rows[0][0] == std::nullopt);
}
