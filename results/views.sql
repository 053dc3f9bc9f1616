-- Every view of the results store, the one definition of each derived result.
--
-- The store (results/store.h) drops every view and creates these again whenever a writer opens a database
-- whose views are not this file's (PRAGMA user_version holds a hash of this text), and around migrations,
-- which hold tables only. A read-only tool opening a database written by another build creates them as
-- TEMP views for its connection. So the SQL below is what every tool reads: `dtnn query`, `dtnn check`,
-- `dtnn report` and the analysis scripts select from these views and never restate them.
--
-- Order matters: a view comes after the views it reads. Comments inside a CREATE VIEW are stored with it
-- (sqlite3's .schema shows them); these between the statements are not.

-- The fastest algorithm per convolution problem, direction, device, thread count and TF32 setting
-- of each environment (conv_benchmarks: bench_conv and `dtnn layers` results), with the contenders counted.
CREATE VIEW v_best_conv AS
  SELECT problem, direction, device, threads, tf32, algorithm, round(min(median_ms), 4) AS median_ms,
         round(gflops, 1) AS gflops, count(*) AS contenders, environment_id
  FROM conv_benchmarks WHERE median_ms IS NOT NULL
  GROUP BY environment_id, problem, direction, device, threads, tf32
  ORDER BY problem, direction, device, threads, tf32;

-- Per data-parallel run: the median step's communication (epoch_comm's 'median' rows summed over
-- epochs): buckets and bytes per step, step / compute / communication / exposed milliseconds, exposed share.
CREATE VIEW v_comm AS
  SELECT r.id AS run_id, r.model, r.ranks, r.config_key, c.mode, max(c.buckets_per_step) AS buckets_per_step,
         max(c.bytes_per_step) AS bytes_per_step, sum(c.steps) AS steps,
         round(1e3 * sum(c.step_s) / sum(c.steps), 3) AS step_ms,
         round(1e3 * sum(c.compute_s) / sum(c.steps), 3) AS compute_ms,
         round(1e3 * sum(c.comm_s) / sum(c.steps), 3) AS comm_ms,
         round(1e3 * sum(c.exposed_s) / sum(c.steps), 3) AS exposed_ms,
         round(sum(c.exposed_s) / sum(c.step_s), 4) AS exposed_fraction
  FROM runs r JOIN epoch_comm c ON c.run_id = r.id AND c.stat = 'median'
  WHERE r.status = 'ok'
  GROUP BY r.id;

-- Per run, rank and phase (run_phases): calls, total milliseconds and milliseconds per training step.
CREATE VIEW v_phases AS
  SELECT p.run_id, r.model, r.ranks, p.rank, p.phase, p.source, sum(p.calls) AS calls,
         round(1e3 * sum(p.total_s), 3) AS total_ms,
         round(1e3 * sum(p.total_s) / NULLIF((SELECT sum(s.calls) FROM run_phases s WHERE s.run_id = p.run_id
                                               AND s.rank = p.rank AND s.phase = 'step'), 0), 3) AS ms_per_step
  FROM run_phases p JOIN runs r ON r.id = p.run_id
  GROUP BY p.run_id, p.rank, p.phase
  ORDER BY p.run_id, p.phase, p.rank;

-- Per traced run (run_stragglers): how far the slowest rank lagged each step, which rank was slowest
-- most often and in which phase.
CREATE VIEW v_stragglers AS
  WITH per_rank AS (
    SELECT run_id, slowest_rank, count(*) AS n FROM run_stragglers GROUP BY run_id, slowest_rank),
  top_phase AS (
    SELECT run_id, phase, count(*) AS n FROM run_stragglers GROUP BY run_id, phase)
  SELECT s.run_id, r.model, r.ranks, count(*) AS steps,
         round(1e3 * avg(s.median_busy_s), 3) AS median_busy_ms,
         round(1e3 * avg(s.lag_s), 3) AS mean_lag_ms, round(1e3 * max(s.lag_s), 3) AS max_lag_ms,
         round(avg(s.lag_s / NULLIF(s.median_busy_s, 0)), 4) AS mean_lag_fraction,
         (SELECT slowest_rank FROM per_rank p WHERE p.run_id = s.run_id ORDER BY n DESC, slowest_rank LIMIT 1)
           AS most_often_slowest,
         (SELECT max(n) FROM per_rank p WHERE p.run_id = s.run_id) AS times_slowest,
         (SELECT phase FROM top_phase t WHERE t.run_id = s.run_id ORDER BY n DESC, phase LIMIT 1) AS usual_phase
  FROM run_stragglers s JOIN runs r ON r.id = s.run_id
  GROUP BY s.run_id
  ORDER BY s.run_id;

