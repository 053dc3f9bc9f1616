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
DROP VIEW v_scaling;
CREATE VIEW v_scaling AS
  WITH agg AS (
    SELECT r.environment_id, r.config_key, r.framework, r.model, r.dataset, r.conv_algo, r.threads, r.device, r.ranks,
           avg(r.samples_per_s) AS sps, count(*) AS n, avg(c.exposed_fraction) AS exposed,
           avg(c.compute_ms / c.step_ms) AS compute
    FROM runs r LEFT JOIN v_comm c ON c.run_id = r.id WHERE r.status = 'ok'
    GROUP BY r.environment_id, r.config_key, r.ranks)
  SELECT a.framework, a.model, a.dataset, a.conv_algo, a.threads, a.device, a.ranks, a.n AS runs,
         round(a.sps, 1) AS mean_samples_per_s, round(a.sps / b.sps, 3) AS speedup,
         round(a.sps / b.sps / a.ranks, 3) AS efficiency, a.environment_id, a.config_key,
         round(a.compute, 4) AS compute_fraction, round(a.exposed, 4) AS exposed_comm_fraction
  FROM agg a JOIN agg b ON b.environment_id = a.environment_id AND b.config_key = a.config_key AND b.ranks = 1
  ORDER BY a.config_key, a.ranks;
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
CREATE VIEW v_phases AS
  SELECT p.run_id, r.model, r.ranks, p.rank, p.phase, p.source, sum(p.calls) AS calls,
         round(1e3 * sum(p.total_s), 3) AS total_ms,
         round(1e3 * sum(p.total_s) / NULLIF((SELECT sum(s.calls) FROM run_phases s WHERE s.run_id = p.run_id
                                               AND s.rank = p.rank AND s.phase = 'step'), 0), 3) AS ms_per_step
  FROM run_phases p JOIN runs r ON r.id = p.run_id
  GROUP BY p.run_id, p.rank, p.phase
  ORDER BY p.run_id, p.phase, p.rank;
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
DROP VIEW v_scaling;
CREATE VIEW v_scaling AS
  WITH agg AS (
    SELECT r.environment_id, r.config_key, r.framework, r.model, r.dataset, r.conv_algo, r.threads, r.device, r.ranks,
           avg(r.samples_per_s) AS sps, count(*) AS n, avg(c.exposed_fraction) AS exposed,
           avg(c.compute_ms / c.step_ms) AS compute
    FROM runs r LEFT JOIN v_comm c ON c.run_id = r.id WHERE r.status = 'ok'
    GROUP BY r.environment_id, r.config_key, r.ranks),
  newest AS (
    SELECT max(id) AS id FROM predictions
    GROUP BY environment_id, config_key, source, model_kind, model, platform, rules, mode, scaling, ranks)
  SELECT * FROM (
  SELECT a.framework, a.model, a.dataset, a.conv_algo, a.threads, a.device, a.ranks, a.n AS runs,
         round(a.sps, 1) AS mean_samples_per_s, round(a.sps / b.sps, 3) AS speedup,
         round(a.sps / b.sps / a.ranks, 3) AS efficiency, a.environment_id, a.config_key,
         round(a.compute, 4) AS compute_fraction, round(a.exposed, 4) AS exposed_comm_fraction,
         'measured' AS source, NULL AS platform, NULL AS curve
  FROM agg a JOIN agg b ON b.environment_id = a.environment_id AND b.config_key = a.config_key AND b.ranks = 1
  UNION ALL
  SELECT r.framework, p.model, r.dataset, r.conv_algo, r.threads, r.device, p.ranks, 0 AS runs,
         round(p.samples_per_s, 1), round(p.speedup, 3), round(p.efficiency, 3), p.environment_id, p.config_key,
         round(p.compute_s / p.step_s, 4), round(p.exposed_s / p.step_s, 4), p.source, p.platform,
         p.source || ', ' || p.platform || ', ' || p.mode || CASE p.scaling WHEN 'strong' THEN ', strong' ELSE '' END
           || CASE WHEN p.model_kind = 'pydtnn' THEN ', PyDTNN formulas' WHEN p.source = 'model'
                    AND p.rules != 'ompi41' THEN ', ' || p.rules || ' rules' ELSE '' END
  FROM predictions p JOIN newest n ON n.id = p.id
  LEFT JOIN runs r ON r.id = (SELECT min(run_id) FROM prediction_runs l WHERE l.prediction_id = p.id))
  ORDER BY config_key, source, curve, ranks;
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
)SQL";

}  // namespace dtnn::schema
