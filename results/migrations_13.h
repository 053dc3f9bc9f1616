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
DROP VIEW v_accuracy_vs_target;
CREATE VIEW v_accuracy_vs_target AS
  SELECT run_id, framework, model, dataset, num_epochs, optimizer, metric, round(value, 2) AS value, target,
         tolerance,
         CASE WHEN value IS NULL THEN 'no value' WHEN value >= target - tolerance THEN 'pass' ELSE 'fail' END
           AS verdict,
         source
  FROM (SELECT r.id AS run_id, r.framework, r.model, r.dataset, r.num_epochs, r.optimizer, t.metric,
               CASE t.metric WHEN 'test_accuracy' THEN r.test_accuracy ELSE r.val_accuracy END AS value,
               t.target, t.tolerance, t.source, t.batch_size AS t_batch, t.global_batch_size AS t_global,
               t.ranks AS t_ranks, r.ranks,
               CAST(coalesce(json_extract(r.report, '$.options.batch_size'), r.batch_size) AS INTEGER) AS per_rank,
               CAST(coalesce(nullif(json_extract(r.report, '$.options.global_batch_size'), 0),
                             coalesce(json_extract(r.report, '$.options.batch_size'), r.batch_size) * r.ranks)
                    AS INTEGER) AS global_batch
        FROM runs r JOIN targets t
          ON t.model = r.model AND t.dataset = r.dataset
         AND (t.num_epochs = 0 OR t.num_epochs = r.num_epochs) AND (t.optimizer = '' OR t.optimizer = r.optimizer)
         AND (t.learning_rate = 0 OR abs(CAST(coalesce(json_extract(r.report, '$.options.learning_rate'),
                                                       json_extract(r.params, '$.learning_rate')) AS REAL)
                                         - t.learning_rate) <= 1e-6 * t.learning_rate)
         AND CAST(coalesce(json_extract(r.report, '$.options.steps_per_epoch'),
                           json_extract(r.params, '$.steps_per_epoch'), 0) AS INTEGER) = t.steps_per_epoch
         AND (t.momentum IS NULL OR abs(CAST(coalesce(json_extract(r.report, '$.options.momentum'),
                                                      json_extract(r.params, '$.momentum')) AS REAL)
                                        - t.momentum) <= 1e-9)
        WHERE r.status = 'ok')
  WHERE (t_batch = 0 OR (t_batch = per_rank AND (t_ranks = '' OR (',' || t_ranks || ',') LIKE ('%,' || ranks || ',%'))))
    AND (t_global = 0 OR t_global = global_batch);
)SQL";

}  // namespace dtnn::schema