-- Model averaging (run_averaging, epoch_averaging) and gradient summing side by side, epoch by epoch:
-- rounds and bytes of communication, accuracies, against the same configuration's gradient-sum run.
CREATE VIEW v_averaging_epochs AS
  WITH sel AS (
    SELECT r.id, r.model, r.dataset, r.ranks, r.config_key, r.label, r.status,
           coalesce(a.mode, CASE WHEN r.ranks > 1 THEN 'gradient' ELSE 'none' END) AS mode,
           a.every_epochs, a.every_steps,
           coalesce(json_extract(r.report, '$.options.straggler_ms'), '') AS straggler
    FROM runs r LEFT JOIN run_averaging a ON a.run_id = r.id
    WHERE r.status IN ('ok', 'diverged')
      AND (a.run_id IS NOT NULL OR json_extract(r.params, '$.model_averaging') IS NOT NULL)),
  per_epoch AS (
    SELECT s.*, e.epoch, e.time_s, e.train_accuracy, e.val_accuracy,
           CASE WHEN ea.run_id IS NOT NULL THEN ea.averages WHEN s.mode = 'gradient' THEN coalesce(c0.steps, 0)
                ELSE 0 END AS epoch_rounds,
           CASE WHEN ea.run_id IS NOT NULL THEN ea.bytes_per_rank
                WHEN s.mode = 'gradient' THEN coalesce(c0.bytes_per_step * c0.steps, 0) ELSE 0 END AS epoch_bytes,
           CASE WHEN ea.run_id IS NOT NULL THEN ea.wait_s_max
                WHEN s.mode = 'gradient' THEN coalesce(cm.exposed_s, 0) ELSE 0 END AS epoch_wait_max
    FROM sel s JOIN epochs e ON e.run_id = s.id
    LEFT JOIN epoch_averaging ea ON ea.run_id = s.id AND ea.epoch = e.epoch
    LEFT JOIN epoch_comm c0 ON c0.run_id = s.id AND c0.epoch = e.epoch AND c0.stat = 'rank0'
    LEFT JOIN epoch_comm cm ON cm.run_id = s.id AND cm.epoch = e.epoch AND cm.stat = 'max')
  SELECT id AS run_id, model, dataset, ranks, mode, every_epochs, every_steps, straggler, epoch,
         epoch_rounds,
         sum(epoch_rounds) OVER w AS rounds,
         sum(epoch_bytes) OVER w AS bytes_per_rank,
         round(sum(epoch_wait_max) OVER w, 6) AS wait_s_max,
         round(sum(time_s) OVER w, 6) AS time_s,
         train_accuracy, val_accuracy, config_key, label, status
  FROM per_epoch
  WINDOW w AS (PARTITION BY id ORDER BY epoch ROWS UNBOUNDED PRECEDING)
  ORDER BY run_id, epoch;

-- v_averaging_epochs summed per run: what a mode of model averaging costs and gains per run.
CREATE VIEW v_averaging AS
  SELECT r.id AS run_id, r.model, r.dataset, r.ranks, v.mode, a.every_epochs,
         a.every_steps, v.straggler,
         coalesce(a.averages, v.rounds) AS rounds, a.merges_per_rank,
         coalesce(a.bytes_per_rank, v.bytes_per_rank) AS bytes_per_rank,
         round(coalesce(a.wait_s_rank0, (SELECT sum(c.exposed_s) FROM epoch_comm c WHERE c.run_id = r.id
                                         AND c.stat = 'rank0'), 0), 6) AS wait_s_rank0,
         round(coalesce(a.wait_s_max, v.wait_s_max), 6) AS wait_s_max,
         round(r.train_time_s, 3) AS train_time_s, round(r.duration_s, 3) AS duration_s,
         r.test_accuracy, r.val_accuracy, v.epoch AS epochs, r.status, r.config_key, r.label
  FROM v_averaging_epochs v JOIN runs r ON r.id = v.run_id
  LEFT JOIN run_averaging a ON a.run_id = r.id
  WHERE v.epoch = (SELECT max(epoch) FROM epochs e WHERE e.run_id = r.id)
  ORDER BY r.model, v.mode, a.every_epochs, a.every_steps, v.straggler, r.ranks, r.id;

