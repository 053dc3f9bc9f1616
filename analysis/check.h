// `dtnn check`: every stored ok run against its accuracy target (analysis/targets.toml).
//
// targets.toml holds [[target]] tables: model, dataset (a dataset label: fashion-mnist, mnist, mnist-10k,
// cifar10, ...), metric (test_accuracy | val_accuracy, percent), target, tolerance (pass when
// value >= target - tolerance), num_epochs (the recipe's epochs; 0 = any), optimizer ("" = any), recipe
// (words), source (where the number comes from). A run matches a target on model, dataset, and the recipe
// fields that are set.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

// Parses a targets file; throws dtnn::Error "<path>:<line>: ..." for unknown keys, wrong types or
// missing fields.
std::vector<ResultStore::Target> load_targets(const std::string& path);

struct CheckCounts {
  int pass = 0, fail = 0, no_target = 0;
  int diverged = 0;  // runs in the selection whose loss became NaN/Inf: not checked, counted and said so
};

// Reads the targets file and prints one line per ok run matching `selection` (all runs when empty): pass,
// fail or no target; then how many diverged runs the selection has (they have no accuracy to check, and are
// neither a pass nor a fail). Only reads the store (the CLI opens it with open_read_only, which refuses an
// empty or non-database file without changing it). Checking nothing is an error, not a pass: no ok run in
// the selection (the message names it).
CheckCounts check_targets(const ResultStore& store, const std::string& targets_path, const std::string& selection,
                          std::ostream& out);

}  // namespace dtnn
