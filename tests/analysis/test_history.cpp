// Change points and `dtnn history`: a planted step in a synthetic history with noise and an outlier is found at
// exactly its commit; noise alone and a lone outlier give no step; commits are ordered by git's parents (a real
// repository made here), not by when they ran; --fail-on-regression, --format json, --junit and --markdown.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "analysis/change_points.h"
#include "analysis/history.h"
#include "cli_helpers.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host.h"
#include "results/store.h"
#include "skip.h"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// log(1000 * (1 + 2 % noise)) for `runs` runs at each of `commits` commits; deterministic.
std::vector<std::vector<double>> noisy_history(int commits, int runs, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.02);
  std::vector<std::vector<double>> g(commits);
  for (auto& c : g)
    for (int r = 0; r < runs; ++r) c.push_back(std::log(1000.0 * (1.0 + noise(rng))));
  return g;
}

}  // namespace

TEST_CASE("change points: a planted step among noise and an outlier is found at exactly its commit", "[history]") {
  for (unsigned seed : {1u, 2u, 3u}) {
    auto g = noisy_history(40, 1, seed);
    g[9][0] += std::log(1.6);  // one run 60 % off: an outlier, not a step
    for (int i = 25; i < 40; ++i) g[i][0] += std::log(0.85);  // 15 % slower from commit 25 on
    const dtnn::ChangePointFit fit = dtnn::detect_change_points(g);
    REQUIRE(fit.segments.size() == 2);
    CHECK(fit.segments[1].first == 25);
    CHECK(fit.segments[0].last == 24);
    CHECK(std::exp(fit.segments[1].level - fit.segments[0].level) == Approx(0.85).epsilon(0.03));
    CHECK(fit.sigma > 0.01);  // the noise estimate is of the planted 2 % (MAD of 39 neighbour differences)
    CHECK(fit.sigma < 0.04);
  }
}

TEST_CASE("change points: noise alone and a lone outlier are one segment", "[history]") {
  for (unsigned seed = 10; seed < 20; ++seed) {
    auto g = noisy_history(60, seed % 2 ? 1 : 3, seed);
    g[30][0] += std::log(2.0);
    CHECK(dtnn::detect_change_points(g).segments.size() == 1);
  }
  // A newest level seen in one run only is not a step yet (a segment needs 2 runs); with 3 runs it is.
  auto g = noisy_history(20, 1, 7);
  g[19][0] += std::log(0.7);
  CHECK(dtnn::detect_change_points(g).segments.size() == 1);
  auto h = noisy_history(20, 3, 7);
  for (double& v : h[19]) v += std::log(0.7);
  const auto fit = dtnn::detect_change_points(h);
  REQUIRE(fit.segments.size() == 2);
  CHECK(fit.segments[1].first == 19);
  // Commits without runs join a neighbour; the step is named by the first commit measured at the new level.
  auto e = noisy_history(30, 2, 8);
  for (int i = 15; i < 30; ++i)
    for (double& v : e[i]) v += std::log(1.3);
  e[14].clear();
  e[15].clear();
  const auto fe = dtnn::detect_change_points(e);
  REQUIRE(fe.segments.size() == 2);
  CHECK(fe.segments[1].first == 16);
  CHECK(dtnn::detect_change_points({}).segments.empty());
  CHECK_THROWS_AS(dtnn::detect_change_points({{1.0, std::nan("")}}), dtnn::Error);
}

