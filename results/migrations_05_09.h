// Migrations 5-9 of the results store (results/migrations.h lists them all, with their descriptions).
// Released text is never edited: moved here verbatim from migrations.h, which had reached 600 lines.
#pragma once

namespace dtnn::schema {

inline constexpr const char* kMigration5Sql = R"SQL(
CREATE TABLE epoch_comm (
  run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch            INTEGER NOT NULL,      -- 1-based
  stat             TEXT NOT NULL CHECK (stat IN ('rank0', 'min', 'median', 'max')),  -- over the ranks
  mode             TEXT NOT NULL CHECK (mode IN ('none', 'blocking', 'non_blocking')),  -- none: one rank
  steps            INTEGER NOT NULL,
  buckets_per_step INTEGER NOT NULL,
  bytes_per_step   REAL NOT NULL,         -- bytes each rank contributes to the gradient sums per step
  step_s           REAL NOT NULL,         -- sums over the epoch's training steps (seconds)
  compute_s        REAL NOT NULL,
  comm_s           REAL NOT NULL,         -- inside communication calls
  exposed_s        REAL NOT NULL,         -- waiting for communication after the rank's own backward pass
  PRIMARY KEY (run_id, epoch, stat)
);
)SQL";

inline constexpr const char* kMigration6Sql = R"SQL(
CREATE TABLE collective_benchmarks (
  id              INTEGER PRIMARY KEY,
  environment_id  INTEGER NOT NULL REFERENCES environments(id),
  file            TEXT NOT NULL,          -- the ingested file
  op              TEXT NOT NULL CHECK (op IN ('allreduce', 'iallreduce')),  -- iallreduce: MPI_Iallreduce + MPI_Wait
  bytes           INTEGER NOT NULL CHECK (bytes > 0),  -- float buffer, reduced in place with MPI_SUM
  ranks           INTEGER NOT NULL CHECK (ranks > 0),
  transport       TEXT NOT NULL,          -- as requested: 'default', 'btl=self,tcp', ... ('unknown' if unsaid)
  mpi_library     TEXT NOT NULL,          -- MPI_Get_library_version's first line
  repetitions     INTEGER NOT NULL,       -- runs behind time_s (--benchmark_repetitions)
  time_s          REAL NOT NULL,          -- per operation on the slowest rank: the median over repetitions
  time_min_s      REAL,                   -- over repetitions; NULL with only aggregates or a single run
  time_max_s      REAL,
  time_stddev_s   REAL,                   -- Google Benchmark's stddev aggregate; NULL without repetitions
  bytes_per_s     REAL NOT NULL,          -- bytes / time_s (algorithm bandwidth)
  bus_bytes_per_s REAL NOT NULL,          -- bytes_per_s * 2(ranks-1)/ranks (allreduce bus bandwidth)
  ingested_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX collective_benchmarks_by_op ON collective_benchmarks (op, ranks, transport, bytes);
)SQL";

inline constexpr const char* kMigration7Sql = R"SQL(
ALTER TABLE runs ADD COLUMN trace_path TEXT;  -- the runner's --tracing output (a matrix's tracing = true), else NULL
CREATE TABLE run_phases (
  run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank     INTEGER NOT NULL,
  phase    TEXT NOT NULL,      -- trace: forward, backward, step, data_wait, loss, comm_calls, in_flight, wait_dw,
                               -- allreduce_dw, update_dw, evaluate; comm_timers: step, compute, comm_calls, exposed_comm
  layer    INTEGER NOT NULL,   -- layer id (forward, backward), else -1
  calls    INTEGER NOT NULL,
  total_s  REAL NOT NULL,
  median_s REAL,               -- per call; NULL from comm_timers (sums only)
  source   TEXT NOT NULL CHECK (source IN ('trace', 'comm_timers')),
  PRIMARY KEY (run_id, rank, phase, layer)
);
CREATE TABLE run_stragglers (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step          INTEGER NOT NULL,   -- training step counted over the run, from 0
  slowest_rank  INTEGER NOT NULL,   -- the rank with the most busy time (step + data wait - exposed waits)
  busy_s        REAL NOT NULL,
  median_busy_s REAL NOT NULL,      -- over the ranks
  lag_s         REAL NOT NULL,      -- busy_s - median_busy_s
  phase         TEXT NOT NULL,      -- where the slowest rank exceeds the median rank most ("backward 012_Conv2D")
  phase_lag_s   REAL NOT NULL,
  PRIMARY KEY (run_id, step)
);
CREATE TABLE run_timeline (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step    INTEGER NOT NULL,         -- the representative step (trace/trace_summary.h)
  rank    INTEGER NOT NULL,
  lane    INTEGER NOT NULL,         -- 0 training thread, 1 + b bucket b's sum in flight
  kind    TEXT NOT NULL,
  name    TEXT NOT NULL,
  id      INTEGER NOT NULL,         -- layer id or bucket
  begin_s REAL NOT NULL,            -- from the step's first event of any rank, on rank 0's clock
  end_s   REAL NOT NULL,
  bytes   INTEGER NOT NULL
);
CREATE INDEX run_timeline_by_run ON run_timeline (run_id, rank, lane, begin_s);
)SQL";

