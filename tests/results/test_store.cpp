// The results store: migrations from an empty file and from the previous schema version, ingest of a good,
// a malformed and a truncated report, read-only access, orphaned runs. (compare's verdicts: test_compare.cpp.)
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_helpers.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host.h"
#include "helpers.h"
#include "results/store.h"
#include "store_value.h"

using Catch::Contains;

using dtnn::test::one;

namespace {

namespace fs = std::filesystem;

// A fresh database path (and its -wal/-shm files removed).
std::string fresh_db(const std::string& name) {
  const std::string path = dtnn::test::temp_path(name + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  return path;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A real report: `dtnn train` on synthetic data, 2 epochs of 3 steps.
const std::string& real_report() {
  static const std::string text = [] {
    const std::string path = dtnn::test::temp_path("store_report.json");
    const std::string cmd = std::string(DTNN_BINARY) +
                            " train --model=simplecnn --use_synthetic_data=True --num_epochs=2 --steps_per_epoch=3"
                            " --threads=1 --progress=False --report=" + path + " > /dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::string t = read_text(path);
    fs::remove(path);
    return t;
  }();
  return text;
}

struct Fixture {
  std::string path;
  dtnn::ResultStore store;
  int64_t matrix = 0, env = 0;
  explicit Fixture(const std::string& name) : path(fresh_db(name)), store(dtnn::ResultStore::open(path)) {
    matrix = store.add_matrix("m", "m.toml", "hash1", "name = \"m\"\n");
    dtnn::StoredEnvironment e;
    e.host = "h";
    e.git_commit = "abc123";
    env = store.add_environment(e);
  }
  int64_t begin(const std::string& key, int ranks = 1) {
    dtnn::RunStart s;
    s.matrix_id = matrix;
    s.environment_id = env;
    s.trial_key = key;
    s.config_key = key;
    s.label = key;
    s.params = {{"model", "simplecnn"}, {"ranks", std::to_string(ranks)}, {"dataset", "mnist"}};
    s.command = "dtnn train";
    s.log_path = "x.log";
    return store.begin_run(s);
  }
};

}  // namespace

TEST_CASE("store: a new file gets every migration, WAL and foreign keys", "[store]") {
  Fixture f("new");
  CHECK(f.store.version() == dtnn::ResultStore::latest_version());
  CHECK(one(f.store, "PRAGMA journal_mode") == "wal");
  CHECK(one(f.store, "PRAGMA foreign_keys") == "1");
  for (const char* table : {"matrices", "environments", "runs", "epochs", "layer_timings", "targets"})
    CHECK(one(f.store, std::string("SELECT count(*) FROM sqlite_master WHERE name = '") + table + "'") == "1");
  for (const char* view : {"v_throughput", "v_scaling", "v_accuracy_vs_target"})
    CHECK(one(f.store, std::string("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = '") + view +
                           "'") == "1");
  // Re-opening applies nothing twice; the same matrix and environment keep their ids.
  dtnn::ResultStore again = dtnn::ResultStore::open(f.path);
  CHECK(one(again, "SELECT count(*) FROM schema_migrations") == std::to_string(dtnn::ResultStore::latest_version()));
  CHECK(again.add_matrix("m", "m.toml", "hash1", "name = \"m\"\n") == f.matrix);
  CHECK(again.add_matrix("m", "m.toml", "hash2", "name = \"m\" # changed\n") != f.matrix);
  // A foreign key that points nowhere is refused.
  CHECK_THROWS(again.exec("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) "
                          "VALUES (999, 1, 1, 1.0, 1.0, '{}')"));
}

TEST_CASE("store: a version-1 database migrates to the latest and keeps its runs", "[store]") {
  const std::string path = fresh_db("v1");
  {
    dtnn::ResultStore v1 = dtnn::ResultStore::open_at_version(path, 1);
    REQUIRE(v1.version() == 1);
    CHECK_THROWS(v1.query("SELECT tags FROM runs"));  // column of version 2
    v1.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
            "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
            " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
            " 'c0ffee',0,'{}');"
            "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
            " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
            " log_path, runner_pid, runner_host, samples_per_s, test_accuracy) VALUES (1, 1, 'k1', 'c', 'l', 0,"
            " 'dtnn', 'simplecnn', 'fashion-mnist', 'auto', 1, 1, 'cpu', 64, 5, 'adam', '{}', 'ok', 'x', 'y', 1, 'h',"
            " 1000.0, 89.0);"
            "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
            " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
            " log_path, runner_pid, runner_host, samples_per_s) VALUES (1, 1, 'k2', 'c', 'l', 0, 'dtnn', 'simplecnn',"
            " 'fashion-mnist', 'auto', 2, 1, 'cpu', 64, 5, 'adam', '{}', 'ok', 'x', 'y', 1, 'h', 1900.0);");
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM runs") == "2");
  CHECK(one(latest, "SELECT tags FROM runs WHERE trial_key = 'k1'").empty());
  // The views of version 2 work on the migrated rows: 2 ranks at 1900 vs 1 rank at 1000 samples/s.
  CHECK(one(latest, "SELECT speedup FROM v_scaling WHERE ranks = 2") == "1.9");
  CHECK(one(latest, "SELECT efficiency FROM v_scaling WHERE ranks = 2") == "0.95");
  // One run has no spread; a second 2-rank run at 2100 gives min 1900, max 2100 and a sample standard deviation
  // of |2100 - 1900| / sqrt(2) = 141.42.
  CHECK(one(latest, "SELECT coalesce(sd_samples_per_s, 'none') FROM v_scaling WHERE ranks = 2") == "none");
  latest.exec("INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
              " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
              " log_path, runner_pid, runner_host, samples_per_s) SELECT matrix_id, environment_id, trial_key,"
              " config_key, label, 1, framework, model, dataset, conv_algo, ranks, threads, device, batch_size,"
              " num_epochs, optimizer, params, status, command, log_path, runner_pid, runner_host, 2100.0 FROM runs"
              " WHERE trial_key = 'k2'");
  CHECK(one(latest, "SELECT min_samples_per_s || ' ' || max_samples_per_s || ' ' || sd_samples_per_s FROM v_scaling "
                    "WHERE ranks = 2") == "1900.0 2100.0 141.4");
  latest.exec("DELETE FROM runs WHERE repeat = 1");
  dtnn::ResultStore::Target target;
  target.model = "simplecnn", target.dataset = "fashion-mnist", target.metric = "test_accuracy";
  target.target = 88.3, target.num_epochs = 5, target.optimizer = "adam", target.recipe = "r", target.source = "s";
  latest.replace_targets({target});
  CHECK(one(latest, "SELECT verdict FROM v_accuracy_vs_target WHERE value IS NOT NULL") == "pass");
  CHECK(one(latest, "SELECT verdict FROM v_accuracy_vs_target WHERE value IS NULL") == "no value");
}

TEST_CASE("store: a version-3 database gains status 'diverged' and keeps runs, epochs, layers, views", "[store]") {
  const std::string path = fresh_db("v3");
  {
    dtnn::ResultStore v3 = dtnn::ResultStore::open_at_version(path, 3);
    REQUIRE(v3.version() == 3);
    v3.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
            "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
            " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
            " 'c0ffee',0,'{}');");
    for (const char* ranks : {"1", "2"})
      v3.exec(std::string("INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework,"
              " model, dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status,"
              " command, log_path, runner_pid, runner_host, samples_per_s, test_accuracy, tags) VALUES (1, 1, 'k")
              + ranks + "', 'c', 'l', 0, 'dtnn', 'simplecnn', 'mnist', 'auto', " + ranks + ", 1, 'cpu', 64, 5, 'sgd',"
              " '{}', 'ok', 'x', 'y', 1, 'h', " + (ranks[0] == '1' ? "1000.0" : "1900.0") + ", 89.0, 'ci');"
              "INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) VALUES (last_insert_rowid(),"
              " 1, 64, 0.1, 640.0, '{}');"
              "INSERT INTO layer_timings (run_id, layer_id, type) SELECT max(id), 1, 'FC' FROM runs;");
    CHECK_THROWS(v3.exec("UPDATE runs SET status = 'diverged' WHERE id = 1"));  // the CHECK of version 3
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "PRAGMA foreign_keys") == "1");  // back on after the migration turned them off
  CHECK(one(latest, "SELECT count(*) FROM runs") == "2");
  CHECK(one(latest, "SELECT count(*) FROM epochs") == "2");  // not cascade-deleted with the old table
  CHECK(one(latest, "SELECT count(*) FROM layer_timings") == "2");
  CHECK(one(latest, "SELECT group_concat(tags || ':' || test_accuracy) FROM runs") == "ci:89.0,ci:89.0");
  CHECK(one(latest, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'runs_by_%'") == "2");
  CHECK(one(latest, "SELECT speedup FROM v_scaling WHERE ranks = 2") == "1.9");
  CHECK(one(latest, "SELECT count(*) FROM v_throughput") == "2");
  CHECK(one(latest, "PRAGMA integrity_check") == "ok");
  latest.exec("UPDATE runs SET status = 'diverged' WHERE id = 2");
  CHECK(one(latest, "SELECT count(*) FROM v_throughput") == "1");  // the views count ok runs only
  CHECK_THROWS(latest.exec("UPDATE runs SET status = 'bogus' WHERE id = 1"));
  // Foreign keys still hold on the rebuilt table.
  CHECK_THROWS(latest.exec("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) "
                           "VALUES (999, 1, 1, 1.0, 1.0, '{}')"));
  CHECK_THROWS(latest.exec("DELETE FROM matrices"));
}

TEST_CASE("store: a version-11 database gains targets.momentum, its targets match any momentum until stated", "[store]") {
  const std::string path = fresh_db("v11");
  {
    dtnn::ResultStore v11 = dtnn::ResultStore::open_at_version(path, 11);
    REQUIRE(v11.version() == 11);
    CHECK_THROWS(v11.query("SELECT momentum FROM targets"));
    v11.exec("INSERT INTO matrices (name, file, hash, text) VALUES ('old', 'old.toml', 'h', 't');"
             "INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
             " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
             " 'c0ffee',0,'{}');"
             "INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model,"
             " dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, command,"
             " log_path, runner_pid, runner_host, samples_per_s, test_accuracy) VALUES (1, 1, 'k1', 'c', 'l', 0,"
             " 'dtnn', 'resnet18_d2l', 'fashion-mnist', 'auto', 1, 2, 'cpu', 256, 10, 'sgd',"
             " '{\"learning_rate\": 0.1, \"momentum\": 0.0}', 'ok', 'x', 'y', 1, 'h', 95.0, 91.8);"
             "INSERT INTO targets (model, dataset, metric, target, tolerance, num_epochs, optimizer, recipe, source,"
             " learning_rate, batch_size, ranks) VALUES ('resnet18_d2l', 'fashion-mnist', 'test_accuracy', 91.0, 1.0,"
             " 10, 'sgd', 'r', 's', 0.1, 256, '1');");
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(path);
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM targets WHERE momentum IS NULL") == "1");  // not stated
  CHECK(one(latest, "SELECT verdict FROM v_accuracy_vs_target") == "pass");          // a target without momentum
  dtnn::ResultStore::Target t;
  t.model = "resnet18_d2l";
  t.dataset = "fashion-mnist";
  t.metric = "test_accuracy";
  t.target = 91.0;
  t.tolerance = 1.0;
  t.num_epochs = 10;
  t.optimizer = "sgd";
  t.source = "s";
  t.learning_rate = 0.1;
  t.batch_size = 256;
  t.ranks = {1};
  t.momentum = 0.9;  // another recipe: the run (momentum 0.0 in its parameters) is not judged
  latest.replace_targets({t});
  CHECK(one(latest, "SELECT count(*) FROM v_accuracy_vs_target") == "0");
  t.momentum = 0.0;
  latest.replace_targets({t});
  CHECK(one(latest, "SELECT verdict FROM v_accuracy_vs_target") == "pass");
}

TEST_CASE("store: files that are not (this version of) a dtnn database are refused", "[store]") {
  const std::string garbage = fresh_db("garbage");
  std::ofstream(garbage) << "this is not an SQLite file, it is long enough to have a header......................."
                            "...........................................................................\n";
  CHECK_THROWS_WITH(dtnn::ResultStore::open(garbage), Contains(garbage));
  CHECK_THROWS_WITH(dtnn::ResultStore::open_read_only(fresh_db("missing")), Contains("no such results database"));

  const std::string other = fresh_db("other");
  {
    dtnn::ResultStore s = dtnn::ResultStore::open_at_version(other, 0);
    s.exec("DROP TABLE schema_migrations; CREATE TABLE t (x)");
  }
  CHECK_THROWS_WITH(dtnn::ResultStore::open(other), Contains("not a dtnn results database"));

  const std::string future = fresh_db("future");
  {
    dtnn::ResultStore s = dtnn::ResultStore::open(future);
    s.exec("INSERT INTO schema_migrations (version, description) VALUES (99, 'from the future')");
  }
  const std::string newer = future + ": this database was written by a newer dtnn (schema version 99, this build knows " +
                            std::to_string(dtnn::ResultStore::latest_version()) + "): use that build or a newer one";
  CHECK_THROWS_WITH(dtnn::ResultStore::open(future), newer);
  CHECK_THROWS_WITH(dtnn::ResultStore::open_read_only(future), newer);
  // A version no dtnn writes (2^63 - 1 read back as an int is -1): refused by readers and writers alike, never
  // migrated, and the file left as it was.
  const std::string foreign = fresh_db("foreign_version");
  {
    dtnn::ResultStore s = dtnn::ResultStore::open(foreign);
    s.exec("INSERT INTO schema_migrations (version, description) VALUES (9223372036854775807, 'foreign')");
  }
  const auto stamp = fs::last_write_time(foreign);
  const auto size = fs::file_size(foreign);
  CHECK_THROWS_WITH(dtnn::ResultStore::open(foreign),
                    Contains("schema version 9223372036854775807 is not one any dtnn writes") &&
                        Contains("not read or migrated"));
  CHECK_THROWS_WITH(dtnn::ResultStore::open_read_only(foreign),
                    Contains("schema version 9223372036854775807 is not one any dtnn writes") &&
                        Contains("not read or migrated"));
  CHECK(fs::last_write_time(foreign) == stamp);
  CHECK(fs::file_size(foreign) == size);
  // dtnn report reads the database with Python's own SQL: it made no such check and wrote a report.
  const std::string out = fresh_db("future_report");
  for (const std::string& db : {future, other}) {
    const dtnn::test::Command c = dtnn::test::run_dtnn("report --db " + db + " --out " + out);
    INFO(c.out << c.err);
    CHECK(c.status == 1);
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Contains(db == future ? newer : "not a dtnn results database"));
    CHECK_FALSE(fs::exists(out + "/report.md"));
  }
}

TEST_CASE("store: no output option replaces a results database", "[store]") {
  // `--report=results.db` (the tab key's slip) replaced every stored run with one report.
  const std::string db = fresh_db("not_an_output");
  dtnn::ResultStore::open(db).add_matrix("m", "m.toml", "h", "name = \"m\"\n");
  const std::string before = dtnn::read_file(db);
  for (const char* option : {"--report=", "--history_file=", "--weights_and_bias_filename="}) {
    const dtnn::test::Command c =
        dtnn::test::run_dtnn(std::string("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=1 ") + option + db);
    INFO(option << ": " << c.err);
    CHECK(c.status == 1);
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Contains(db + ": is an SQLite database"));
  }
  // The other commands' outputs, refused before they measure or judge anything (`layers --json` wrote its
  // file with std::ofstream after timing every layer).
  const std::string other = fresh_db("not_an_output_other");
  dtnn::ResultStore::open(other);
  for (const std::string& command :
       {"layers --model=simplecnn --samples=1 --json=" + db, "check --db " + other + " --junit " + db,
        "history --db " + other + " --markdown " + db, "predict --model simplecnn --model_kind pydtnn --write-profile " + db}) {
    const dtnn::test::Command c = dtnn::test::run_dtnn(command);
    INFO(command << ": " << c.err);
    CHECK(c.status != 0);
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Contains(db + ": is an SQLite database"));
  }
  CHECK(dtnn::read_file(db) == before);
  fs::remove(db);
  fs::remove(other);
}