TEST_CASE("change points: jobs that differ more than their runs do are noise, not steps", "[history]") {
  // Each commit's runs come from one job: 5 runs with 2 % noise around a job level that is itself off by 4 %
  // (another machine, another hour). With the noise taken from neighbouring runs alone (mostly pairs within
  // a job) 38 of these 40 step-free series had a step and 36 a regression-sized one, and an 8 % step was
  // found alone at its commit in 2 of 40; with the noise between commits measured too: 1, 0 and 26.
  const auto jobs = [](int commits, int step_at, double ratio, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> within(0.0, 0.02), between(0.0, 0.04);
    std::vector<std::vector<double>> g(commits);
    for (int c = 0; c < commits; ++c) {
      const double job = between(rng) + (c >= step_at ? std::log(ratio) : 0.0);
      for (int r = 0; r < 5; ++r) g[c].push_back(std::log(1000.0) + job + within(rng));
    }
    return g;
  };
  int stepped = 0, regressed = 0, found = 0;
  for (unsigned seed = 100; seed < 140; ++seed) {
    const dtnn::ChangePointFit fit = dtnn::detect_change_points(jobs(40, 40, 1.0, seed));
    CHECK(fit.sigma_between > 1.5 * fit.sigma_within);  // the job-to-job noise is measured
    stepped += fit.segments.size() > 1;
    for (size_t k = 1; k < fit.segments.size(); ++k)
      if (std::exp(fit.segments[k].level - fit.segments[k - 1].level) < 0.95) {
        ++regressed;
        break;
      }
    const dtnn::ChangePointFit step = dtnn::detect_change_points(jobs(40, 20, 0.92, seed));
    found += step.segments.size() == 2 && step.segments[1].first == 20;
  }
  CHECK(stepped <= 4);
  CHECK(regressed <= 1);
  CHECK(found >= 20);
}

namespace {

// A git repository with `n` empty commits; their SHAs in order.
std::vector<std::string> make_repo(const fs::path& dir, int n) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string git = "git -C " + dir.string() + " -c user.name=t -c user.email=t@t ";
  REQUIRE(std::system((git + "init -q").c_str()) == 0);
  std::vector<std::string> shas;
  for (int i = 0; i < n; ++i) {
    REQUIRE(std::system((git + "commit -q --allow-empty -m c" + std::to_string(i)).c_str()) == 0);
    shas.push_back(dtnn::capture_command(git + "rev-parse HEAD"));
  }
  return shas;
}

// One finished run of trial `trial` in environment `env`: two epochs, the first (warm-up) at v/3 unless
// flat, the second at v samples/s; `started_at` (ISO time) when the order of runs matters.
void add_ok_run(dtnn::ResultStore& store, int64_t matrix, int64_t env, const std::string& trial, double v,
                const std::string& started_at = "", bool flat = false) {
  dtnn::RunStart s;
  s.matrix_id = matrix;
  s.environment_id = env;
  s.trial_key = s.config_key = s.label = trial;
  s.params = {{"model", trial}};
  s.command = "dtnn train";
  s.log_path = "x.log";
  const int64_t id = store.begin_run(s);
  store.exec("UPDATE runs SET status = 'ok', test_accuracy = 90" +
             (started_at.empty() ? std::string() : ", started_at = '" + started_at + "'") +
             " WHERE id = " + std::to_string(id));
  for (int ep = 1; ep <= 2; ++ep)
    store.exec("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) VALUES (" +
               std::to_string(id) + ", " + std::to_string(ep) + ", 1000, 1.0, " +
               std::to_string(ep == 1 && !flat ? v / 3 : v) + ", '{}')");
}

}  // namespace

