// compare's verdicts (analysis/compare.h) on planted runs: a regression found and noise not, unequal run
// counts, failed candidates, zero throughput, too few samples, and selections refused.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/compare.h"
#include "store_test_helpers.h"

using Catch::Contains;
using dtnn::test::one;
using Fixture = dtnn::test::RunFixture;

namespace {

// Stores an ok run of `key` whose epochs ran at the given samples/s.
void planted_run(Fixture& f, const std::string& key, const std::vector<double>& samples_per_s) {
  const int64_t id = f.begin(key, 1);
  f.store.exec("UPDATE runs SET status = 'ok', samples_per_s = " + std::to_string(samples_per_s[0]) +
               " WHERE id = " + std::to_string(id));
  for (size_t e = 0; e < samples_per_s.size(); ++e)
    f.store.exec("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, metrics) VALUES (" +
                 std::to_string(id) + ", " + std::to_string(e + 1) + ", 1000, 1.0, " +
                 std::to_string(samples_per_s[e]) + ", '{}')");
}

}  // namespace

TEST_CASE("compare: a planted regression is found, noise is not", "[compare]") {
  Fixture f("compare");
  // Five runs a side and trial. Each run's first epoch is a slow warm-up, left out; its sample is the median of
  // the other two. Trial "slow" lost 20 %, trial "same" only moved within noise.
  const std::vector<double> slow_base = {1000, 1010, 990, 1005, 995}, same_base = {500, 510, 490, 505, 495};
  const std::vector<double> slow_cand = {800, 810, 790, 805, 795}, same_cand = {502, 492, 508, 497, 503};
  for (int i = 0; i < 5; ++i) {  // baseline: runs 1-10; candidate: runs 11-20
    planted_run(f, "slow", {100, slow_base[i] - 1, slow_base[i] + 1});
    planted_run(f, "same", {50, same_base[i] - 1, same_base[i] + 1});
  }
  for (int i = 0; i < 5; ++i) {
    planted_run(f, "slow", {100, slow_cand[i] - 1, slow_cand[i] + 1});
    planted_run(f, "same", {50, same_cand[i] - 1, same_cand[i] + 1});
  }
  dtnn::CompareOptions o;
  o.baseline = "runs=1-10";
  o.candidate = "runs=11-20";
  const dtnn::Comparison c = dtnn::compare_runs(f.store, o);
  REQUIRE(c.trials.size() == 2);
  CHECK(c.regressions == 1);
  for (const dtnn::TrialComparison& t : c.trials) {
    CHECK(t.baseline.size() == 5);  // one sample per run, not one per epoch
    CHECK(t.candidate.size() == 5);
    if (t.trial_key == "slow") {
      CHECK(t.verdict == "regression");
      CHECK(t.ratio == Approx(0.8).epsilon(1e-9));
      CHECK(t.p_value == Approx(2.0 / 252.0).epsilon(1e-9));  // exact U test, complete separation, 5 vs 5
      // Hodges-Lehmann of log ratios: the median of the 25 log(c_j / b_i); every one is below log 0.82.
      REQUIRE(t.shift.bounded);
      CHECK(std::exp(t.shift.estimate) == Approx(0.8).epsilon(0.002));
      CHECK(std::exp(t.shift.high) < 0.82);
      CHECK(std::exp(t.shift.low) > 0.77);
    } else {
      CHECK(t.verdict == "same");
      REQUIRE(t.shift.bounded);
      CHECK(std::exp(t.shift.low) < 1.0);  // the interval holds "no change"
      CHECK(std::exp(t.shift.high) > 1.0);
    }
  }
  CHECK(c.geomean_ratio == Approx(std::sqrt(0.8 * (502.0 / 500.0))).epsilon(1e-9));
  CHECK_FALSE(c.too_few_samples);
  CHECK(c.dirty_baseline == 0);
  CHECK(c.dirty_candidate == 0);
  {  // a candidate built from a dirty tree is compared, with a warning naming how many runs
    f.store.exec("UPDATE environments SET git_dirty = 1");
    const dtnn::Comparison d = dtnn::compare_runs(f.store, o);
    CHECK(d.dirty_baseline == 10);
    CHECK(d.dirty_candidate == 10);
    std::ostringstream text;
    dtnn::print_comparison(text, d, o);
    CHECK_THAT(text.str(), Catch::Contains("warning: 10 baseline and 10 candidate run(s) ran a binary built from a "
                                           "tree with uncommitted changes"));
    // The interval's confidence as reached (exact, 5 runs a side: above the nominal 95 %), as --junit says it.
    char reached[64];
    std::snprintf(reached, sizeof reached, "with its %.1f %% interval (at least 95 %%)", 100.0 * d.trials[0].shift.confidence);
    CHECK(d.trials[0].shift.confidence > 0.95);
    CHECK(d.trials[0].shift.confidence == d.trials[1].shift.confidence);
    CHECK_THAT(text.str(), Catch::Contains(reached));
    f.store.exec("UPDATE environments SET git_dirty = 0");
  }
  {  // with no warm-up dropped, the slow first epochs pull every sample down alike: still one sample per run
    dtnn::CompareOptions w = o;
    w.warmup_epochs = 0;
    const dtnn::Comparison d = dtnn::compare_runs(f.store, w);
    REQUIRE(d.trials.size() == 2);
    for (const dtnn::TrialComparison& t : d.trials) CHECK(t.baseline.size() == 5);
    w.warmup_epochs = 3;  // every epoch is warm-up: no samples, said so
    CHECK_THROWS_WITH(dtnn::compare_runs(f.store, w), Contains("epoch past the warm-up"));
  }
  // The other way round it is an improvement, and a 25 % threshold hides the 20 % change.
  std::swap(o.baseline, o.candidate);
  CHECK(dtnn::compare_runs(f.store, o).regressions == 0);
  std::swap(o.baseline, o.candidate);
  o.threshold = 0.25;
  CHECK(dtnn::compare_runs(f.store, o).regressions == 0);
}