TEST_CASE("store: paths that cannot be a database file are refused in one clear line", "[store]") {
  const std::string file = fresh_db("plain");
  std::ofstream(file) << "x";
  CHECK_THROWS_WITH(dtnn::ResultStore::open(""), "--db: empty path (expected a results database file)");
  CHECK_THROWS_WITH(dtnn::ResultStore::open("/dev/null"),
                    "/dev/null: not a regular file (a results database is a file)");
  CHECK_THROWS_WITH(dtnn::ResultStore::open(file + "/x.db"), file + "/x.db: " + file + " is not a directory");
  CHECK_THROWS_WITH(dtnn::ResultStore::open_read_only("/tmp"),
                    "/tmp: is a directory, expected a results database file");
  fs::remove(file);
}

TEST_CASE("store: SQLite errors say in words what was being done", "[store]") {
  Fixture f("words");
  f.store.exec("BEGIN");  // a transaction left open: the store's own cannot start
  CHECK_THROWS_WITH(f.store.add_matrix("n", "n.toml", "hash2", "name = \"n\"\n"),
                    f.path + ": starting a transaction: cannot start a transaction within a transaction");
  f.store.exec("ROLLBACK");
}

TEST_CASE("store: a good report is ingested with its epochs and layers", "[store]") {
  Fixture f("ingest");
  const int64_t id = f.begin("k");
  CHECK(one(f.store, "SELECT status FROM runs WHERE id = " + std::to_string(id)) == "running");
  f.store.finish_run_ok(id, real_report(), 1.5);
  CHECK(one(f.store, "SELECT status FROM runs") == "ok");
  CHECK(one(f.store, "SELECT count(*) FROM epochs") == "2");
  CHECK(std::stod(one(f.store, "SELECT samples_per_s FROM runs")) > 0.0);
  CHECK(std::stod(one(f.store, "SELECT test_accuracy FROM runs")) >= 0.0);
  CHECK(one(f.store, "SELECT samples FROM epochs WHERE epoch = 1") == "192");  // 3 steps of 64
  CHECK(one(f.store, "SELECT count(*) FROM layer_timings WHERE type = 'Conv2D' AND problem LIKE 'n64_c1h28w28_k4%'") ==
        "1");
  CHECK(one(f.store, "SELECT count(*) FROM layer_timings WHERE forward_ms > 0") != "0");
  // A run cannot be finished twice.
  CHECK_THROWS_WITH(f.store.finish_run_ok(id, real_report(), 1.0), Contains("not a running run"));
  // Where it ran (migration 11): a sequential run started by hand, on this host.
  CHECK(one(f.store, "SELECT scheduler || '|' || launcher || '|' || tasks_per_node || '|' || job_id FROM runs") ==
        "none|none|1|");
  CHECK(one(f.store, "SELECT node_list FROM runs") == dtnn::host_name());
}

