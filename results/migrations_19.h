// Migration 19 of the results store (results/migrations.h lists them all): v_throughput says each run's batch
// per rank and scaling mode. Released text is never edited.
#pragma once

namespace dtnn::schema {

// runs.batch_size is the trial's batch: per rank for weak scaling, the global batch for strong scaling
// (scaling = "strong" or a global_batch_size parameter). A weak run of 4 ranks x 256 (a global batch of 1024)
// and a strong run of 256 in all showed as the same "ranks 4, batch_size 256". Now batch_per_rank is what the
// run trained per rank (its report's options.batch_size, else runs.batch_size) and scaling is weak or strong.
// Otherwise migration 10's view.
inline constexpr const char* kMigration19Sql = R"SQL(
)SQL";

}  // namespace dtnn::schema
