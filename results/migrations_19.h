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
DROP VIEW v_throughput;
CREATE VIEW v_throughput AS
  SELECT r.id AS run_id, m.name AS matrix,
         e.git_commit || CASE WHEN e.git_dirty THEN '+dirty' ELSE '' END AS git_commit,
         r.framework, r.model, r.dataset, r.conv_algo, r.ranks, r.threads, r.device, r.batch_size,
         CAST(coalesce(json_extract(r.report, '$.options.batch_size'), r.batch_size) AS INTEGER) AS batch_per_rank,
         CASE WHEN json_extract(r.params, '$.scaling') = 'strong'
                   OR json_extract(r.params, '$.global_batch_size') IS NOT NULL THEN 'strong' ELSE 'weak' END
           AS scaling,
         r.repeat, round(r.samples_per_s, 1) AS samples_per_s, round(r.test_accuracy, 2) AS test_accuracy,
         r.started_at
  FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = r.environment_id
  WHERE r.status = 'ok';
)SQL";

}  // namespace dtnn::schema
