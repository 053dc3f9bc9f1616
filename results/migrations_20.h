// Migration 20 of the results store (results/migrations.h lists them all): v_accuracy_vs_target matches a
// target's learning rate against the rate the run was given. Released text is never edited.
#pragma once

#include "results/migrations_14.h"  // DTNN_SQL_NOT_FROM_SCRATCH

namespace dtnn::schema {

// A report's options.learning_rate is the rate as run: with --parallel=data, SGD and --learning_rate_scaling
// (PyDTNN's default) the given rate times the ranks. A recipe states the rate as given for every rank count, so
// an SGD target for ranks = [1, 2] never judged its 2-rank runs (0.02 against 0.01). Reports since this
// migration keep the given value under options_given where it differs; older reports and PyTorch's (no
// scaling) fall back to options.learning_rate. analysis/targets.cpp's kRunRecipeColumns (dtnn check) alike.
// Otherwise migration 18's view.
inline constexpr const char* kMigration20Sql = R"SQL(
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
               CAST(coalesce(nullif(CAST(json_extract(r.report, '$.options.global_batch_size') AS INTEGER), 0),
                             coalesce(json_extract(r.report, '$.options.batch_size'), r.batch_size) * r.ranks)
                    AS INTEGER) AS global_batch,
               )SQL" DTNN_SQL_NOT_FROM_SCRATCH R"SQL( AS not_from_scratch
        FROM runs r JOIN targets t
          ON t.model = r.model AND t.dataset = r.dataset
         AND (t.num_epochs = 0 OR t.num_epochs = r.num_epochs) AND (t.optimizer = '' OR t.optimizer = r.optimizer)
         AND (t.learning_rate = 0 OR abs(CAST(coalesce(json_extract(r.report, '$.options_given.learning_rate'),
                                                       json_extract(r.report, '$.options.learning_rate'),
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
