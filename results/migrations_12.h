// Migration 12 of the results store (results/migrations.h lists them all): a target may state its recipe's
// momentum. Released text is never edited.
#pragma once

namespace dtnn::schema {

// NULL: not stated, matching any run (every target stored before, and the adam recipes). A stated momentum
// matches a run whose report's options (every option, defaults included), else its trial parameters, give
// the same value; a run recording neither is another recipe. Why: SGD at the same rate with and without
// momentum are different recipes (d2l's ResNet-18 has none, dtnn's default is 0.9), and the view and
// `dtnn check` judged them by one number. The view is migration 10's with that one condition added.
inline constexpr const char* kMigration12Sql = R"SQL(
ALTER TABLE targets ADD COLUMN momentum REAL;
DROP VIEW v_accuracy_vs_target;
CREATE VIEW v_accuracy_vs_target AS
  SELECT run_id, framework, model, dataset, num_epochs, optimizer, metric, round(value, 2) AS value, target,
         tolerance,
         CASE WHEN value IS NULL THEN 'no value' WHEN value >= target - tolerance THEN 'pass' ELSE 'fail' END
           AS verdict,
         source
  FROM (SELECT r.id AS run_id, r.framework, r.model, r.dataset, r.num_epochs, r.optimizer, t.metric,
               CASE t.metric WHEN 'test_accuracy' THEN r.test_accuracy ELSE r.val_accuracy END AS value,
               t.target, t.tolerance, t.source
        FROM runs r JOIN targets t
          ON t.model = r.model AND t.dataset = r.dataset
         AND (t.num_epochs = 0 OR t.num_epochs = r.num_epochs) AND (t.optimizer = '' OR t.optimizer = r.optimizer)
         AND (t.learning_rate = 0 OR abs(CAST(coalesce(json_extract(r.report, '$.options.learning_rate'),
                                                       json_extract(r.params, '$.learning_rate')) AS REAL)
                                         - t.learning_rate) <= 1e-6 * t.learning_rate)
         AND CAST(coalesce(json_extract(r.report, '$.options.steps_per_epoch'),
                           json_extract(r.params, '$.steps_per_epoch'), 0) AS INTEGER) = t.steps_per_epoch
         AND (t.batch_size = 0 OR (t.batch_size = r.batch_size
                                   AND (t.ranks = '' OR (',' || t.ranks || ',') LIKE ('%,' || r.ranks || ',%'))))
         AND (t.global_batch_size = 0 OR t.global_batch_size = r.batch_size * r.ranks)
         AND (t.momentum IS NULL OR abs(CAST(coalesce(json_extract(r.report, '$.options.momentum'),
                                                      json_extract(r.params, '$.momentum')) AS REAL)
                                        - t.momentum) <= 1e-9)
        WHERE r.status = 'ok');
)SQL";

}  // namespace dtnn::schema
