// The runner end to end, with the real dtnn binary as the trial process: statuses (ok, failed, unsupported,
// timeout, interrupted), two runners writing one database at once, a runner killed with SIGKILL in the
// middle of a trial (the database stays intact and --resume finishes the matrix), and the CLI exit codes
// of query, check and compare.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_helpers.h"
#include "helpers.h"
#include "results/store.h"
#include "store_value.h"
#include "experiments/runner_helpers.h"
#include "skip.h"

extern char** environ;

using Catch::Contains;

using dtnn::test::one;

namespace {

namespace fs = std::filesystem;
using namespace dtnn::test::runner;

pid_t spawn_dtnn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {DTNN_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, DTNN_BINARY, &fa, nullptr, cargv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// An executable shell script in the workspace, for `dtnn run --dtnn SCRIPT` (a stand-in trial process). It
// answers the runner's `--version` (experiments/runner.h binary_provenance) at once, as a build without
// compiled-in provenance would, instead of running its body (a body that sleeps would hold the runner 5 s).
std::string script(const Workspace& ws, const std::string& name, const std::string& body) {
  const std::string p = ws.file(name, "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'dtnn stand-in'; exit 0; }\n" + body);
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read | fs::perms::others_exec);
  return p;
}

// Waits (up to 60 s) until the database at `db` has a 'running' run.
bool wait_running(const std::string& db) {
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      if (fs::exists(db) && one(db, "SELECT count(*) FROM runs WHERE status = 'running'") == "1") return true;
    } catch (...) {
    }
  }
  return false;
}

}  // namespace

TEST_CASE("runner: ok, failed, unsupported and timeout runs are recorded with their reasons", "[runner]") {
  Workspace ws("statuses");
  // timeout_s leaves the ok run (about 1 s alone) a wide margin under a loaded ctest -j2; the timeout trial
  // (50 whole epochs) could never finish in it.
  const std::string matrix = ws.file("statuses.toml", std::string(R"(name = "statuses"
timeout_s = 10
repeats = 1
)") + kQuickBase + R"(
[axes]
model = ["simplemlp"]
[[include]]
model = "simplecnn"
device = "gpu"
[[include]]
model = "simplecnn"
use_synthetic_data = false
dataset_train_path = "/nonexistent/data"
[[include]]
model = "simplecnn"
steps_per_epoch = 0
num_epochs = 50
)");
  const std::string log = (ws.dir / "run.log").string();
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db(), log) == 1);  // a failure and a timeout
  const std::string out = read_text(log);
  CHECK_THAT(out, Contains("1 ok, 1 failed, 1 timeout, 1 unsupported"));
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE model = 'simplemlp'") == "ok");
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE device = 'gpu'") == "unsupported");
  CHECK_THAT(one(ws.db(), "SELECT error FROM runs WHERE device = 'gpu'"), Contains("--enable_gpu"));
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE dataset = 'data'") == "failed");
  CHECK_THAT(one(ws.db(), "SELECT error FROM runs WHERE dataset = 'data'"), Contains("/nonexistent/data"));
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE num_epochs = 50") == "timeout");
  // Every run has its log file, starting with the command line.
  CHECK_THAT(read_text(one(ws.db(), "SELECT log_path FROM runs WHERE model = 'simplemlp'")),
             Contains("train --dataset=mnist"));
  // --resume runs only what is not stored ok; --only narrows the matrix.
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --resume --only model=simplemlp", log) == 0);
  CHECK_THAT(read_text(log), Contains("0 run(s) to do, 1 already stored ok"));
  // An edited matrix file (a new text, a new matrices row) still knows its trials by their keys.
  std::ofstream(matrix, std::ios::app) << "# edited after the first run\n";
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --resume --only model=simplemlp", log) == 0);
  CHECK_THAT(read_text(log), Contains("0 run(s) to do, 1 already stored ok"));
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --only colour=blue", log) == 1);
  CHECK_THAT(read_text(log), Contains("colour"));
}