-- The throughput a speed-up is taken of: each ok run's whole-run samples/s (epoch 0) and each of its epochs'
-- (epoch N, without the warm-up of the first), with the share of the step the median rank computed and spent
-- exposed on communication.
CREATE VIEW v_scaling_figures AS
  SELECT r.id AS run_id, 0 AS epoch, r.samples_per_s, c.exposed_fraction AS exposed,
         c.compute_ms / c.step_ms AS compute
  FROM runs r LEFT JOIN v_comm c ON c.run_id = r.id WHERE r.status = 'ok'
  UNION ALL
  SELECT r.id, e.epoch, e.samples_per_s, x.exposed_s / x.step_s, x.compute_s / x.step_s
  FROM runs r JOIN epochs e ON e.run_id = r.id
  LEFT JOIN epoch_comm x ON x.run_id = r.id AND x.epoch = e.epoch AND x.stat = 'median'
  WHERE r.status = 'ok';

-- Which runs belong together in a scaling study: each ok run's configuration, its matrix (by name),
-- environment and config_key (the trial's parameters but ranks and nodes: experiments/runner.cpp), and its
-- baseline_key, the config_key without the parameters one rank does not depend on (transport and reduction
-- mode: one rank reduces nothing, so a 1-rank run stands for every transport and mode of its configuration).
CREATE VIEW v_scaling_groups AS
  WITH RECURSIVE items(run_id, pos, rest, item) AS (
    SELECT id, 0, config_key || ';', '' FROM runs WHERE status = 'ok'
    UNION ALL
    SELECT run_id, pos + 1, substr(rest, instr(rest, ';') + 1), substr(rest, 1, instr(rest, ';') - 1)
    FROM items WHERE rest != ''),
  kept AS (
    SELECT run_id, group_concat(item, ';') AS baseline_key
    FROM (SELECT run_id, item FROM items
          WHERE item != '' AND substr(item, 1, instr(item || '=', '=') - 1)
                NOT IN ('transport', 'non_blocking_mpi', 'blocking_mpi', 'gradient_bucket_mb', 'gradient_buckets_min')
          ORDER BY run_id, pos)
    GROUP BY run_id)
  SELECT r.id AS run_id, r.environment_id, coalesce(m.name, '') AS matrix, r.config_key,
         coalesce(k.baseline_key, '') AS baseline_key, r.ranks
  FROM runs r LEFT JOIN matrices m ON m.id = r.matrix_id LEFT JOIN kept k ON k.run_id = r.id
  WHERE r.status = 'ok';

-- The one speed-up rule (v_scaling_epochs and v_scaling, and every reader through them): which runs a
-- configuration's speed-up is against, per figure (epoch 0: the whole run). A configuration's baseline is the
-- 1-rank runs of its baseline_key (v_scaling_groups); a configuration with no such run is against its own
-- fewest ranks (a study over nodes that starts at 4 ranks), which baseline_ranks says. Only runs with that
-- figure count.
CREATE VIEW v_scaling_baselines AS
  WITH f AS (
    SELECT s.run_id, s.epoch, s.samples_per_s AS sps, g.environment_id, g.matrix, g.config_key, g.baseline_key, g.ranks
    FROM v_scaling_figures s JOIN v_scaling_groups g ON g.run_id = s.run_id),
  cand AS (SELECT * FROM f WHERE sps > 0),
  one AS (SELECT DISTINCT environment_id, matrix, baseline_key, epoch FROM cand WHERE ranks = 1),
  fewest AS (
    SELECT environment_id, matrix, config_key, epoch, min(ranks) AS ranks FROM cand
    GROUP BY environment_id, matrix, config_key, epoch),
  configs AS (SELECT DISTINCT environment_id, matrix, config_key, baseline_key, epoch FROM f)
  SELECT c.environment_id, c.matrix, c.config_key, c.epoch, b.run_id AS baseline_run_id, b.ranks AS baseline_ranks,
         b.sps AS baseline_samples_per_s
  FROM configs c
  LEFT JOIN one o ON o.environment_id = c.environment_id AND o.matrix = c.matrix AND o.baseline_key = c.baseline_key
                 AND o.epoch = c.epoch
  LEFT JOIN fewest w ON w.environment_id = c.environment_id AND w.matrix = c.matrix AND w.config_key = c.config_key
                    AND w.epoch = c.epoch
  JOIN cand b ON b.environment_id = c.environment_id AND b.matrix = c.matrix AND b.epoch = c.epoch
             AND CASE WHEN o.baseline_key IS NOT NULL THEN b.ranks = 1 AND b.baseline_key = c.baseline_key
                      ELSE b.ranks = w.ranks AND b.config_key = c.config_key END;

-- Measured scaling per figure (epoch 0: the whole run; epoch N: that epoch): per configuration (as
-- v_scaling_baselines) and rank count, the runs with the figure, their mean, min, max and sample standard
-- deviation of samples/s (NULL for one run), speed-up and efficiency against the configuration's baseline (its
-- mean samples/s and ranks), and the mean compute and exposed-communication shares of the step.
CREATE VIEW v_scaling_epochs AS
  WITH agg AS (
    SELECT g.environment_id, g.matrix, g.config_key, s.epoch, r.framework, r.model, r.dataset, r.conv_algo,
           r.threads, r.device, r.ranks, avg(s.samples_per_s) AS sps, min(s.samples_per_s) AS min_sps,
           max(s.samples_per_s) AS max_sps, count(s.samples_per_s) AS n,
           sum(s.samples_per_s * s.samples_per_s) AS sum_sq, sum(s.samples_per_s) AS sum_sps, avg(s.exposed) AS exposed,
           avg(s.compute) AS compute
    FROM v_scaling_figures s JOIN v_scaling_groups g ON g.run_id = s.run_id JOIN runs r ON r.id = s.run_id
    GROUP BY g.environment_id, g.matrix, g.config_key, s.epoch, r.ranks),
  base AS (
    SELECT environment_id, matrix, config_key, epoch, avg(baseline_samples_per_s) AS sps, min(baseline_ranks) AS ranks
    FROM v_scaling_baselines GROUP BY environment_id, matrix, config_key, epoch)
  SELECT a.framework, a.model, a.dataset, a.conv_algo, a.threads, a.device, a.ranks, a.epoch, a.n AS runs,
         round(a.sps, 1) AS mean_samples_per_s, round(a.min_sps, 1) AS min_samples_per_s,
         round(a.max_sps, 1) AS max_samples_per_s, round(a.sps / b.sps, 3) AS speedup,
         round(a.sps / b.sps * b.ranks / a.ranks, 3) AS efficiency, round(b.sps, 1) AS baseline_samples_per_s,
         b.ranks AS baseline_ranks, a.environment_id, a.config_key, round(a.compute, 4) AS compute_fraction,
         round(a.exposed, 4) AS exposed_comm_fraction, a.matrix,
         CASE WHEN a.n > 1 THEN round(sqrt(max(0.0, (a.sum_sq - a.sum_sps * a.sum_sps / a.n) / (a.n - 1))), 1) END
           AS sd_samples_per_s
  FROM agg a JOIN base b ON b.environment_id = a.environment_id AND b.matrix = a.matrix
                        AND b.config_key = a.config_key AND b.epoch = a.epoch;

