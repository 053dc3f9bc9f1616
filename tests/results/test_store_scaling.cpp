// v_scaling's measured rows against the fewest ranks of a configuration (migration 17). A version-16 database
// (its v_scaling needed a 1-rank run) migrates; the expected speed-ups and efficiencies are worked out by hand.
#include <catch2/catch.hpp>
#include <string>

#include "store_test_helpers.h"

using dtnn::test::one;

namespace {

// One ok run of configuration `config` at `ranks`, samples/s `sps` ("NULL": none, as evaluation-only runs).
std::string run_sql(const std::string& config, int ranks, const std::string& sps) {
  return "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model, dataset,"
         " conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command, log_path,"
         " runner_pid, runner_host, samples_per_s) VALUES (1, 1, '" + config + std::to_string(ranks) + "', '" + config +
         "', 'l', 0, 'dtnn', 'simplecnn', 'mnist', 'auto', " + std::to_string(ranks) + ", 1, 'cpu', 64, 5, 'sgd', '{}',"
         " 'ok', 'x', 'y', 1, 'h', " + sps + ");";
}

}  // namespace

TEST_CASE("store: v_scaling measures speed-up against the fewest ranks a configuration ran on", "[store]") {
  const std::string path = dtnn::test::fresh_db("scaling_v16");
  {
    dtnn::ResultStore v16 = dtnn::ResultStore::open_at_version(path, 16);
    v16.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('m', 'm.toml', 'h', 't');"
             "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
             " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
             " 'c0ffee',0,'{}');");
    // c: 1 and 2 ranks. n: a study over nodes at ranks_per_node = 4 (4, 8, 16 ranks), one 8-rank run without
    // samples/s. e: the 2-rank runs have no samples/s, so 4 ranks is the baseline.
    v16.exec(run_sql("c", 1, "1000.0") + run_sql("c", 2, "1900.0") + run_sql("n", 4, "4000.0") +
             run_sql("n", 8, "7200.0") + run_sql("n", 8, "NULL") + run_sql("n", 16, "12800.0") +
             run_sql("e", 2, "NULL") + run_sql("e", 4, "500.0") + run_sql("e", 8, "900.0"));
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  REQUIRE(latest.version() == dtnn::ResultStore::latest_version());
  const auto rows = [&](const std::string& config) {
    return one(latest, "SELECT group_concat(ranks || ':' || runs || ':' || coalesce(speedup, '-') || ':' ||"
                       " coalesce(efficiency, '-') || ':' || baseline_ranks, ' ') FROM (SELECT * FROM v_scaling"
                       " WHERE config_key = '" + config + "' ORDER BY ranks)");
  };
  // 1 rank: as before (2 ranks at 1900 vs 1000: speed-up 1.9, efficiency 0.95).
  CHECK(rows("c") == "1:1:1.0:1.0:1 2:1:1.9:0.95:1");
  // Against 4 ranks: 7200 / 4000 = 1.8, x 4 / 8 = 0.9; 12800 / 4000 = 3.2, x 4 / 16 = 0.8. The run without
  // samples/s is not one of the 8-rank runs averaged, nor counted.
  CHECK(rows("n") == "4:1:1.0:1.0:4 8:1:1.8:0.9:4 16:1:3.2:0.8:4");
  // 2 ranks has no samples/s: no speed-up there, and 4 ranks is the baseline (900 / 500 = 1.8, x 4 / 8 = 0.9).
  CHECK(rows("e") == "2:0:-:-:4 4:1:1.0:1.0:4 8:1:1.8:0.9:4");
}