TEST_CASE("runner: two runners write one database at once", "[runner]") {
  Workspace ws("concurrent");
  const std::string a = ws.file("a.toml", std::string("name = \"a\"\nrepeats = 2\n") + kQuickBase +
                                              "[axes]\nmodel = [\"simplemlp\", \"simplecnn\"]\n");
  const std::string b = ws.file("b.toml", std::string("name = \"b\"\nrepeats = 2\n") + kQuickBase +
                                              "[axes]\nmodel = [\"simplecnn\", \"simplemlp\"]\nseed = [1]\n");
  const pid_t pa = spawn_dtnn({"run", a, "--db", ws.db()}, (ws.dir / "a.log").string());
  const pid_t pb = spawn_dtnn({"run", b, "--db", ws.db()}, (ws.dir / "b.log").string());
  CHECK(wait_exit(pa) == 0);
  CHECK(wait_exit(pb) == 0);
  INFO(read_text((ws.dir / "a.log").string()) + read_text((ws.dir / "b.log").string()));
  CHECK(one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'ok'") == "8");
  CHECK(one(ws.db(), "SELECT count(*) FROM epochs") == "16");
  CHECK(one(ws.db(), "SELECT count(DISTINCT matrix_id) FROM runs") == "2");
  CHECK(one(ws.db(), "PRAGMA integrity_check") == "ok");
}

TEST_CASE("runner: runners resuming one matrix at once split its missing runs", "[runner]") {
  Workspace ws("resume_together");
  // Every runner plans all six runs (the database is empty when they start); the claims keep each run to one.
  const std::string matrix = ws.file("r.toml", std::string("name = \"r\"\nrepeats = 1\n") + kQuickBase +
                                                   "[axes]\nseed = [1, 2, 3, 4, 5, 6]\n");
  std::vector<pid_t> runners;
  for (int i = 0; i < 3; ++i)
    runners.push_back(spawn_dtnn({"run", matrix, "--db", ws.db(), "--resume"},
                                 (ws.dir / ("r" + std::to_string(i) + ".log")).string()));
  for (const pid_t p : runners) CHECK(wait_exit(p) == 0);
  std::string logs;
  for (int i = 0; i < 3; ++i) logs += read_text((ws.dir / ("r" + std::to_string(i) + ".log")).string());
  INFO(logs);
  CHECK(one(ws.db(), "SELECT count(*) FROM runs") == "6");
  CHECK(one(ws.db(), "SELECT count(DISTINCT trial_key) FROM runs WHERE status = 'ok'") == "6");
  // A second repeat asked for later is numbered after the stored one.
  ws.file("r.toml", std::string("name = \"r\"\nrepeats = 2\n") + kQuickBase + "[axes]\nseed = [1, 2, 3, 4, 5, 6]\n");
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --resume --only seed=1", (ws.dir / "r3.log").string()) == 0);
  CHECK(one(ws.db(), "SELECT group_concat(repeat) FROM (SELECT repeat FROM runs WHERE trial_key LIKE '%seed=1%' "
                     "ORDER BY repeat)") == "0,1");
}

TEST_CASE("runner: repeat_seeds trains repeat r with the trial's seed + r, also when resumed", "[runner]") {
  Workspace ws("repeat_seeds");
  const std::string head = "name = \"s\"\nrepeat_seeds = true\n";
  const std::string base = std::string(kQuickBase) + "seed = 5\n[axes]\nmodel = [\"simplemlp\"]\n";
  const std::string matrix = ws.file("s.toml", head + "repeats = 1\n" + base);
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db()) == 0);
  // Two more repeats by --resume: the claims number them 1 and 2, and their seeds follow.
  ws.file("s.toml", head + "repeats = 3\n" + base);
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --resume") == 0);
  CHECK(one(ws.db(), "SELECT group_concat(repeat || ':' || json_extract(report, '$.options.seed'), ' ') FROM "
                     "(SELECT * FROM runs ORDER BY repeat)") == "0:5 1:6 2:7");
  CHECK(one(ws.db(), "SELECT count(*) FROM runs WHERE command LIKE '%--seed=' || (5 + repeat) || ' %'") == "3");
  CHECK(one(ws.db(), "SELECT count(DISTINCT trial_key) FROM runs") == "1");  // one trial, three seeds
  // A seed that is not a whole number cannot be stepped.
  const std::string bad = ws.file("b.toml", "name = \"b\"\nrepeat_seeds = true\nrepeats = 2\n" +
                                                std::string(kQuickBase) + "seed = \"x\"\n");
  CHECK(dtnn_cli("run " + bad + " --db " + ws.db()) != 0);
}

