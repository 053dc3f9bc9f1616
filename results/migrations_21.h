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
// experiments/reference/torch_dist.py) with its times taken as dtnn's. SQLite cannot change a CHECK in place: the
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
)SQL";

}  // namespace dtnn::schema