-- Measured (runs) and predicted (predictions) scaling curves: the whole runs' rows of v_scaling_epochs (the one
-- speed-up rule), and the newest prediction of each kind with the source of each row (measured, or the model or
-- simulator of a prediction, with its curve).
CREATE VIEW v_scaling AS
  WITH newest AS (
    SELECT max(id) AS id FROM predictions
    GROUP BY environment_id, config_key, source, model_kind, model, platform, rules, mode, scaling,
             coalesce(variant, ''), ranks)
  SELECT * FROM (
  SELECT framework, model, dataset, conv_algo, threads, device, ranks, runs, mean_samples_per_s, speedup, efficiency,
         environment_id, config_key, compute_fraction, exposed_comm_fraction, 'measured' AS source, NULL AS platform,
         NULL AS curve, baseline_ranks, matrix, min_samples_per_s, max_samples_per_s, sd_samples_per_s
  FROM v_scaling_epochs WHERE epoch = 0
  UNION ALL
  SELECT r.framework, p.model, r.dataset, r.conv_algo, r.threads, r.device, p.ranks, 0 AS runs,
         round(p.samples_per_s, 1), round(p.speedup, 3), round(p.efficiency, 3), p.environment_id, p.config_key,
         round(p.compute_s / p.step_s, 4), round(p.exposed_s / p.step_s, 4), p.source, p.platform,
         p.source || ', ' || p.platform || ', ' || p.mode || CASE p.scaling WHEN 'strong' THEN ', strong' ELSE '' END
           || CASE WHEN p.model_kind = 'pydtnn' THEN ', PyDTNN formulas' WHEN p.source = 'model'
                    AND p.rules != 'ompi41' THEN ', ' || p.rules || ' rules' ELSE '' END
           || CASE WHEN coalesce(p.variant, '') != '' THEN ' (' || p.variant || ')' ELSE '' END,
         1 AS baseline_ranks, (SELECT name FROM matrices WHERE id = p.matrix_id) AS matrix, NULL, NULL, NULL
  FROM predictions p JOIN newest n ON n.id = p.id
  LEFT JOIN runs r ON r.id = (SELECT min(run_id) FROM prediction_runs l WHERE l.prediction_id = p.id))
  ORDER BY config_key, source, curve, ranks;