TEST_CASE("runner: SIGKILL mid-trial leaves the database intact and --resume finishes the matrix", "[runner]") {
  Workspace ws("kill");
  // Three trials; the second one is long enough to be killed in.
  const std::string matrix = ws.file("kill.toml", std::string("name = \"kill\"\ntimeout_s = 120\n") + kQuickBase +
                                                      "[axes]\nseed = [1, 2, 3]\n[[include]]\nseed = 4\n"
                                                      "steps_per_epoch = 0\nnum_epochs = 1\nmodel = \"simplecnn\"\n");
  const pid_t runner = spawn_dtnn({"run", matrix, "--db", ws.db()}, (ws.dir / "run1.log").string());
  // Wait until the long trial is running, then kill the runner outright.
  bool long_started = false;
  for (int i = 0; i < 600 && !long_started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(ws.db())) {
      try {
        long_started = one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'running' AND trial_key LIKE '%seed=4%'") == "1";
      } catch (...) {
      }
    }
  }
  REQUIRE(long_started);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(runner, SIGKILL);
  CHECK(wait_exit(runner) == 128 + SIGKILL);
  CHECK(one(ws.db(), "PRAGMA integrity_check") == "ok");
  CHECK(one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'ok'") == "3");
  CHECK(one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'running'") == "1");
  // The trial process died with its runner (PR_SET_PDEATHSIG), so nothing is left training.
  const std::string log2 = (ws.dir / "run2.log").string();
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --resume", log2) == 0);
  CHECK_THAT(read_text(log2), Contains("marked 1 run(s) of an earlier, killed runner as interrupted"));
  CHECK_THAT(read_text(log2), Contains("1 run(s) to do, 3 already stored ok"));
  CHECK(one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'ok'") == "4");
  CHECK(one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'interrupted'") == "1");
  CHECK(one(ws.db(), "PRAGMA integrity_check") == "ok");
}

TEST_CASE("runner: SIGTERM stops the trial, marks it interrupted and exits 128 + SIGTERM", "[runner]") {
  Workspace ws("sigterm");
  const std::string matrix = ws.file("t.toml", "name = \"t\"\n[base]\nuse_synthetic_data = true\nnum_epochs = 20\n"
                                              "threads = 1\n");
  const pid_t runner = spawn_dtnn({"run", matrix, "--db", ws.db()}, (ws.dir / "run.log").string());
  bool started = false;
  for (int i = 0; i < 600 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      started = fs::exists(ws.db()) && one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'running'") == "1";
    } catch (...) {
    }
  }
  REQUIRE(started);
  ::kill(runner, SIGTERM);
  CHECK(wait_exit(runner) == 128 + SIGTERM);
  CHECK(one(ws.db(), "SELECT status FROM runs") == "interrupted");
  CHECK(one(ws.db(), "PRAGMA integrity_check") == "ok");
}

TEST_CASE("cli: query is read-only, check and compare exit 1 on failures", "[runner]") {
  Workspace ws("cli");
  const std::string matrix = ws.file("m.toml", std::string("name = \"m\"\nrepeats = 4\n") + kQuickBase +
                                                   "[axes]\nmodel = [\"simplemlp\"]\n");
  REQUIRE(dtnn_cli("run " + matrix + " --db " + ws.db()) == 0);
  const std::string log = (ws.dir / "q.log").string();
  CHECK(dtnn_cli("query throughput --db " + ws.db(), log) == 0);
  CHECK_THAT(read_text(log), Contains("(4 rows)"));
  CHECK(dtnn_cli("query throughput --format csv --db " + ws.db(), log) == 0);
  CHECK_THAT(read_text(log), Contains("run_id,matrix,git_commit,framework"));
  CHECK(dtnn_cli("query \"DELETE FROM runs\" --db " + ws.db(), log) == 1);
  CHECK_THAT(read_text(log), Contains("read-only"));
  CHECK(dtnn_cli("query no_such_view --db " + ws.db(), log) == 1);
  CHECK_THAT(read_text(log), Contains("unknown view 'no_such_view'"));
  CHECK(one(ws.db(), "SELECT count(*) FROM runs") == "4");
  // A time limit of NaN would turn the guard off: refused as a malformed command line.
  CHECK(dtnn_cli("query runs --timeout=nan --db " + ws.db(), log) == 2);
  CHECK_THAT(read_text(log), Contains("--timeout"));
  // JSON: integers as integers, a subnormal double as a number, digits with a leading zero stay text.
  CHECK(dtnn_cli("query \"SELECT 1 AS i, 5e-324 AS s, '007' AS z, 2.5 AS d\" --format json --db " + ws.db(), log) == 0);
  const nlohmann::json j = nlohmann::json::parse(read_text(log));
  CHECK(j.at(0).at("i").is_number_integer());
  CHECK(j.at(0).at("s").get<double>() > 0.0);
  CHECK(j.at(0).at("s").get<double>() < 1e-300);
  CHECK(j.at(0).at("z") == "007");
  CHECK(j.at(0).at("d") == 2.5);
  // The table escapes control characters (an ESC from a stored value would clear the screen); JSON escapes them.
  CHECK(dtnn_cli("query \"SELECT char(27) || '[2J' AS t\" --db " + ws.db(), log) == 0);
  CHECK_THAT(read_text(log), Contains("\\x1b[2J") && !Contains("\x1b"));

  // Targets: synthetic data cannot reach 99 %, so the check fails; a 1 % target passes. Both state the recipe the
  // runs followed (2 epochs of 3 steps, sgd 0.01, batch 64, 1 rank).
  const std::string recipe = "num_epochs = 2\noptimizer = \"sgd\"\nlearning_rate = 0.01\nbatch_size = 64\nranks = [1]\n";
  const std::string hard = ws.file("hard.toml", R"([[target]]
model = "simplemlp"
dataset = "synthetic-mnist"
metric = "test_accuracy"
target = 99.0
source = "planted"
steps_per_epoch = 3
)" + recipe);
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + hard + " --junit " + ws.file("j.xml", "old") +
                     " --markdown " + ws.file("s.md", "old"), log) == 1);
  CHECK_THAT(read_text(log), Contains("0 pass, 4 fail"));
  // 4 runs judged, and the trial's throughput: no performance reference for it (skipped, never a verdict).
  CHECK(dtnn::test::junit_holds((ws.dir / "j.xml").string(), 5, 4, 1));
  CHECK_THAT(read_text((ws.dir / "j.xml").string()), Contains("no reference for this machine"));
  CHECK_THAT(read_text((ws.dir / "j.xml").string()), Contains("<failure message=\"test_accuracy"));
  CHECK_THAT(read_text((ws.dir / "s.md").string()), Contains("## dtnn check: 0 pass, 4 fail, 0 without a target"));
  // The same target for whole epochs: these 3-step runs followed another recipe -- not judged, not a failure,
  // and the difference is named.
  const std::string whole = ws.file("whole.toml", "[[target]]\nmodel = \"simplemlp\"\ndataset = \"synthetic-mnist\"\n"
                                                  "metric = \"test_accuracy\"\ntarget = 99.0\nsource = \"x\"\n"
                                                  "recipe = \"whole\"\n" + recipe);
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + whole + " --junit " + ws.file("w.xml", ""), log) == 0);
  CHECK(dtnn::test::junit_holds((ws.dir / "w.xml").string(), 5, 0, 5));  // not judged: skipped, with the reason
  CHECK_THAT(read_text(log), Contains("0 pass, 0 fail, 4 without a target") &&
                                 Contains("no target (recipe differs from 'whole': epochs capped at 3 steps, target's are whole)"));
  const std::string easy = ws.file("easy.toml", "[[target]]\nmodel = \"simplemlp\"\ndataset = \"synthetic-mnist\"\n"
                                                "metric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\nsource = \"x\"\n"
                                                "steps_per_epoch = 3\n" + recipe);
  CHECK(one(ws.db(), "SELECT count(*) FROM targets") != "0");  // `dtnn run` stored analysis/targets.toml's
  const auto stamp = fs::last_write_time(ws.db());
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + easy, log) == 0);
  CHECK_THAT(read_text(log), Contains("4 pass, 0 fail"));
  CHECK(one(ws.db(), "SELECT count(*) FROM targets WHERE source = 'x'") == "0");  // check reads, never writes
  CHECK(fs::last_write_time(ws.db()) == stamp);
  const std::string bad = ws.file("bad.toml", "[[target]]\nmodel = \"simplemlp\"\nmetrik = 1\n");
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + bad, log) == 2);  // no verdict: 2, not a failure's 1
  CHECK_THAT(read_text(log), Contains("bad.toml:3: unknown key 'metrik'"));
  const std::string vague = ws.file("vague.toml", "[[target]]\nmodel = \"m\"\ndataset = \"d\"\nmetric = \"test_accuracy\"\n"
                                                  "target = 50\nsource = \"s\"\nnum_epochs = 2\noptimizer = \"sgd\"\n");
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + vague, log) == 2);
  CHECK_THAT(read_text(log), Contains("vague.toml:1: target without 'learning_rate' (a target states its recipe)"));
  // Momentum: these runs trained with dtnn's default 0.9 (their reports' options say so). A target stating
  // 0.0 (d2l's recipe) does not judge them, one stating 0.9 does; the store's view matches alike.
  const std::string no_momentum = ws.file("m0.toml", "[[target]]\nmodel = \"simplemlp\"\ndataset = \"synthetic-mnist\"\n"
                                                     "metric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\nsource = \"x\"\n"
                                                     "recipe = \"plain\"\nsteps_per_epoch = 3\nmomentum = 0.0\n" + recipe);
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + no_momentum, log) == 0);
  CHECK_THAT(read_text(log), Contains("0 pass, 0 fail, 4 without a target") &&
                                 Contains("recipe differs from 'plain': momentum 0.9, target's 0)"));
  const std::string with_momentum = ws.file("m9.toml", "[[target]]\nmodel = \"simplemlp\"\ndataset = \"synthetic-mnist\"\n"
                                                       "metric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\nsource = \"x\"\n"
                                                       "steps_per_epoch = 3\nmomentum = 0.9\n" + recipe);
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + with_momentum, log) == 0);
  CHECK_THAT(read_text(log), Contains("4 pass, 0 fail"));
  const std::string wrong = ws.file("m2.toml", "[[target]]\nmodel = \"m\"\ndataset = \"d\"\nmetric = \"test_accuracy\"\n"
                                               "target = 50\nsource = \"s\"\nmomentum = 1.5\n" + recipe);
  CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + wrong, log) == 2);
  CHECK_THAT(read_text(log), Contains("m2.toml:1: momentum must be in [0, 1)"));
  // A deep targets file (dotted keys, nested table headers) is one line, not a stack overflow in toml++.
  std::string dotted = "a";
  for (int i = 0; i < 50000; ++i) dotted += ".a";
  for (const std::string& text : {dotted + " = 1\n", "[" + dotted + "]\n"}) {
    const std::string deep = ws.file("deep.toml", text);
    CHECK(dtnn_cli("check --db " + ws.db() + " --targets " + deep, log) == 2);
    CHECK_THAT(read_text(log), Contains("deep.toml:1: tables, arrays or dotted keys nested more than 32 levels deep"));
    CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --targets " + deep, log) == 1);  // a run that cannot start
    CHECK_THAT(read_text(log), Contains("deep.toml:1: tables, arrays or dotted keys nested more than 32 levels deep"));
  }
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(ws.db());
    for (const double momentum : {0.0, 0.9, -1.0}) {  // -1: not stated, stored NULL
      dtnn::ResultStore::Target t;
      t.model = "simplemlp";
      t.dataset = "synthetic-mnist";
      t.metric = "test_accuracy";
      t.target = t.tolerance = 1.0;
      t.num_epochs = 2;
      t.optimizer = "sgd";
      t.source = "s";
      t.learning_rate = 0.01;
      t.batch_size = 64;
      t.ranks = {1};
      t.steps_per_epoch = 3;
      t.momentum = momentum;
      store.replace_targets({t});
      INFO("target momentum " << momentum);
      CHECK(store.query("SELECT count(*) FROM v_accuracy_vs_target").rows.at(0).at(0) == (momentum == 0.0 ? "0" : "4"));
      CHECK(store.query("SELECT count(*) FROM targets WHERE momentum IS NULL").rows.at(0).at(0) ==
            (momentum < 0 ? "1" : "0"));
    }
  }

  // compare: one sample per run (its epochs after the first), and a verdict needs 4 runs a side. The same runs on
  // both sides are no regression (exit 0); four planted runs 30 % slower are (exit 1).
  CHECK(dtnn_cli("compare --baseline runs=1-4 --candidate runs=1-4 --db " + ws.db(), log) == 0);
  CHECK_THAT(read_text(log), Contains("same"));
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(ws.db());
    for (int run = 5; run <= 8; ++run) {
      store.exec("INSERT INTO runs (matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model, "
                 "dataset, conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, "
                 "command, log_path, runner_pid, runner_host, tags) SELECT matrix_id, environment_id, trial_key, "
                 "config_key, label, 9, framework, model, dataset, conv_algo, ranks, threads, device, batch_size, "
                 "num_epochs, optimizer, params, 'ok', command, log_path, runner_pid, runner_host, 'slow' FROM runs "
                 "WHERE id = 1");
      for (int e = 1; e <= 2; ++e)
        store.exec("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) SELECT " +
                   std::to_string(run) + ", " + std::to_string(e) + ", samples, time_s, 0.7 * (SELECT "
                   "min(samples_per_s) FROM epochs WHERE run_id < 5) - " + std::to_string(run + e) + ", '{}' FROM "
                   "epochs WHERE run_id = 1 AND epoch = 1");
    }
  }
  const std::string cj = ws.file("c.xml", ""), cm = ws.file("c.md", "");
  CHECK(dtnn_cli("compare --baseline runs=1-4 --candidate tag=slow --db " + ws.db() + " --junit " + cj +
                     " --markdown " + cm, log) == 1);
  CHECK_THAT(read_text(log), Contains("regression"));
  CHECK(dtnn::test::junit_holds(cj, 1, 1, 0));
  CHECK_THAT(read_text(cm), Contains("## dtnn compare: 1 regression(s)") && Contains("| **regression** |"));
  CHECK(dtnn_cli("compare --baseline runs=1-4 --candidate tag=slow --threshold 99% --db " + ws.db(), log) == 0);
  CHECK(dtnn_cli("compare --baseline runs=1-4 --candidate tag=slow --threshold lots --db " + ws.db(), log) == 2);
  CHECK_THAT(read_text(log), Contains("--threshold"));
}

