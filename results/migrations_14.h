// Migration 14 of the results store (results/migrations.h lists them all): v_accuracy_vs_target judges only
// runs trained from scratch. Released text is never edited.
#pragma once

namespace dtnn::schema {

// A run that began from trained weights (--weights_and_bias_filename naming a file that existed) or only
// evaluated them (--evaluate_only) reached its accuracy with training the recipe does not count: it was
// judged as if trained from scratch. Reports now carry "start" (engine/train/report.cpp); a report without it
// (older dtnn, PyTorch reference, PyDTNN) is taken from its options: evaluate_only, or a non-empty
// weights_and_bias_filename (it may have loaded that file), is not judged. analysis/targets.cpp's
// kRunRecipeColumns holds the same expression for dtnn check, which names the reason.
#define DTNN_SQL_NOT_FROM_SCRATCH                                                                              \
  "CASE WHEN json_type(r.report, '$.start') = 'object' THEN "                                                \
  "  CASE WHEN json_extract(r.report, '$.start.trained_from_scratch') THEN '' "                              \
  "       WHEN json_extract(r.report, '$.start.evaluate_only') THEN 'evaluation only (--evaluate_only)' "   \
  "       WHEN json_type(r.report, '$.start.initial_weights') = 'null' "                                     \
  "         THEN 'resumed from a checkpoint that does not record the weights its run began from' "           \
  "       ELSE 'began from the trained weights in ' || json_extract(r.report, '$.start.initial_weights') END " \
  "WHEN lower(CAST(coalesce(json_extract(r.report, '$.options.evaluate_only'), '') AS TEXT)) IN ('true', '1') " \
  "  THEN 'evaluation only (--evaluate_only)' "                                                              \
  "WHEN coalesce(json_extract(r.report, '$.options.weights_and_bias_filename'), '') <> '' "                  \
  "  THEN 'may have begun from the weights in ' || json_extract(r.report, '$.options.weights_and_bias_filename') " \
  "       || ' (its report predates the start record)' "                                                     \
  "ELSE '' END"

// Otherwise migration 13's view.
inline constexpr const char* kMigration14Sql = R"SQL(
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
                    AS INTEGER) AS global_batch,
               )SQL" DTNN_SQL_NOT_FROM_SCRATCH R"SQL( AS not_from_scratch
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
    AND (t_global = 0 OR t_global = global_batch)
    AND not_from_scratch = '';
)SQL";

}  // namespace dtnn::schema