-- One row per ok run: matrix, commit, framework, model, data, algorithm, ranks, threads, device, batch per
-- rank and scaling mode, samples/s and test accuracy.
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

-- Each ok run's recipe as it trained it, the one reading of a run that accuracy targets are matched against:
-- v_recipe_differences matches it with targets (the stored ones, or `dtnn check`'s file: analysis/check.cpp)
-- and says how a run differs from each. The batch per rank and the global batch are the
-- report's options (a strong-scaling trial's runs.batch_size is its global batch); a report's options are
-- text, so global_batch_size is cast before nullif (nullif('0', 0) is '0'); the learning rate is the one
-- given (SGD under weak scaling ran it times the ranks); not_from_scratch says why a run did not train the
-- recipe from scratch ('' when it did): it began from trained weights, resumed from a checkpoint that does
-- not record its start, or only evaluated. Reports without a start record (older dtnn, the PyTorch reference,
-- PyDTNN) are read from their options.
CREATE VIEW v_run_recipes AS
  SELECT r.id AS run_id, r.framework, r.label, r.model, r.dataset, r.optimizer, r.num_epochs,
         CAST(coalesce(json_extract(r.report, '$.options.batch_size'), r.batch_size) AS INTEGER) AS batch_per_rank,
         r.ranks,
         CAST(coalesce(json_extract(r.report, '$.options.steps_per_epoch'), json_extract(r.params, '$.steps_per_epoch'),
                       0) AS INTEGER) AS steps_per_epoch,
         CAST(coalesce(json_extract(r.report, '$.options_given.learning_rate'),
                       json_extract(r.report, '$.options.learning_rate'), json_extract(r.params, '$.learning_rate'), 0)
              AS REAL) AS learning_rate,
         CAST(coalesce(json_extract(r.report, '$.options.momentum'), json_extract(r.params, '$.momentum')) AS REAL)
           AS momentum,
         CAST(coalesce(nullif(CAST(json_extract(r.report, '$.options.global_batch_size') AS INTEGER), 0),
                       coalesce(json_extract(r.report, '$.options.batch_size'), r.batch_size) * r.ranks) AS INTEGER)
           AS global_batch,
         CASE WHEN json_type(r.report, '$.start') = 'object' THEN
                CASE WHEN json_extract(r.report, '$.start.trained_from_scratch') THEN ''
                     WHEN json_extract(r.report, '$.start.evaluate_only') THEN 'evaluation only (--evaluate_only)'
                     WHEN json_type(r.report, '$.start.initial_weights') = 'null'
                       THEN 'resumed from a checkpoint that does not record the weights its run began from'
                     ELSE 'began from the trained weights in ' || json_extract(r.report, '$.start.initial_weights') END
              WHEN lower(CAST(coalesce(json_extract(r.report, '$.options.evaluate_only'), '') AS TEXT)) IN ('true', '1')
                THEN 'evaluation only (--evaluate_only)'
              WHEN coalesce(json_extract(r.report, '$.options.weights_and_bias_filename'), '') <> ''
                THEN 'may have begun from the weights in '
                     || json_extract(r.report, '$.options.weights_and_bias_filename')
                     || ' (its report predates the start record)'
              ELSE '' END AS not_from_scratch,
         r.test_accuracy, r.val_accuracy, r.matrix_id, r.environment_id
  FROM runs r WHERE r.status = 'ok';