TEST_CASE("runner: an error after a run began marks it failed and the runner goes on", "[runner]") {
  Workspace ws("began");
  const std::string matrix = ws.file("blocked.toml", std::string("name = \"blocked\"\n") + kQuickBase +
                                                         "[axes]\nseed = [1, 2]\n");
  {  // recording where run 1 logs fails: the store throws after the run began
    dtnn::ResultStore store = dtnn::ResultStore::open(ws.db());
    store.exec("CREATE TRIGGER block_1 BEFORE UPDATE OF log_path ON runs WHEN NEW.id = 1 "
               "BEGIN SELECT RAISE(ABORT, 'run 1 is blocked'); END");
  }
  const std::string log = (ws.dir / "run.log").string();
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db(), log) == 1);
  INFO(read_text(log));
  CHECK(one(ws.db(), "SELECT count(*) FROM runs WHERE status = 'running'") == "0");
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE id = 1") == "failed");
  CHECK_THAT(one(ws.db(), "SELECT error FROM runs WHERE id = 1"), Contains("runner: ") && Contains("run 1 is blocked"));
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE id = 2") == "ok");
  CHECK_THAT(read_text(log), Contains("1 ok, 1 failed"));
  CHECK(one(ws.db(), "PRAGMA integrity_check") == "ok");
}