TEST_CASE("history: git order, the step's commit, --fail-on-regression and the CI files", "[history]") {
  if (std::system("git --version > /dev/null 2>&1") != 0) DTNN_SKIP("git is not installed (the test makes a repository)");
  const fs::path dir = dtnn::test::temp_path("history");
  const std::vector<std::string> shas = make_repo(dir / "repo", 24);
  const std::string db = (dir / "h.db").string();
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    const int64_t matrix = store.add_matrix("m", "m.toml", "h", "name = \"m\"\n");
    std::mt19937 rng(5);
    std::normal_distribution<double> noise(0.0, 0.015);
    // Commits ran out of order (a backfill): commit i ran at time (i * 7) % 24. Two runs per commit; from
    // commit 16 on, trial "cnn" is 20 % slower; trial "mlp" only has noise and one outlier run.
    for (int i = 0; i < 24; ++i) {
      dtnn::StoredEnvironment e;
      e.host = "ci";
      e.git_commit = shas[i];
      e.machine.vendor = "GenuineIntel";
      const int64_t env = store.add_environment(e);
      for (const char* trial : {"cnn", "mlp"})
        for (int r = 0; r < 2; ++r) {
          char when[64];
          std::snprintf(when, sizeof when, "2026-11-%02dT10:00:0%dZ", 1 + (i * 7) % 24, r);
          double v = 1000.0 * (1.0 + noise(rng));
          if (std::string(trial) == "cnn" && i >= 16) v *= 0.8;
          if (std::string(trial) == "mlp" && i == 5 && r == 0) v *= 1.7;
          add_ok_run(store, matrix, env, trial, v, when);
        }
    }
    // A dirty build's runs say nothing about a commit: left out, counted.
    dtnn::StoredEnvironment dirty;
    dirty.host = "ci";
    dirty.git_commit = shas[3];
    dirty.git_dirty = true;
    dtnn::RunStart s;
    s.matrix_id = matrix;
    s.environment_id = store.add_environment(dirty);
    s.trial_key = s.config_key = s.label = "cnn";
    s.command = "x";
    s.log_path = "x";
    store.exec("UPDATE runs SET status = 'ok' WHERE id = " + std::to_string(store.begin_run(s)));
  }
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(db);
  dtnn::HistoryOptions o;
  o.repo = (dir / "repo").string();
  const dtnn::History h = dtnn::load_history(store, o);
  CHECK(h.dirty_runs == 1);
  REQUIRE(h.series.size() == 2);
  for (const dtnn::HistorySeries& s : h.series) {
    CHECK(s.order == "git");
    REQUIRE(s.points.size() == 24);
    for (int i = 0; i < 24; ++i) CHECK(s.points[i].commit == shas[i]);
    if (s.trial_key == "cnn") {
      REQUIRE(s.steps.size() == 1);
      CHECK(s.steps[0].commit == shas[16]);
      CHECK(s.steps[0].verdict == "regression");
      CHECK(s.steps[0].ratio == Approx(0.8).epsilon(0.03));
      CHECK(s.newest_regressed);
    } else {
      CHECK(s.steps.empty());
    }
  }
  CHECK(h.regressed_series == 1);
  // Without the repository, commits are ordered by when they first ran: the backfill order, not the history.
  o.repo = "";
  for (const dtnn::HistorySeries& s : dtnn::load_history(store, o).series) {
    CHECK(s.order == "time");
    CHECK(s.points[1].commit == shas[7]);  // ran on day 2
  }

  // The CLI: exit 1 with --fail-on-regression, the step named; JSON, JUnit and Markdown.
  const std::string junit = (dir / "h.xml").string(), md = (dir / "h.md").string();
  const std::string base = "history --db " + db + " --repo " + (dir / "repo").string();
  dtnn::test::Command c = dtnn::test::run_dtnn(base);
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Contains("<- regression") && Contains(shas[16].substr(0, 12)) && Contains("REGRESSED"));
  c = dtnn::test::run_dtnn(base + " --fail-on-regression --junit " + junit + " --markdown " + md);
  CHECK(c.status == 1);
  CHECK(dtnn::test::junit_holds(junit, 2, 1, 0));
  CHECK_THAT(dtnn::read_file(md), Contains("1 of 2 series regressed"));
  c = dtnn::test::run_dtnn(base + " --select runs=1-64 --fail-on-regression");  // before the step: nothing to fail
  CHECK(c.status == 0);
  c = dtnn::test::run_dtnn(base + " --format json");
  REQUIRE(c.status == 0);
  const nlohmann::json j = nlohmann::json::parse(c.out);
  CHECK(j["schema"] == "dtnn.history/1");
  CHECK(j["series"].size() == 2);
  c = dtnn::test::run_dtnn(base + " --metric test_accuracy --fail-on-regression");
  CHECK(c.status == 0);
  c = dtnn::test::run_dtnn(base + " --metric latency");
  CHECK(dtnn::test::one_line_error(c));
  CHECK(c.status == 2);  // no verdict, not a regression
  CHECK_THAT(c.err, Contains("--metric must be samples_per_s or test_accuracy"));
  // A --repo git cannot read is an error, not a silent fall back to time order.
  c = dtnn::test::run_dtnn("history --db " + db + " --repo " + (dir / "no_repo_here").string());
  CHECK(dtnn::test::one_line_error(c));
  CHECK(c.status == 2);
  CHECK_THAT(c.err, Contains("no_repo_here: git lists no commit there"));
}

