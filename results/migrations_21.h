// Migration 21 of the results store (results/migrations.h lists them all): v_frameworks, the frameworks of one
// study side by side. Released text is never edited.
#pragma once

namespace dtnn::schema {

// One row per framework and rank count of a recipe (model, dataset, device, threads, scaling, batch, optimizer,
// epochs) on one machine (environment): how many ok runs measured a samples/s, their median and spread (min,
// max), the speed-up and parallel efficiency of the medians against the same framework's fewest ranks of that
// recipe (baseline_ranks), the mean exposed-communication share of the step (v_comm; NULL for a framework
// that does not report it) and the mean test accuracy. `dtnn query frameworks` and the report's Frameworks
// section read it. The median of an even count is the mean of the middle two.
//
// epoch_comm's mode also takes 'ddp': PyTorch's DistributedDataParallel (the PyTorch reference beyond one rank,
// analysis/reference/torch_dist.py) with its times taken as dtnn's. SQLite cannot change a CHECK in place: the
// table is rebuilt (same columns, rows kept), with legacy_alter_table on for the rename, which otherwise stops at
// the views that name the dropped table (v_comm, v_averaging, v_averaging_epochs: they read the new one after).
inline constexpr const char* kMigration21Sql = R"SQL(
PRAGMA legacy_alter_table = ON;
CREATE TABLE epoch_comm_new (
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch            INTEGER NOT NULL,      -- 1-based
  stat             TEXT NOT NULL CHECK (stat IN ('rank0', 'min', 'median', 'max')),  -- over the ranks
  mode             TEXT NOT NULL CHECK (mode IN ('none', 'blocking', 'non_blocking', 'ddp')),  -- none: one rank
  steps            INTEGER NOT NULL,
  buckets_per_step INTEGER NOT NULL,
  bytes_per_step   REAL NOT NULL,         -- bytes each rank contributes to the gradient sums per step
  step_s           REAL NOT NULL,         -- sums over the epoch's training steps (seconds)
  compute_s        REAL NOT NULL,
  comm_s           REAL NOT NULL,         -- inside communication calls
  exposed_s        REAL NOT NULL,         -- waiting for communication after the rank's own backward pass
  PRIMARY KEY (run_id, epoch, stat)
);
INSERT INTO epoch_comm_new (run_id, epoch, stat, mode, steps, buckets_per_step, bytes_per_step, step_s, compute_s,
                            comm_s, exposed_s)
  SELECT run_id, epoch, stat, mode, steps, buckets_per_step, bytes_per_step, step_s, compute_s, comm_s, exposed_s
  FROM epoch_comm;
DROP TABLE epoch_comm;
ALTER TABLE epoch_comm_new RENAME TO epoch_comm;
PRAGMA legacy_alter_table = OFF;
CREATE VIEW v_frameworks AS
  WITH ok AS (
    SELECT r.environment_id, r.framework, r.model, r.dataset, r.device, r.threads, r.batch_size, r.optimizer,
           r.num_epochs, r.ranks,
           CASE WHEN json_extract(r.params, '$.scaling') = 'strong'
                     OR json_extract(r.params, '$.global_batch_size') IS NOT NULL THEN 'strong' ELSE 'weak' END
             AS scaling,
           r.samples_per_s AS sps, r.test_accuracy AS acc, c.exposed_fraction AS exposed
    FROM runs r LEFT JOIN v_comm c ON c.run_id = r.id
    WHERE r.status = 'ok' AND r.samples_per_s IS NOT NULL),
  ranked AS (  -- k: the run's place by samples/s, n: the group's runs (a window without ORDER BY: all of them)
    SELECT *, row_number() OVER (g ORDER BY sps) AS k, count(*) OVER g AS n FROM ok
    WINDOW g AS (PARTITION BY environment_id, framework, model, dataset, device, threads, scaling, batch_size,
                              optimizer, num_epochs, ranks)),
  grp AS (
    SELECT environment_id, framework, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs,
           ranks, max(n) AS runs, avg(CASE WHEN k IN ((n + 1) / 2, n / 2 + 1) THEN sps END) AS median_sps,
           min(sps) AS min_sps, max(sps) AS max_sps, avg(exposed) AS exposed, avg(acc) AS acc
    FROM ranked
    GROUP BY environment_id, framework, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs,
             ranks),
  base AS (
    SELECT environment_id, framework, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs,
           min(ranks) AS ranks
    FROM grp
    GROUP BY environment_id, framework, model, dataset, device, threads, scaling, batch_size, optimizer, num_epochs)
  SELECT g.model, g.dataset, g.device, g.scaling, g.batch_size, g.threads, g.optimizer, g.num_epochs, g.ranks,
         g.framework, g.runs, round(g.median_sps, 1) AS median_samples_per_s, round(g.min_sps, 1) AS min_samples_per_s,
         round(g.max_sps, 1) AS max_samples_per_s, round(g.median_sps / b.median_sps, 3) AS speedup,
         round(g.median_sps / b.median_sps * b.ranks / g.ranks, 3) AS efficiency, b.ranks AS baseline_ranks,
         round(g.exposed, 4) AS exposed_comm_fraction, round(g.acc, 2) AS test_accuracy, g.environment_id
  FROM grp g
  JOIN base b0 USING (environment_id, framework, model, dataset, device, threads, scaling, batch_size, optimizer,
                      num_epochs)
  JOIN grp b ON b.environment_id = g.environment_id AND b.framework = g.framework AND b.model = g.model
            AND b.dataset = g.dataset AND b.device = g.device AND b.threads = g.threads AND b.scaling = g.scaling
            AND b.batch_size = g.batch_size AND b.optimizer = g.optimizer AND b.num_epochs = g.num_epochs
            AND b.ranks = b0.ranks
  ORDER BY g.environment_id, g.model, g.dataset, g.device, g.scaling, g.batch_size, g.threads, g.optimizer,
           g.num_epochs, g.ranks, g.framework;
)SQL";

}  // namespace dtnn::schema