// Sizes decide per pair whether a verdict is possible (10 baseline runs against
// 3 candidate runs can give p = 2 / C(13, 3) = 0.007), a trial whose candidate runs all failed is a failure, not
// "only in the baseline", and a zero throughput is named instead of turning into a NaN.
TEST_CASE("compare: unequal run counts, failed candidates and zero throughput", "[compare]") {
  Fixture f("compare_sizes");
  for (int i = 0; i < 10; ++i) planted_run(f, "t", {900, 1000.0 + i});      // runs 1-10
  for (int i = 0; i < 5; ++i) planted_run(f, "crash", {900, 1000.0 + i});  // runs 11-15
  for (int i = 0; i < 3; ++i) planted_run(f, "t", {900, 600.0 + i});        // runs 16-18: 40 % slower
  for (int i = 0; i < 3; ++i) {                                             // runs 19-21: every one failed
    const int64_t id = f.begin("crash", 1);
    f.store.exec("UPDATE runs SET status = 'failed', error = 'exit 1' WHERE id = " + std::to_string(id));
  }
  dtnn::CompareOptions o;
  o.baseline = "runs=1-15";
  o.candidate = "runs=16-18";
  dtnn::Comparison c = dtnn::compare_runs(f.store, o);
  REQUIRE(c.trials.size() == 1);
  CHECK(c.trials[0].p_value == Approx(2.0 / 286.0).epsilon(1e-9));
  CHECK(c.trials[0].verdict == "regression");
  CHECK(c.unjudged == 0);
  CHECK(c.only_baseline == 1);  // crash: no candidate run at all in this selection
  o.candidate = "runs=16-21";
  c = dtnn::compare_runs(f.store, o);
  REQUIRE(c.trials.size() == 2);
  int failed = 0;
  for (const dtnn::TrialComparison& t : c.trials)
    if (t.trial_key == "crash") {
      CHECK(t.verdict == "candidate failed");
      ++failed;
    }
  CHECK(failed == 1);
  CHECK(c.candidate_failures == 1);
  CHECK(c.only_baseline == 0);
  std::ostringstream out;
  dtnn::print_comparison(out, c, o);
  CHECK_THAT(out.str(), Contains("1 trial(s) whose candidate runs all failed"));
  CHECK_THAT(dtnn::comparison_junit(c, o), Contains("every candidate run of this trial failed"));
  // A run that trained at 0 samples/s is named.
  f.store.exec("UPDATE epochs SET samples_per_s = 0 WHERE run_id = 17 AND epoch = 2");
  CHECK_THROWS_WITH(dtnn::compare_runs(f.store, o), Contains("run 17 epoch 2 has samples/s 0"));
}