TEST_CASE("store: a run that trained no sample has no throughput, and a global-batch trial stores its batch", "[store]") {
  Fixture f("no_samples");
  // num_epochs = 0 (or --evaluate_only): the report says 0 samples/s, which v_throughput averaged in.
  nlohmann::json j = nlohmann::json::parse(real_report());
  j["training"]["samples"] = 0;
  j["training"]["samples_per_s"] = 0.0;
  const int64_t none = f.begin("none");
  f.store.finish_run_ok(none, j.dump(), 1.0);
  CHECK(one(f.store, "SELECT status || '|' || ifnull(samples_per_s, 'NULL') FROM runs WHERE id = " +
                         std::to_string(none)) == "ok|NULL");
  CHECK(one(f.store, "SELECT count(samples_per_s) FROM v_throughput") == "0");  // averages skip NULL
  // A trial that sets global_batch_size (no batch_size) was stored as the default batch 64.
  dtnn::RunStart s;
  s.matrix_id = f.matrix;
  s.environment_id = f.env;
  s.trial_key = s.config_key = s.label = "global";
  s.params = {{"model", "simplemlp"}, {"ranks", "2"}, {"dataset", "mnist"}, {"global_batch_size", "512"}};
  s.command = "dtnn train";
  s.log_path = "x.log";
  const int64_t global = f.store.begin_run(s);
  CHECK(one(f.store, "SELECT batch_size FROM runs WHERE id = " + std::to_string(global)) == "512");
}

