// Accuracy-target files (analysis/targets.h): load_targets reads a path, so the input is written to the scratch
// directory first. Every TOML dtnn reads goes through core/toml_file.h's guarded reader; an accepted file's
// targets name a model, a dataset and a known metric with a finite target and a tolerance >= 0.
#include <cmath>

#include "analysis/targets.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  const std::string path = fuzz::write_input("targets.toml", data, size);
  std::vector<ResultStore::Target> targets;
  if (!fuzz::accepted([&] { targets = load_targets(path); })) return 0;
  for (const ResultStore::Target& t : targets) {
    fuzz::require(!t.model.empty() && !t.dataset.empty(), "an accepted target names a model and a dataset");
    fuzz::require(t.metric == "test_accuracy" || t.metric == "val_accuracy", "an accepted target's metric is known");
    fuzz::require(std::isfinite(t.target) && t.tolerance >= 0, "an accepted target is finite, its tolerance >= 0");
  }
  return 0;
}