-- The one target-matching rule: every ok run (v_run_recipes) against every target of its model and dataset,
-- with how its recipe differs from the target's, in words separated by '; ' ('' when it follows it: then the
-- target judges the run). A target's 0 / '' / NULL is "not stated": epochs, optimizer, learning rate (as
-- given), momentum, batch per rank with its rank counts, global batch; steps per epoch are always compared (0:
-- whole epochs). A run not trained from scratch follows no recipe. v_accuracy_vs_target judges the stored
-- targets with it; `dtnn check` judges a targets file's with it (a TEMP targets table shadowing the stored one).
CREATE VIEW v_recipe_differences AS
  SELECT c.run_id, t.id AS target_id, t.metric, t.target, t.tolerance, t.recipe, t.source, substr(
           CASE WHEN c.not_from_scratch <> ''
                THEN '; ' || c.not_from_scratch || '; targets judge training from scratch' ELSE '' END
        || CASE WHEN t.num_epochs <> 0 AND t.num_epochs <> c.num_epochs
                THEN '; epochs ' || c.num_epochs || ', target''s ' || t.num_epochs ELSE '' END
        || CASE WHEN t.optimizer <> '' AND t.optimizer <> c.optimizer
                THEN '; optimizer ' || c.optimizer || ', target''s ' || t.optimizer ELSE '' END
        || CASE WHEN t.learning_rate > 0 AND NOT abs(c.learning_rate - t.learning_rate) <= 1e-6 * t.learning_rate
                THEN '; learning rate ' || printf('%g', c.learning_rate) || ', target''s '
                     || printf('%g', t.learning_rate) ELSE '' END
        || CASE WHEN t.momentum IS NULL OR abs(c.momentum - t.momentum) <= 1e-9 THEN ''
                WHEN c.momentum IS NULL THEN '; momentum not recorded, target''s ' || printf('%g', t.momentum)
                ELSE '; momentum ' || printf('%g', c.momentum) || ', target''s ' || printf('%g', t.momentum) END
        || CASE WHEN t.steps_per_epoch = c.steps_per_epoch THEN ''
                WHEN c.steps_per_epoch <> 0
                THEN '; epochs capped at ' || c.steps_per_epoch || ' steps'
                     || CASE WHEN t.steps_per_epoch <> 0 THEN ', target''s ' || t.steps_per_epoch
                             ELSE ', target''s are whole' END
                ELSE '; whole epochs, target''s capped at ' || t.steps_per_epoch || ' steps' END
        || CASE WHEN t.batch_size > 0 AND t.batch_size <> c.batch_per_rank
                THEN '; batch ' || c.batch_per_rank || ' per rank, target''s ' || t.batch_size ELSE '' END
        || CASE WHEN t.batch_size > 0 AND t.ranks <> '' AND (',' || t.ranks || ',') NOT LIKE ('%,' || c.ranks || ',%')
                THEN '; ' || c.ranks || ' ranks, target''s ' || t.ranks ELSE '' END
        || CASE WHEN t.global_batch_size > 0 AND t.global_batch_size <> c.global_batch
                THEN '; global batch ' || c.global_batch || ', target''s ' || t.global_batch_size ELSE '' END,
         3) AS differences
  FROM v_run_recipes c JOIN targets t ON t.model = c.model AND t.dataset = c.dataset;