TEST_CASE("store: a report's placement fills the run's Slurm columns, an older report leaves them empty", "[store]") {
  Fixture f("placement");
  nlohmann::json j = nlohmann::json::parse(real_report());
  j["placement"] = {{"scheduler", "slurm"}, {"cluster", "c"}, {"job_id", "12"}, {"step_id", "3"},
                    {"node_list", "n1,n2"}, {"tasks_per_node", "2,2"}, {"launcher", "srun"},
                    {"launcher_version", "slurm 22.05.8"}};
  const int64_t a = f.begin("a");
  f.store.finish_run_ok(a, j.dump(), 1.0);
  CHECK(one(f.store, "SELECT scheduler || cluster || job_id || '.' || step_id || node_list || tasks_per_node || launcher "
                     "|| launcher_version FROM runs WHERE id = " + std::to_string(a)) ==
        "slurmc12.3n1,n22,2srunslurm 22.05.8");
  j.erase("placement");
  const int64_t b = f.begin("b");
  f.store.finish_run_ok(b, j.dump(), 1.0);
  CHECK(one(f.store, "SELECT scheduler || job_id || node_list || launcher FROM runs WHERE id = " + std::to_string(b)) == "");
  j["placement"] = {{"scheduler", "slurm"}};  // mistyped: the whole report is refused
  const int64_t c = f.begin("c");
  CHECK_THROWS_WITH(f.store.finish_run_ok(c, j.dump(), 1.0), Contains("missing or mistyped"));
  CHECK(one(f.store, "SELECT status FROM runs WHERE id = " + std::to_string(c)) == "running");
}