TEST_CASE("compare: too few samples are flagged, bad selections refused", "[compare]") {
  Fixture f("compare_few");
  // Three runs a side, eight epochs each: 24 epochs a side would pass a per-epoch test, but
  // three runs can never give p < 0.05.
  for (int i = 0; i < 3; ++i) planted_run(f, "t", {900, 1000, 1001, 1002, 999, 1000, 1003, 998});
  for (int i = 0; i < 3; ++i) planted_run(f, "t", {400, 500, 501, 502, 499, 500, 503, 498});
  dtnn::CompareOptions o;
  o.baseline = "runs=1-3";
  o.candidate = "runs=4-6";
  const dtnn::Comparison c = dtnn::compare_runs(f.store, o);
  CHECK(c.too_few_samples);
  CHECK(c.regressions == 0);
  CHECK(c.trials[0].verdict == "too few runs");
  CHECK(c.trials[0].ratio == Approx(0.5).epsilon(0.01));
  CHECK_FALSE(c.trials[0].shift.bounded);
  std::ostringstream out;
  dtnn::print_comparison(out, c, o);
  CHECK(c.unjudged == 1);
  CHECK_THAT(out.str(), Contains("warning: 1 trial(s) have too few runs on a side for the U test to reach p < 0.05"));
  CHECK_THAT(out.str(), Contains("n/a (too few runs)"));
  o.candidate = "commit=abc";  // all runs: the same trial key on both sides
  CHECK(dtnn::compare_runs(f.store, o).trials.size() == 1);
  // Values are literal: % and _ are not wildcards, and case counts.
  f.store.exec("UPDATE runs SET tags = 'perf,ci_x' WHERE id > 3");
  o.candidate = "tag=ci_x";
  CHECK(dtnn::compare_runs(f.store, o).trials.size() == 1);
  for (const char* literal : {"commit=%", "tag=%", "commit=_bc", "commit=ABC", "tag=ci-x", "tag=CI_X", "tag=ci"}) {
    o.candidate = literal;
    CHECK_THROWS_WITH(dtnn::compare_runs(f.store, o), Contains("has no ok runs"));
  }
  o.candidate = "colour=blue";
  CHECK_THROWS_WITH(dtnn::compare_runs(f.store, o), Contains("unknown key 'colour'"));
  o.candidate = "runs=a-b";
  CHECK_THROWS_WITH(dtnn::compare_runs(f.store, o), Contains("is not N or N-M"));
  o.candidate = "runs=1-100000000000000000000";  // was an SQLite real, compared inexactly
  CHECK_THROWS_WITH(dtnn::compare_runs(f.store, o), Contains("is not N or N-M (run ids, up to 18 digits)"));
  o.candidate = "runs=5-3";
  CHECK_THROWS_WITH(dtnn::compare_runs(f.store, o), Contains("runs=5-3 is an empty range"));
  CHECK(dtnn::tag_problem("ci").empty());
  CHECK_THAT(dtnn::tag_problem("a,b"), Contains("may not hold a comma"));
  CHECK_THAT(dtnn::tag_problem(""), Contains("may not be empty"));
  o.candidate = "matrix=nothing";
  CHECK_THROWS_WITH(dtnn::compare_runs(f.store, o), Contains("has no ok runs"));
}
