// A version-17 database migrates to views that read a run's batches as its report states them: a weak-scaling
// run's global batch (migration 18: the report's "global_batch_size": "0" is text, and nullif('0', 0) kept
// it, so the run's global batch was 0 and no target stated as a global batch judged it) and each run's batch
// per rank and scaling mode in v_throughput (migration 19).
#include <catch2/catch.hpp>
#include <string>

#include "store_test_helpers.h"

using dtnn::test::one;

TEST_CASE("store: a version-17 database migrates to views that read a run's batches right", "[store]") {
  const std::string path = dtnn::test::fresh_db("batches_v17");
  const std::string target = "INSERT INTO targets (model, dataset, metric, target, tolerance, num_epochs, optimizer,"
                             " recipe, source, global_batch_size, steps_per_epoch) VALUES ('simplecnn', 'mnist',"
                             " 'test_accuracy', 10, 1, 0, '', 'r', 's', 64, 2)";
  {
    dtnn::ResultStore v17 = dtnn::ResultStore::open_at_version(path, 17);
    v17.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('m', 'm.toml', 'h', 't');"
             "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
             " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
             " 'c0ffee',0,'{}');");
    // 2 ranks x 32, weak scaling: a global batch of 64, the report's options as dtnn writes them (text).
    v17.exec("INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
             " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
             " log_path, runner_pid, runner_host, samples_per_s, test_accuracy, report) VALUES (1, 1, 'k', 'c', 'l', 0,"
             " 'dtnn', 'simplecnn', 'mnist', 'auto', 2, 1, 'cpu', 32, 1, 'sgd', '{\"batch_size\": \"32\"}', 'ok', 'x',"
             " 'y', 1, 'h', 1000.0, 50.0, '{\"options\": {\"batch_size\": \"32\", \"global_batch_size\": \"0\","
             " \"steps_per_epoch\": \"2\"}}')");
    v17.exec(target);
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  REQUIRE(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT verdict FROM v_accuracy_vs_target") == "pass");
  CHECK(one(latest, "SELECT batch_size || ' ' || batch_per_rank || ' ' || scaling FROM v_throughput") == "32 32 weak");
}