TEST_CASE("runner: SIGHUP and SIGQUIT stop the trial like SIGTERM and exit 128 + the signal", "[runner]") {
  for (const int sig : {SIGHUP, SIGQUIT}) {
    INFO("signal " << sig);
    Workspace ws("hup" + std::to_string(sig));
    const std::string sleeper = script(ws, "sleeper.sh", "exec sleep 60\n");
    const std::string matrix = ws.file("h.toml", "name = \"h\"\n[base]\nthreads = 1\n");
    const pid_t runner = spawn_dtnn({"run", matrix, "--db", ws.db(), "--dtnn", sleeper}, (ws.dir / "run.log").string());
    REQUIRE(wait_running(ws.db()));
    ::kill(runner, sig);
    CHECK(wait_exit(runner) == 128 + sig);
    CHECK(one(ws.db(), "SELECT status || ': ' || error FROM runs") ==
          "interrupted: stopped by signal " + std::to_string(sig));
  }
}

TEST_CASE("runner: a trial killed by a signal keeps only a complete error line as its reason", "[runner]") {
  Workspace ws("killed");
  const std::string matrix = ws.file("k.toml", "name = \"k\"\n[base]\nthreads = 1\n");
  // Killed mid-line (the options dump cut off): the fragment is no reason, nor is the line before it.
  const std::string cut = script(ws, "cut.sh", "printf 'dtnn: earlier\\n  enable_cudnn_auto_conv_a'\nkill -9 $$\n");
  // Killed right after a complete error line: that line is the reason.
  const std::string said = script(ws, "said.sh", "printf 'options\\ndtnn: out of memory\\n'\nkill -9 $$\n");
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + cut) == 1);
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + said) == 1);
  CHECK(one(ws.db(), "SELECT error FROM runs WHERE id = 1") == "killed by signal 9");
  CHECK(one(ws.db(), "SELECT error FROM runs WHERE id = 2") == "killed by signal 9; dtnn: out of memory");
}

