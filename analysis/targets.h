// Accuracy targets and their recipes (analysis/targets.toml): loading, and whether a run followed a target's
// recipe.
//
// targets.toml holds [[target]] tables. Each names what it holds for and the number:
//   model, dataset       the run's model and dataset label (fashion-mnist, mnist-10k, cifar-10-batches-bin, ...)
//   metric, target       test_accuracy | val_accuracy, percent; pass when value >= target - tolerance
//   tolerance            default 0
//   recipe (words), source (where the number comes from)
// and states its recipe, all required: a run with another recipe is not judged by it ("no target", with
// the difference named), never a failure:
//   num_epochs           the recipe's epochs (0: any count, "run to the target" as MLPerf's)
//   optimizer            sgd | adam | ...
//   learning_rate        the initial rate (schedules are described in `recipe`)
//   batch_size + ranks   batch per rank and the rank counts it holds for (ranks = [1, 2]), or
//   global_batch_size    batch_size x ranks, for any rank count
//   steps_per_epoch      optional, default 0: whole epochs; a run capping its epochs (--steps_per_epoch) saw
//                        less data and matches only a target that states the same cap
//   momentum             optional: SGD's momentum (d2l's recipe has none, dtnn's default is 0.9); unstated,
//                        any run's matches; stated, a run must record the same (its report's options)
#pragma once

#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

// Parses a targets file; throws dtnn::Error "<path>:<line>: ..." for unknown keys, wrong types, missing fields.
std::vector<ResultStore::Target> load_targets(const std::string& path);

// A stored run's recipe: the runs columns, with the learning rate and steps per epoch from its report's
// options (every option, defaults included), else its trial parameters.
struct RunRecipe {
  std::string model, dataset, optimizer;
  int num_epochs = 0, batch_size = 0, ranks = 0, steps_per_epoch = 0;  // batch_size: per rank, as trained
  double learning_rate = 0.0;
  double momentum = -1.0;  // < 0: not recorded
  int global_batch = 0;    // --global_batch_size (strong scaling), else batch_size x ranks
  // Why the run was not trained from scratch ("" when it was): it began from trained weights or only
  // evaluated them (v_run_recipes in results/views.sql). No target judges such a run.
  std::string not_from_scratch;
};

// The select list (over results/views.sql's v_run_recipes, aliased c) of RunRecipe's fields, in declaration
// order, and its reader (dtnn check prints it). The recipe is read once, in that view, and matched with
// targets once, in v_recipe_differences.
extern const char* const kRunRecipeColumns;
RunRecipe run_recipe(const std::vector<std::optional<std::string>>& row, size_t first_column);


}  // namespace dtnn