-- Each ok run against every stored accuracy target whose recipe it followed (v_recipe_differences), with the
-- verdict pass / fail / no value.
CREATE VIEW v_accuracy_vs_target AS
  SELECT run_id, framework, model, dataset, num_epochs, optimizer, metric, round(value, 2) AS value, target,
         tolerance,
         CASE WHEN value IS NULL THEN 'no value' WHEN value >= target - tolerance THEN 'pass' ELSE 'fail' END
           AS verdict,
         source
  FROM (SELECT c.run_id, c.framework, c.model, c.dataset, c.num_epochs, c.optimizer, d.metric,
               CASE d.metric WHEN 'test_accuracy' THEN c.test_accuracy ELSE c.val_accuracy END AS value,
               d.target, d.tolerance, d.source
        FROM v_recipe_differences d JOIN v_run_recipes c ON c.run_id = d.run_id
        WHERE d.differences = '');

-- Memory each run measured (its report's "memory" record: dtnn, the PyTorch reference and the PyDTNN peer
-- write one), beside what dtnn's model planned for its buffers: MiB of the largest rank's peak resident memory,
-- of the largest device peak (dtnn: bytes it held through its allocator; PyTorch: max_memory_allocated; NULL
-- without a GPU), and every rank's peak RSS as a JSON array. Runs stored before reports carried it have no row.
CREATE VIEW v_memory AS
  SELECT r.id AS run_id, r.framework, r.model, r.dataset, r.device, r.ranks, r.batch_size, r.label, r.config_key,
         r.environment_id,
         round(json_extract(r.report, '$.memory.planned_bytes') / 1048576.0, 2) AS planned_mib,
         round(json_extract(r.report, '$.memory.peak_rss_bytes_max') / 1048576.0, 1) AS peak_rss_mib,
         round(json_extract(r.report, '$.memory.device_peak_bytes_max') / 1048576.0, 1) AS device_peak_mib,
         json_extract(r.report, '$.memory.peak_rss_bytes') AS peak_rss_bytes_per_rank
  FROM runs r
  WHERE r.status IN ('ok', 'diverged') AND json_valid(r.report)
    AND json_extract(r.report, '$.memory.peak_rss_bytes_max') IS NOT NULL;

