// Migration 17 of the results store (results/migrations.h lists them all): v_scaling's measured speed-up and
// efficiency against the fewest ranks a configuration ran on, not only against 1 rank. Released text is never
// edited.
#pragma once

namespace dtnn::schema {

// Before, a measured row needed an ok 1-rank run of its configuration: a study over nodes with ranks_per_node
// = 4 (ranks 4, 8, 16; ranks_per_node is part of config_key, experiments/runner.cpp run_start) had no rows at
// all, and `dtnn report` left it out. Now the baseline is the fewest ranks of the group with a measured
// samples/s; baseline_ranks (a new last column) says which: speed-up = samples/s / the baseline's, efficiency =
// speed-up x baseline_ranks / ranks (1 rank: as before). Predicted rows keep the model's own 1-rank baseline
// (baseline_ranks 1). `runs` counts the runs with a samples/s (an ok run without one, e.g. evaluation only,
// was counted but not averaged). Otherwise migration 15's view.
inline constexpr const char* kMigration17Sql = R"SQL(
)SQL";

}  // namespace dtnn::schema
