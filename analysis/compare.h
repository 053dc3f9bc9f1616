// `dtnn compare`: throughput of a candidate set of runs against a baseline set, trial by trial.
//
// A selection (SEL) is one or more criteria joined by ',', all of which a run must meet:
//   commit=<prefix>   the git commit of the run's environment starts with it ("+dirty" runs included)
//   matrix=<name>     the run belongs to that matrix
//   tag=<tag>         the matrix carried that tag
//   runs=<a>-<b>      run ids a..b (or runs=<id>)
// Only runs with status ok count (diverged runs are counted and noted, never compared). Runs are matched
// by trial key (every parameter of the trial). Each run is one throughput sample: the median samples/s of its
// epochs after the first `warmup_epochs` (epochs of one process are not independent samples; the first pays for
// page faults, caches and the conv-algorithm search). A trial's ratio is median(candidate) / median(baseline),
// so above 1 is faster, with the Hodges-Lehmann estimate of the ratio and its confidence interval (the shift of
// log throughput). A trial regresses when the ratio is below 1 - threshold and the two-sided Mann-Whitney U
// test gives p < alpha (0.05); that needs enough runs on both sides that complete separation reaches it
// (4 and 4; 10 and 3), else the trial gets no verdict ("too few runs"). A trial whose candidate runs all
// failed, timed out or diverged while its baseline ran is "candidate failed". `dtnn compare` exits 1 for a
// regression or a failed candidate, 2 when any matched trial got no verdict, else 0.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "results/store.h"

namespace dtnn {

struct CompareOptions {
  std::string baseline, candidate;  // selections
  double threshold = 0.05;          // fraction
  double alpha = 0.05;
  int warmup_epochs = 1;            // leading epochs of every run left out of its sample
  bool cross_machine = false;       // compare runs of different machines (machine_key) instead of refusing
};

struct TrialComparison {
  std::string trial_key, label;
  std::vector<double> baseline, candidate;  // samples/s, one per run (empty: no run with a steady-state epoch)
  double ratio = 0.0, p_value = 1.0;
  ShiftEstimate shift;  // Hodges-Lehmann shift of log(samples/s), candidate minus baseline: exp() is a ratio
  std::string verdict;  // regression | improvement | same | too few runs | no steady-state epoch | candidate failed
};

struct Comparison {
  // Trials present in both selections, and trials whose baseline has ok runs while every candidate run of
  // them failed, timed out or diverged (verdict "candidate failed": a candidate that cannot run a trial has
  // regressed on it, not left the comparison).
  std::vector<TrialComparison> trials;
  int candidate_failures = 0;           // trials with verdict "candidate failed"
  int unjudged = 0;                     // matched trials without a verdict (too few runs, no steady-state epoch)
  int only_baseline = 0, only_candidate = 0;
  double geomean_ratio = 0.0;           // over matched trials
  int regressions = 0;
  bool too_few_samples = false;         // some trial has fewer runs than the test needs
  int warmup_only_runs = 0;             // ok runs of matched trials without an epoch past the warm-up
  int diverged_baseline = 0, diverged_candidate = 0;  // diverged runs in each selection: not compared, noted
  // ok runs whose binary was built from a tree with changes (environments.git_dirty): compared, with a
  // warning, since their commit does not say what ran
  int dirty_baseline = 0, dirty_candidate = 0;
  std::vector<std::string> machines;  // distinct recorded machine keys over both selections
  int unrecorded_machine_runs = 0;    // ok runs stored without a machine identity (schema < 10)
};

// The SQL condition (on runs r JOIN matrices m JOIN environments e) of a selection; throws dtnn::Error for
// a malformed selection.
std::string selection_sql(const std::string& selection);

// "" when `tag` can be stored on runs and selected by tag=, else why not: a run's tags are stored
// comma-separated and a selection splits at commas, so "a,b" would be two tags and tag=a,b no selection.
std::string tag_problem(const std::string& tag);

// Throws dtnn::Error when the selections ran on more than one machine (recorded machine_key) unless
// options.cross_machine, and for empty or trial-disjoint selections.
Comparison compare_runs(const ResultStore& store, const CompareOptions& options);

// One table row: label, runs a side, medians, ratio, shift with interval, p, verdict (no newline).
std::string format_trial_row(const std::string& label, const TrialComparison& t);

// Prints the table, the geometric mean and the verdict.
void print_comparison(std::ostream& out, const Comparison& c, const CompareOptions& options);

// JUnit XML (one test case per trial: a regression fails, too few runs is skipped) and a Markdown summary.
std::string comparison_junit(const Comparison& c, const CompareOptions& options);
std::string comparison_markdown(const Comparison& c, const CompareOptions& options);

}  // namespace dtnn