TEST_CASE("store: a malformed or truncated report changes nothing", "[store]") {
  Fixture f("bad_report");
  const int64_t id = f.begin("k");
  const std::string good = real_report();
  CHECK_THROWS_WITH(f.store.finish_run_ok(id, "{ this is not json", 1.0), Contains("not valid JSON"));
  CHECK_THROWS_WITH(f.store.finish_run_ok(id, good.substr(0, good.size() / 2), 1.0), Contains("not valid JSON"));
  CHECK_THROWS_WITH(f.store.finish_run_ok(id, R"({"schema": "something/2"})", 1.0), Contains("dtnn.run_report/1"));
  std::string no_epochs = good;
  no_epochs.replace(no_epochs.find("\"epochs\""), 8, "\"epochz\"");
  CHECK_THROWS_WITH(f.store.finish_run_ok(id, no_epochs, 1.0), Contains("missing or mistyped"));
  // A float where a count belongs (a cast of 1e300 to an integer is undefined behaviour).
  nlohmann::json huge = nlohmann::json::parse(good);
  huge["epochs"][0]["epoch"] = 1e300;
  CHECK_THROWS_WITH(f.store.finish_run_ok(id, huge.dump(), 1.0),
                    Contains("run report: field 'epoch' holds 1e+300 where a whole number"));
  CHECK(one(f.store, "SELECT status FROM runs") == "running");
  CHECK(one(f.store, "SELECT count(*) FROM epochs") == "0");
  CHECK(one(f.store, "SELECT count(*) FROM layer_timings") == "0");
  f.store.finish_run(id, "failed", "run report: not valid JSON", 1.0);
  CHECK(one(f.store, "SELECT status || ': ' || error FROM runs") == "failed: run report: not valid JSON");
  CHECK(one(f.store, "PRAGMA integrity_check") == "ok");
}