inline constexpr const char* kMigration8Sql = R"SQL(
-- One row per rank count of a predicted curve. Nothing here is a measurement: the runs table holds only what
-- ran, and every view that reads predictions says so in a source column.
CREATE TABLE predictions (
  id               INTEGER PRIMARY KEY,
  source           TEXT NOT NULL CHECK (source IN ('model', 'simgrid')),  -- dtnn predict | the SimGrid replay
  model_version    TEXT NOT NULL,         -- "dtnn-perfmodel/1"; SimGrid's version for simgrid rows
  model_kind       TEXT NOT NULL CHECK (model_kind IN ('dtnn', 'pydtnn')),  -- step_model.h | PyDTNN's formulas
  model            TEXT NOT NULL,         -- the network (zoo name)
  platform         TEXT NOT NULL,         -- ib100, eth10g, ... ("+fit": the link fitted to benchmarks)
  platform_params  TEXT NOT NULL,         -- JSON: the links' alpha, beta, gamma, ranks per node, their source
  rules            TEXT,                  -- collective decision rules (ompi41 | simgrid); NULL for pydtnn
  mode             TEXT NOT NULL CHECK (mode IN ('blocking', 'non_blocking')),
  scaling          TEXT NOT NULL CHECK (scaling IN ('weak', 'strong')),
  ranks            INTEGER NOT NULL CHECK (ranks > 0),
  batch_size       INTEGER,               -- the profile's samples per rank (NULL: PyDTNN without a profile)
  samples_per_rank REAL NOT NULL,         -- weak: batch_size; strong: global_batch / ranks
  global_batch     REAL NOT NULL,         -- samples per step over all ranks
  step_s           REAL NOT NULL,
  compute_s        REAL NOT NULL,
  exposed_s        REAL NOT NULL,
  comm_s           REAL NOT NULL,
  samples_per_s    REAL NOT NULL,
  speedup          REAL NOT NULL,         -- against the curve's own 1-rank prediction (efficiency x ranks)
  efficiency       REAL NOT NULL,
  algorithms       TEXT NOT NULL,         -- the allreduce algorithms used ("ring+rabenseifner", "pydtnn-vdg")
  provenance       TEXT NOT NULL,         -- JSON: the profile's notes, the measured step beside it, the fit
  -- What groups the row with measured runs (as v_scaling groups them): the calibration run's environment and
  -- configuration; NULL when the profile came from a file.
  environment_id   INTEGER REFERENCES environments(id),
  config_key       TEXT,
  matrix_id        INTEGER REFERENCES matrices(id),  -- the matrix that declared it, else the calibration run's
  trial_key        TEXT,                  -- a matrix's predicted trial (what --resume skips); NULL from dtnn predict
  label            TEXT,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX predictions_by_group ON predictions (environment_id, config_key, ranks);
CREATE INDEX predictions_by_trial ON predictions (matrix_id, environment_id, trial_key);
-- The measured runs a prediction's profile (per-layer times, measured step) came from.
CREATE TABLE prediction_runs (
  prediction_id INTEGER NOT NULL REFERENCES predictions(id) ON DELETE CASCADE,
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  PRIMARY KEY (prediction_id, run_id)
);
-- v_scaling as migration 5 defined it for measured runs (values unchanged), with source = 'measured' and a
-- NULL platform and curve, then the newest prediction per curve and rank count: source 'model' or
-- 'simgrid', its platform, and curve, the label a chart gives the line ("model, ib100, non_blocking").
-- A predicted row's runs is 0 (nothing ran); its speedup and efficiency are against its own 1-rank
-- prediction; framework, dataset, conv_algo, threads and device are its calibration run's.
)SQL";

inline constexpr const char* kMigration9Sql = R"SQL(
-- A run of --model_averaging=synchronous | asynchronous | partially_asynchronous: the report's "averaging"
-- object. Runs without averaging have no row here (their report has no such object).
CREATE TABLE run_averaging (
  run_id         INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  mode           TEXT NOT NULL CHECK (mode IN ('synchronous', 'asynchronous', 'partially_asynchronous')),
  every_epochs   INTEGER NOT NULL,      -- the period in epochs (dislib's n_epocs_sync); 0 when every_steps > 0
  every_steps    INTEGER NOT NULL,      -- > 0: the period in training steps (local SGD); 0: by epochs
  averages       INTEGER NOT NULL,      -- communication rounds: averages (merges, asynchronous) of the run, final one included
  bytes_per_rank REAL NOT NULL,         -- bytes each rank sent into them
  wait_s_rank0   REAL NOT NULL,         -- rank 0's seconds inside them
  wait_s_max     REAL NOT NULL,         -- the largest over the ranks
  merges_per_rank TEXT                  -- asynchronous modes: JSON array of each rank's merges (averages: rank 0's); else NULL
);
-- The report's epochs[].averaging: the epoch's own figures (not cumulative; v_averaging_epochs sums them).
-- An average after the last epoch (finish(): early stopping, local state) is only in run_averaging.
CREATE TABLE epoch_averaging (
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch          INTEGER NOT NULL,      -- 1-based, as epochs.epoch
  averages       INTEGER NOT NULL,
  bytes_per_rank REAL NOT NULL,
  wait_s_rank0   REAL NOT NULL,
  wait_s_max     REAL NOT NULL,         -- the largest over the ranks in this epoch
  PRIMARY KEY (run_id, epoch)
);
-- The runs the averaging study compares: every run with averaging, and every run whose matrix declared
-- model_averaging without averaging (model_averaging = "none"): mode 'gradient' on more than one rank
-- (--parallel=data: a gradient sum every step, one communication round per step, its bytes and exposed wait
-- from epoch_comm) and 'none' on one rank (no communication). straggler: the report's --straggler_ms ("R:MS",
-- '' none). Communication rounds, bytes and waits of a gradient run are sums over its epochs (wait_s_max: of
-- each epoch's slowest rank). train_time_s: the epochs' training time; duration_s: the whole process.
)SQL";

}  // namespace dtnn::schema