TEST_CASE("runner: mpirun's banner rules are not a failed run's error", "[runner]") {
  Workspace ws("banner");
  const std::string matrix = ws.file("b.toml", "name = \"b\"\n[base]\nthreads = 1\n");
  const std::string rule = std::string(74, '-');
  const std::string mpirun = script(ws, "mpirun.sh", "echo " + rule + "\necho 'mpirun noticed that process rank 1 "
                                    "exited on signal 9 (Killed).'\necho " + rule + "\necho '  ===  '\nexit 137\n");
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + mpirun) == 1);
  CHECK(one(ws.db(), "SELECT error FROM runs") == "exit 137: mpirun noticed that process rank 1 exited on signal 9 (Killed).");
}

TEST_CASE("runner: more ranks than slots is said as such, not as the box's last word", "[runner]") {
  Workspace ws("slots");
  const std::string matrix = ws.file("s.toml", "name = \"s\"\n[base]\nthreads = 1\n");
  const std::string rule = std::string(74, '-');
  const std::string mpirun = script(ws, "mpirun.sh", "echo " + rule + "\necho 'There are not enough slots available in "
                                    "the system to satisfy the 4'\necho 'slots that were requested by the application:'\n"
                                    "echo 'launch.'\necho " + rule + "\nexit 1\n");
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + mpirun) == 1);
  CHECK_THAT(one(ws.db(), "SELECT error FROM runs"), Contains("not enough slots") && Contains("--oversubscribe"));
}

TEST_CASE("runner: a failed trial's error is its dtnn: line, also after more output than a stdout buffer", "[runner]") {
  // resnet20's model and memory tables fill more than a 4 KiB stdout buffer before the dataset is opened: a
  // half-flushed stdout line would take in the stderr line, and the stored error would read "**** Loading ...".
  Workspace ws("buffered");
  const std::string matrix = ws.file("m.toml", "name = \"m\"\n[base]\nmodel = \"resnet20_cifar10\"\n"
                                               "dataset = \"cifar10\"\ndataset_train_path = \"/nonexistent/cifar\"\n"
                                               "num_epochs = 1\nthreads = 1\n");
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db()) == 1);
  const std::string error = one(ws.db(), "SELECT error FROM runs");
  CHECK_THAT(error, Contains(": dtnn: ") && Contains("/nonexistent/cifar"));
  CHECK_THAT(error, !Contains("****"));
}

TEST_CASE("cli: paths that are not UTF-8 are carried, and shown escaped", "[runner]") {
  // Linux paths are bytes: a 0xFF in a directory name made the run report unwritable after training, every
  // trial of `dtnn run` fail, and `dtnn report` stop on a Python UnicodeEncodeError.
  Workspace ws("bytes");
  const std::string dir = (ws.dir / "b\xff").string();
  fs::create_directories(dir);
  const std::string log = (ws.dir / "log").string();
  CHECK(dtnn_cli("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --num_epochs=1 --threads=1 "
                 "--report='" + dir + "/r.json' --history_file='" + dir + "/h.txt' --weights_and_bias_filename='" +
                 dir + "/w.npz'", log) == 0);
  const nlohmann::json report = nlohmann::json::parse(read_text(dir + "/r.json"));
  CHECK_THAT(report.at("options").at("report").get<std::string>(), Contains("b\\xff/r.json"));
  CHECK(fs::exists(dir + "/h.txt"));
  CHECK(fs::exists(dir + "/w.npz"));
  const std::string matrix = ws.file("m.toml", std::string("name = \"m\"\n") + kQuickBase);
  CHECK(dtnn_cli("run " + matrix + " --db '" + dir + "/d.db'", log) == 0);
  CHECK(one(dir + "/d.db", "SELECT status FROM runs") == "ok");
  CHECK(dtnn_cli("report --db '" + dir + "/d.db' --out '" + dir + "/out'", log) == 0);
  CHECK(fs::exists(dir + "/out/report.md"));
}