// A partial recovery after a regression (1000 -> 800 -> 880: the last step an "improvement") must not leave
// --fail-on-regression passing while throughput stays 12 % below where it started: the newest level is
// judged against the level before the latest regression.
TEST_CASE("history: a partial recovery does not clear a regression", "[history]") {
  if (std::system("git --version > /dev/null 2>&1") != 0) DTNN_SKIP("git is not installed (the test makes a repository)");
  const fs::path dir = dtnn::test::temp_path("history_recovery");
  const std::vector<std::string> shas = make_repo(dir / "repo", 24);
  const std::string db = (dir / "h.db").string();
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    const int64_t matrix = store.add_matrix("m", "m.toml", "h", "name = \"m\"\n");
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0.0, 0.015);
    for (int i = 0; i < 24; ++i) {
      dtnn::StoredEnvironment e;
      e.host = "ci";
      e.git_commit = shas[i];
      const int64_t env = store.add_environment(e);
      for (int r = 0; r < 2; ++r)
        add_ok_run(store, matrix, env, "cnn", (i < 8 ? 1000.0 : i < 16 ? 800.0 : 880.0) * (1.0 + noise(rng)));
    }
  }
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(db);
  dtnn::HistoryOptions o;
  o.repo = (dir / "repo").string();
  const dtnn::History h = dtnn::load_history(store, o);
  REQUIRE(h.series.size() == 1);
  const dtnn::HistorySeries& s = h.series[0];
  REQUIRE(s.steps.size() == 2);
  CHECK(s.steps[0].verdict == "regression");
  CHECK(s.steps[1].verdict == "improvement");
  CHECK(s.newest_regressed);
  CHECK(h.regressed_series == 1);
  fs::remove_all(dir);
}

TEST_CASE("history: a Debug build's runs are a series of their own, not a step", "[history]") {
  if (std::system("git --version > /dev/null 2>&1") != 0) DTNN_SKIP("git is not installed (the test makes a repository)");
  const fs::path dir = dtnn::test::temp_path("history_builds");
  const std::vector<std::string> shas = make_repo(dir / "repo", 16);
  const std::string db = (dir / "h.db").string();
  const std::string release = "Release [GNU 12.2.0; Release; -O3 -DNDEBUG; backends: cuda=OFF onednn=ON mpi=ON sanitize=OFF]";
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    const int64_t matrix = store.add_matrix("m", "m.toml", "h", "name = \"m\"\n");
    std::mt19937 rng(9);
    std::normal_distribution<double> noise(0.0, 0.015);
    for (int i = 0; i < 16; ++i)
      // Release runs of every commit at one level; from commit 8 a developer's Debug build too, 3x slower,
      // and from commit 10 a Release build compiled with another compiler version (same series).
      for (const char* kind : {"release", "debug"}) {
        if (std::string(kind) == "debug" && i < 8) continue;
        dtnn::StoredEnvironment e;
        e.host = "ci";
        e.git_commit = shas[i];
        e.build_type = std::string(kind) == "debug"
                           ? "Debug [GNU 12.2.0; Debug; -g; backends: cuda=OFF onednn=ON mpi=ON sanitize=OFF]"
                           : i >= 10 ? "Release [GNU 13.1.0; Release; -O3 -DNDEBUG; backends: cuda=OFF onednn=ON mpi=ON "
                                       "sanitize=OFF]"
                                     : release;
        const int64_t env = store.add_environment(e);
        for (int r = 0; r < 2; ++r)
          add_ok_run(store, matrix, env, "cnn", (std::string(kind) == "debug" ? 330.0 : 1000.0) * (1.0 + noise(rng)),
                     "", /*flat=*/true);
      }
  }
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(db);
  dtnn::HistoryOptions o;
  o.repo = (dir / "repo").string();
  const dtnn::History h = dtnn::load_history(store, o);
  // One series of Release runs (both compilers) and one of Debug runs; neither has a step. In one series the
  // Debug runs were a 67 % regression at commit 8.
  REQUIRE(h.series.size() == 2);
  CHECK(h.regressed_series == 0);
  for (const dtnn::HistorySeries& s : h.series) {
    CHECK(s.steps.empty());
    const bool debug = s.build.rfind("Debug;", 0) == 0;
    CHECK(s.points.size() == (debug ? 8u : 16u));
    CHECK(s.build == (debug ? "Debug; backends: cuda=OFF onednn=ON mpi=ON sanitize=OFF"
                            : "Release; backends: cuda=OFF onednn=ON mpi=ON sanitize=OFF"));
    CHECK_THAT(s.name, Contains(debug ? "[build 1]" : "[build 2]"));
  }
  fs::remove_all(dir);
}
