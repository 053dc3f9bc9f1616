// Migration 13 of the results store (results/migrations.h lists them all): v_accuracy_vs_target matches a
// target's batch against the run's batch per rank and global batch as the run trained them. Released text is
// never edited.
#pragma once

namespace dtnn::schema {

// runs.batch_size is the trial's batch_size, which a strong-scaling trial (scaling = "strong") gives as the
// global batch; the run trained ceil(global / ranks) per rank. The view took it as the per-rank batch and
// multiplied it by the ranks: a strong-scaling run was judged against another recipe's target. Now the
// per-rank batch is the report's options.batch_size (what the run trained), the global batch its
// options.global_batch_size when set, else per-rank x ranks; runs.batch_size where the report lacks them.
// Otherwise migration 12's view.
inline constexpr const char* kMigration13Sql = R"SQL(
)SQL";

}  // namespace dtnn::schema