TEST_CASE("runner: the timeout message shows timeout_s as the matrix gives it", "[runner]") {
  Workspace ws("timeout");
  const std::string sleeper = script(ws, "sleeper.sh", "exec sleep 60\n");
  const std::string matrix = ws.file("t.toml", "name = \"t\"\ntimeout_s = 1.5\n[base]\nthreads = 1\n");
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + sleeper) == 1);
  CHECK(one(ws.db(), "SELECT status || ': ' || error FROM runs") == "timeout: no result after 1.5 s (timeout_s = 1.5)");
}

TEST_CASE("runner: a --db that cannot be a database file is one clear line", "[runner]") {
  Workspace ws("baddb");
  const std::string matrix = ws.file("m.toml", std::string("name = \"m\"\n") + kQuickBase);
  const std::string file = ws.file("plain", "not a directory\n");
  const struct {
    std::string db, message;
  } cases[] = {
      {"''", "--db: empty path"},
      {"/dev/null", "/dev/null: not a regular file"},
      {file + "/x.db", file + "/x.db: " + file + " is not a directory"},
      {file + "/a/b/x.db", file + "/a/b/x.db: " + file + " is not a directory"},
      {ws.dir.string(), ws.dir.string() + ": is a directory"},
  };
  for (const auto& c : cases) {
    INFO(c.db);
    const dtnn::test::Command r = dtnn::test::run_dtnn("run " + matrix + " --db " + c.db);
    CHECK(dtnn::test::one_line_error(r));
    CHECK_THAT(r.err, Contains(c.message));
    CHECK_THAT(r.err, !Contains("sqlite3_") && !Contains("filesystem error"));
  }
}

TEST_CASE("cli: check of a missing database or of no runs fails", "[runner]") {
  Workspace ws("check_empty");
  const dtnn::test::Command missing = dtnn::test::run_dtnn("check --db " + (ws.dir / "none.db").string());
  CHECK(dtnn::test::one_line_error(missing));
  CHECK(missing.status == 2);  // could not judge
  CHECK_THAT(missing.err, Contains("none.db: no such results database"));

  // An empty file or a text file is refused and left as it was (not turned into a database).
  const std::string empty = ws.file("empty.db", ""), text = ws.file("text.db", "not a database\n");
  CHECK_THAT(dtnn::test::run_dtnn("check --db " + empty).err, Contains("empty.db: not a dtnn results database"));
  CHECK_THAT(dtnn::test::run_dtnn("check --db " + text).err, Contains("text.db: "));
  CHECK(read_text(empty).empty());
  CHECK(read_text(text) == "not a database\n");
  CHECK_FALSE(fs::exists(empty + "-wal"));

  make_db_with_run(ws.db(), "ok");
  CHECK(dtnn::test::run_dtnn("check --db " + ws.db() + " --select matrix=m").status == 0);
  const dtnn::test::Command nosuch = dtnn::test::run_dtnn("check --db " + ws.db() + " --select=matrix=nosuch");
  CHECK(dtnn::test::one_line_error(nosuch));
  CHECK_THAT(nosuch.err, Contains("no ok run matches --select matrix=nosuch"));
}

TEST_CASE("cli: query reads a database in a directory it cannot write", "[runner]") {
  // root ignores permission bits: as root, read as nobody (setpriv); otherwise as this user.
  if (::geteuid() == 0 && !fs::exists("/usr/bin/setpriv"))
    DTNN_SKIP("running as root without /usr/bin/setpriv to drop privileges");
  const std::string as_reader = ::geteuid() == 0 ? "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  Workspace ws("readonly_dir");
  const fs::path dir = ws.dir / "ro";
  fs::create_directories(dir);
  const std::string db = (dir / "dtnn.db").string();
  make_db_with_run(db, "ok");  // closed: the WAL is checkpointed and its -wal/-shm files removed
  REQUIRE_FALSE(fs::exists(db + "-shm"));
  const auto rx = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                  fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(ws.dir, rx | fs::perms::owner_write);
  fs::permissions(dir, rx);
  const std::string out = (ws.dir / "q.log").string();
  const int rc = std::system((as_reader + DTNN_BINARY + " query matrices --format csv --db " + db + " > " + out +
                              " 2>&1").c_str());
  fs::permissions(dir, rx | fs::perms::owner_write);
  INFO(read_text(out));
  CHECK(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK_THAT(read_text(out), Contains("1,m,m.toml,hash,"));
  CHECK_FALSE(fs::exists(db + "-shm"));
}

namespace {

// A real run report (a short synthetic `dtnn train`) naming the attempt "not-this-run": what a stale or
// foreign report looks like. Its scripts below put it where the runner asked for the report.
std::string foreign_report(const Workspace& ws) {
  const std::string path = (ws.dir / "foreign.report.json").string();
  REQUIRE(std::system(("DTNN_RUN_NONCE=not-this-run " + std::string(DTNN_BINARY) +
                       " train --model=simplemlp --dataset=mnist --use_synthetic_data=True --num_epochs=1 "
                       "--steps_per_epoch=2 --threads=1 --progress=False --report=" + path + " > /dev/null 2>&1")
                          .c_str()) == 0);
  REQUIRE_THAT(read_text(path), Contains("\"run_nonce\": \"not-this-run\""));
  return path;
}

// Shell that sets $r to the path the runner passed as --report=.
const char* const kReportArg = "for a; do case \"$a\" in --report=*) r=\"${a#--report=}\";; esac; done\n";

}  // namespace

TEST_CASE("runner: two databases in one directory keep separate logs", "[runner]") {
  Workspace ws("two_dbs");
  const std::string matrix = ws.file("m.toml", "name = \"m\"\n[base]\nthreads = 1\n");
  for (const std::string name : {"a", "b"}) {
    const std::string say = script(ws, name + ".sh", "echo from " + name + "\nexit 1\n");
    CHECK(dtnn_cli("run " + matrix + " --db " + (ws.dir / (name + ".db")).string() + " --dtnn " + say) == 1);
  }
  // Both databases have a run 1; each log is its own.
  const std::string log_a = one((ws.dir / "a.db").string(), "SELECT log_path FROM runs WHERE id = 1");
  const std::string log_b = one((ws.dir / "b.db").string(), "SELECT log_path FROM runs WHERE id = 1");
  CHECK(log_a != log_b);
  CHECK_THAT(read_text(log_a), Contains("from a") && !Contains("from b"));
  CHECK_THAT(read_text(log_b), Contains("from b"));
}

TEST_CASE("runner: a stale report is never ingested for a later run", "[runner]") {
  Workspace ws("stale");
  const std::string matrix = ws.file("m.toml", "name = \"m\"\n[base]\nthreads = 1\n");
  const std::string report = read_text(foreign_report(ws));
  // Where run 1's report went before reports had a path per database and attempt, as a killed runner
  // would have left it; the next run 1 exits 0 without writing one.
  fs::create_directories(ws.dir / "logs" / "m");
  std::ofstream(ws.dir / "logs" / "m" / "1.report.json") << report;
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + script(ws, "true.sh", "exit 0\n")) == 1);
  CHECK(one(ws.db(), "SELECT status || ': ' || error FROM runs") == "failed: exit 0 but no report was written");
}

