// `dtnn compare`: throughput of a candidate set of runs against a baseline set, trial by trial.
//
// A selection (SEL) is one or more criteria joined by ',', all of which a run must meet:
//   commit=<prefix>   the git commit of the run's environment starts with it ("+dirty" runs included)
//   matrix=<name>     the run belongs to that matrix
//   tag=<tag>         the matrix carried that tag
//   runs=<a>-<b>      run ids a..b (or runs=<id>)
// Only runs with status ok count (diverged runs are counted and noted, never compared). Runs are matched
// by trial key (every parameter of the trial). Each training epoch of each run is one throughput sample (samples/s); a trial's ratio is
// median(candidate) / median(baseline), so above 1 is faster. A trial regresses when the ratio is below
// 1 - threshold and the two-sided Mann-Whitney U test gives p < alpha (0.05).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

struct CompareOptions {
  std::string baseline, candidate;  // selections
  double threshold = 0.05;          // fraction
  double alpha = 0.05;
};

struct TrialComparison {
  std::string trial_key, label;
  std::vector<double> baseline, candidate;  // samples/s samples
  double ratio = 0.0, p_value = 1.0;
  std::string verdict;  // regression | improvement | same | too few samples
};

struct Comparison {
  std::vector<TrialComparison> trials;  // trials present in both selections
  int only_baseline = 0, only_candidate = 0;
  double geomean_ratio = 0.0;           // over matched trials
  int regressions = 0;
  bool too_few_samples = false;         // some trial has fewer samples than the test needs
  int diverged_baseline = 0, diverged_candidate = 0;  // diverged runs in each selection: not compared, noted
  // ok runs whose binary was built from a tree with changes (environments.git_dirty): compared, with a
  // warning, since their commit does not say what ran
  int dirty_baseline = 0, dirty_candidate = 0;
};

// The SQL condition (on runs r JOIN matrices m JOIN environments e) of a selection; throws dtnn::Error for
// a malformed selection.
std::string selection_sql(const std::string& selection);

Comparison compare_runs(const ResultStore& store, const CompareOptions& options);

// Prints the table, the geometric mean and the verdict.
void print_comparison(std::ostream& out, const Comparison& c, const CompareOptions& options);

}  // namespace dtnn