TEST_CASE("store: read-only stores refuse writes", "[store]") {
  Fixture f("ro");
  f.begin("k");
  const dtnn::ResultStore ro = dtnn::ResultStore::open_read_only(f.path);
  CHECK(one(ro, "SELECT count(*) FROM runs") == "1");
  CHECK_THROWS_WITH(ro.query("DELETE FROM runs"), Contains("read-only"));
  CHECK_THROWS_WITH(ro.query("SELECT 1; DELETE FROM runs"), Contains("one SQL statement"));
  CHECK_THROWS_WITH(ro.query("SELECT 1; /* c */ SELECT 2"), Contains("extra text: \"SELECT 2\""));
  CHECK(one(ro, "SELECT 1; -- a comment\n ; /* another */ -- last") == "1");
  CHECK(one(ro, "SELECT 1 /* unclosed") == "1");
  CHECK(one(ro, "SELECT count(*) FROM runs") == "1");
}

TEST_CASE("store: runs of a runner that died are marked interrupted", "[store]") {
  Fixture f("orphans");
  const int64_t mine = f.begin("mine");
  const int64_t orphan = f.begin("orphan");
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);  // the pid is gone now
  f.store.exec("UPDATE runs SET runner_pid = " + std::to_string(child) + " WHERE id = " + std::to_string(orphan));
  CHECK(f.store.reap_orphaned_runs() == std::vector<std::string>{"x.log"});
  CHECK(one(f.store, "SELECT status FROM runs WHERE id = " + std::to_string(orphan)) == "interrupted");
  CHECK(one(f.store, "SELECT status FROM runs WHERE id = " + std::to_string(mine)) == "running");  // ours: alive
}

TEST_CASE("store: dataset labels name the data a run used", "[store]") {
  CHECK(dtnn::dataset_label({{"dataset", "mnist"}, {"dataset_train_path", "/usr/share/datasets/fashion-mnist/"}}) ==
        "fashion-mnist");
  CHECK(dtnn::dataset_label({{"dataset", "mnist"}, {"dataset_train_path", "datasets/mnist-10k"}}) ==
        "mnist-10k");
  CHECK(dtnn::dataset_label({{"dataset", "mnist"}, {"use_synthetic_data", "True"}}) == "synthetic-mnist");
  CHECK(dtnn::dataset_label({{"dataset", "mnist"}}) == "mnist");
}
