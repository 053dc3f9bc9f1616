// `dtnn history`: each trial's values over commits, the steps in them, and whether the newest one regressed.
//
// A series is one trial key on one machine and one kind of build (environments.machine_key: a value measured
// on another machine is another series, never a step; so is one of a Debug or sanitizer build, or of other
// backends, beside Release runs). Its points are commits: the runs of ok status built from that commit, one
// value each -- samples_per_s as compare takes it (the median epoch after the warm-up), or test_accuracy.
// Runs of a dirty build (their commit does not say what ran) and of a binary built outside a checkout are
// left out and counted.
//
// Commit order is git's when `repo` is a repository holding every commit of the series (`git rev-list
// --topo-order --reverse --all`: parents before children), else the time of each commit's first run. Steps
// come from detect_change_points (analysis/change_points.h) on the log of the values, so a step's size is a
// ratio. A step is a regression when after/before < 1 - threshold (both metrics: higher is better). A series
// "regressed" when its last step is a regression: the newest level is below the one before it. (So a series
// stays regressed until a later step; and a creep of steps each within the threshold is not flagged.)
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "analysis/change_points.h"
#include "results/store.h"

namespace dtnn {

struct HistoryOptions {
  std::string selection;                // compare.h's selection syntax; "" = every ok run
  std::string metric = "samples_per_s";  // | test_accuracy
  std::string repo = ".";               // where to ask git for the commit order ("" = do not ask)
  bool repo_given = false;              // --repo was named: a path git cannot read is an error, not time order
  double threshold = 0.05;
  int warmup_epochs = 1;
  int max_commits = 250;                // per series, the newest; 0 = all (the fit is quadratic in commits)
  ChangePointOptions change_points;
};

struct HistoryPoint {
  std::string commit, first_run_at;  // first_run_at: started_at of the commit's first run in the series
  std::vector<double> values;        // one per run
  double value = 0.0;                // their median
};

struct HistoryStep {
  int point = 0;              // index of the first point at the new level
  std::string commit;         // its commit
  double before = 0.0, after = 0.0, ratio = 0.0;  // segment levels (medians) and after / before
  std::string verdict;        // regression | improvement | step (within the threshold)
};

struct HistorySeries {
  std::string trial_key, label, machine_key;
  std::string build;                 // "Release; backends: cuda=ON ..." (history.cpp build_kind)
  std::string name;                  // label (else trial key), " [machine k]" when the history has several
  std::string order;                 // git | time
  int older_commits_left_out = 0;    // past max_commits
  std::vector<HistoryPoint> points;  // in commit order
  std::vector<HistoryStep> steps;
  // The newest segment is below the level before the latest regression step by more than the threshold (a
  // later step down, or up by less than the regression, does not clear it).
  bool newest_regressed = false;
};

struct History {
  std::string metric;
  std::vector<HistorySeries> series;
  int dirty_runs = 0, unknown_commit_runs = 0;  // left out
  int no_value_runs = 0;  // clean ok runs without a value: no epoch past the warm-up, or no (or 0 %) accuracy
  int regressed_series = 0;                     // series whose newest segment regressed
};

// Throws dtnn::Error for an unknown metric, a malformed selection, or no ok run in the selection.
History load_history(const ResultStore& store, const HistoryOptions& options);

// A table per series: its commits (short), runs and values, then each step.
void print_history(std::ostream& out, const History& h, const HistoryOptions& options);

// The history as JSON (schema dtnn.history/1), what `dtnn history --format json` prints and the report's
// history page plots.
std::string history_json(const History& h, const HistoryOptions& options);

// JUnit XML (one test case per series; it fails when its newest segment regressed) and a Markdown summary.
std::string history_junit(const History& h, const HistoryOptions& options);
std::string history_markdown(const History& h, const HistoryOptions& options);

}  // namespace dtnn