-- Time to target (MLPerf Training's measure): for each run a target matches (v_accuracy_vs_target), the
-- training time (the epochs' summed training loops, what samples/s is computed from) and epochs at which its
-- metric first reached target - tolerance. A validation target is judged after every epoch, so the first such
-- epoch is exact; the test set is evaluated once, after training, so a test target reached is reached at the
-- end (an upper bound: evaluated = 'after training'). NULL when it was not reached.
CREATE VIEW v_time_to_target AS
  WITH cum AS (
    SELECT run_id, epoch, val_accuracy, sum(time_s) OVER (PARTITION BY run_id ORDER BY epoch) AS time_s,
           max(epoch) OVER (PARTITION BY run_id) AS last_epoch
    FROM epochs),
  reached AS (
    SELECT j.run_id, j.metric, j.target, j.tolerance, min(c.epoch) AS epoch
    FROM v_accuracy_vs_target j
    JOIN cum c ON c.run_id = j.run_id
              AND CASE j.metric WHEN 'val_accuracy' THEN c.val_accuracy >= j.target - j.tolerance
                                ELSE j.verdict = 'pass' AND c.epoch = c.last_epoch END
    GROUP BY j.run_id, j.metric, j.target, j.tolerance)
  SELECT j.run_id, j.framework, j.model, j.dataset, j.num_epochs, j.optimizer, j.metric, j.target, j.tolerance,
         j.value AS final_value, j.verdict, r.epoch AS epochs_to_target, round(c.time_s, 3) AS time_to_target_s,
         CASE j.metric WHEN 'val_accuracy' THEN 'every epoch' ELSE 'after training' END AS evaluated, j.source
  FROM v_accuracy_vs_target j
  LEFT JOIN reached r ON r.run_id = j.run_id AND r.metric = j.metric AND r.target = j.target
                     AND r.tolerance = j.tolerance
  LEFT JOIN cum c ON c.run_id = r.run_id AND c.epoch = r.epoch;

-- Frameworks side by side (dtnn, PyTorch, PyDTNN): per recipe, environment, device, scaling mode and rank
-- count, each framework and precision's (dtype: --dtype; allreduce_dtype: --allreduce_dtype; float32 when not
-- given) median samples/s with min-max, speed-up and efficiency against the median of the
-- runs its configurations' speed-ups are against (v_scaling_baselines, the one rule: 1 rank, else the
-- fewest), exposed communication and test accuracy.
CREATE VIEW v_frameworks AS
  WITH ok AS (
    SELECT r.id AS run_id, r.environment_id, r.framework, r.model, r.dataset, r.device, r.threads, r.batch_size,
           r.optimizer, r.num_epochs, r.ranks, coalesce(json_extract(r.params, '$.dtype'), 'float32') AS dtype,
           coalesce(json_extract(r.params, '$.allreduce_dtype'), 'float32') AS allreduce_dtype,
           CASE WHEN json_extract(r.params, '$.scaling') = 'strong'
                     OR json_extract(r.params, '$.global_batch_size') IS NOT NULL THEN 'strong' ELSE 'weak' END
             AS scaling,
           r.samples_per_s AS sps, r.test_accuracy AS acc, c.exposed_fraction AS exposed
    FROM runs r LEFT JOIN v_comm c ON c.run_id = r.id
    WHERE r.status = 'ok' AND r.samples_per_s IS NOT NULL),
  ranked AS (  -- k: the run's place by samples/s, n: the group's runs (a window without ORDER BY: all of them)
    SELECT *, row_number() OVER (g ORDER BY sps) AS k, count(*) OVER g AS n FROM ok
    WINDOW g AS (PARTITION BY environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs, ranks)),
  grp AS (
    SELECT environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs,
           ranks, max(n) AS runs, avg(CASE WHEN k IN ((n + 1) / 2, n / 2 + 1) THEN sps END) AS median_sps,
           min(sps) AS min_sps, max(sps) AS max_sps, avg(exposed) AS exposed, avg(acc) AS acc
    FROM ranked
    GROUP BY environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs, ranks),
  base_runs AS (  -- the baseline runs of the recipe's configurations, at the fewest baseline ranks among them
    SELECT *, min(baseline_ranks) OVER (g) AS fewest FROM (
      SELECT DISTINCT o.environment_id, o.framework, o.dtype, o.allreduce_dtype, o.model, o.dataset, o.device, o.threads, o.scaling, o.batch_size,
             o.optimizer, o.num_epochs, b.baseline_run_id, b.baseline_ranks, b.baseline_samples_per_s AS sps
      FROM ok o JOIN v_scaling_groups s ON s.run_id = o.run_id
      JOIN v_scaling_baselines b ON b.environment_id = s.environment_id AND b.matrix = s.matrix
                                AND b.config_key = s.config_key AND b.epoch = 0)
    WINDOW g AS (PARTITION BY environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs)),
  base_ranked AS (
    SELECT *, row_number() OVER (g ORDER BY sps) AS k, count(*) OVER g AS n FROM base_runs
    WHERE baseline_ranks = fewest
    WINDOW g AS (PARTITION BY environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs)),
  base AS (
    SELECT environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs,
           min(baseline_ranks) AS ranks, avg(CASE WHEN k IN ((n + 1) / 2, n / 2 + 1) THEN sps END) AS median_sps
    FROM base_ranked GROUP BY environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs)
  SELECT g.model, g.dataset, g.device, g.scaling, g.batch_size, g.threads, g.optimizer, g.num_epochs, g.ranks,
         g.framework, g.dtype, g.allreduce_dtype, g.runs, round(g.median_sps, 1) AS median_samples_per_s, round(g.min_sps, 1) AS min_samples_per_s,
         round(g.max_sps, 1) AS max_samples_per_s, round(g.median_sps / b.median_sps, 3) AS speedup,
         round(g.median_sps / b.median_sps * b.ranks / g.ranks, 3) AS efficiency, b.ranks AS baseline_ranks,
         round(g.exposed, 4) AS exposed_comm_fraction, round(g.acc, 2) AS test_accuracy, g.environment_id
  FROM grp g
  JOIN base b USING (environment_id, framework, dtype, allreduce_dtype, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs)
  ORDER BY g.environment_id, g.model, g.dataset, g.device, g.scaling, g.batch_size, g.threads, g.optimizer,
           g.num_epochs, g.ranks, g.framework, g.dtype, g.allreduce_dtype;
