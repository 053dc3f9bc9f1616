// `dtnn check`: every stored ok run against the accuracy targets whose recipe it followed
// (analysis/targets.h: model, dataset, epochs, optimizer, learning rate, batch and ranks or global batch,
// steps per epoch). A run no target's recipe covers is "no target" -- with the nearest target's differences
// printed, so a short smoke run is never judged against a long recipe -- never a failure.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "analysis/ci_output.h"
#include "analysis/targets.h"
#include "results/store.h"

namespace dtnn {

struct CheckRow {
  std::string run_id, framework, label;
  RunRecipe recipe;
  std::string metric;          // "" without a target
  std::string value, target;   // formatted; value "-" when the run has none
  std::string verdict;         // pass | FAIL | FAIL (no value) | no target
  std::string why;             // no target: why not (the nearest target's recipe differences); else the source
};

struct CheckCounts {
  int pass = 0, fail = 0, no_target = 0;
  int diverged = 0;  // runs in the selection whose loss became NaN/Inf: not checked, counted and said so
  std::vector<CheckRow> rows;
};

// Reads the targets file and prints one line per ok run matching `selection` (all runs when empty) and target
// it followed: pass or fail; or one "no target" line with the reason; then how many diverged runs the selection
// has (they have no accuracy to check, and are neither a pass nor a fail). Only reads the database at db_path
// (ResultStore::open_read_only_with_targets: the file's targets, matched by the store's v_recipe_differences).
// Checking nothing is an error, not a pass: no ok run in the selection (the message names it).
CheckCounts check_targets(const std::string& db_path, const std::string& targets_path, const std::string& selection,
                          std::ostream& out);

// JUnit XML (one test case per run and target; no target: skipped with the reason) and a Markdown summary.
std::string check_junit(const CheckCounts& c, const std::vector<JUnitCase>& more = {});
std::string check_markdown(const CheckCounts& c, const std::string& targets_path);

}  // namespace dtnn