TEST_CASE("runner: a report naming another attempt or older than the run is refused", "[runner]") {
  Workspace ws("foreign");
  const std::string matrix = ws.file("m.toml", "name = \"m\"\n[base]\nthreads = 1\n");
  const std::string foreign = foreign_report(ws);
  const std::string renamed = "sed \"s/not-this-run/$DTNN_RUN_NONCE/\" " + foreign + " > \"$r\"\n";
  const std::string copy = script(ws, "copy.sh", kReportArg + ("cp " + foreign + " \"$r\"\n"));
  const std::string old = script(ws, "old.sh", kReportArg + renamed + "touch -d 2001-01-01 \"$r\"\n");
  const std::string own = script(ws, "own.sh", kReportArg + renamed);
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + copy) == 1);
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + old) == 1);
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + own) == 0);
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE id = 1") == "failed");
  CHECK_THAT(one(ws.db(), "SELECT error FROM runs WHERE id = 1"),
             Contains("report was refused") && Contains("names run nonce \"not-this-run\""));
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE id = 2") == "failed");
  CHECK_THAT(one(ws.db(), "SELECT error FROM runs WHERE id = 2"), Contains("written before the run started"));
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE id = 3") == "ok");
  // The nonce is the attempt's name in its file names too.
  CHECK_THAT(one(ws.db(), "SELECT log_path FROM runs WHERE id = 3"),
             Contains("/3-" + one(ws.db(), "SELECT json_extract(report, '$.run_nonce') FROM runs WHERE id = 3")));
}

TEST_CASE("runner: reports a killed runner's trials left are deleted before they can be read", "[runner]") {
  Workspace ws("orphan_reports");
  const std::string matrix = ws.file("m.toml", "name = \"m\"\n[base]\nthreads = 1\n");
  const std::string fail = script(ws, "fail.sh", "exit 1\n");
  make_db_with_run(ws.db(), "running");
  const std::string orphan_log = (ws.dir / "logs" / "old-run.log").string();
  const std::string orphan_report = (ws.dir / "logs" / "old-run.report.json").string();
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(ws.db());
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);  // the pid is gone now
    store.exec("UPDATE runs SET runner_pid = " + std::to_string(child) + ", log_path = '" + orphan_log + "'");
  }
  fs::create_directories(ws.dir / "logs");
  ws.file("logs/old-run.report.json", "{}");
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + fail) == 1);
  CHECK(one(ws.db(), "SELECT status FROM runs WHERE id = 1") == "interrupted");
  CHECK_FALSE(fs::exists(orphan_report));
  // A report a rank wrote after its run ended, in this database's log folder: gone once it is a minute old.
  const fs::path dir = fs::path(one(ws.db(), "SELECT log_path FROM runs WHERE id = 2")).parent_path();
  const fs::path late = dir / "9-0123456789abcdef.report.json", fresh = dir / "8-0123456789abcdef.report.json";
  std::ofstream(late) << "{}";
  std::ofstream(fresh) << "{}";
  fs::last_write_time(late, fs::last_write_time(late) - std::chrono::minutes(2));
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db() + " --dtnn " + fail) == 1);
  CHECK_FALSE(fs::exists(late));
  CHECK(fs::exists(fresh));  // it may be a live trial's
}
