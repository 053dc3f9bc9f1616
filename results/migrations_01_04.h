// Migrations 1-4 of the results store (results/migrations.h lists them all, with their descriptions).
// Released text is never edited: moved here verbatim from migrations.h, which had reached 600 lines.
#pragma once

namespace dtnn::schema {

inline constexpr const char* kMigration1Sql = R"SQL(
CREATE TABLE matrices (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  file       TEXT NOT NULL,
  hash       TEXT NOT NULL,             -- SHA-256 of text
  text       TEXT NOT NULL,             -- the whole matrix file
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  UNIQUE (name, hash)
);
CREATE TABLE environments (
  id           INTEGER PRIMARY KEY,
  host         TEXT NOT NULL,
  cpu_model    TEXT NOT NULL,
  cores        INTEGER NOT NULL,
  gpu          TEXT NOT NULL,
  compiler     TEXT NOT NULL,
  blas         TEXT NOT NULL,
  onednn       TEXT NOT NULL,
  mpi          TEXT NOT NULL,
  cuda         TEXT NOT NULL,           -- CUDA runtime, cuDNN and NCCL versions, device count
  build_type   TEXT NOT NULL,
  dtnn_version TEXT NOT NULL,
  git_commit   TEXT NOT NULL,
  git_dirty    INTEGER NOT NULL,
  env_vars     TEXT NOT NULL,           -- JSON object
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  UNIQUE (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type, dtnn_version, git_commit,
          git_dirty, env_vars)
);
CREATE TABLE runs (
  id             INTEGER PRIMARY KEY,
  matrix_id      INTEGER NOT NULL REFERENCES matrices(id),
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  trial_key      TEXT NOT NULL,         -- every parameter, sorted: the identity compare and --resume use
  config_key     TEXT NOT NULL,         -- trial_key without ranks: the scaling group
  label          TEXT NOT NULL,         -- the axis values only
  repeat         INTEGER NOT NULL,
  framework      TEXT NOT NULL,
  model          TEXT NOT NULL,
  dataset        TEXT NOT NULL,         -- dataset label: fashion-mnist, mnist-10k, synthetic-mnist, ...
  conv_algo      TEXT NOT NULL,
  ranks          INTEGER NOT NULL,
  threads        INTEGER NOT NULL,
  device         TEXT NOT NULL,
  batch_size     INTEGER NOT NULL,
  num_epochs     INTEGER NOT NULL,
  optimizer      TEXT NOT NULL,
  params         TEXT NOT NULL,         -- JSON object of every parameter
  status         TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'timeout', 'interrupted',
                                                 'unsupported')),
  error          TEXT,
  command        TEXT NOT NULL,
  log_path       TEXT NOT NULL,
  runner_pid     INTEGER NOT NULL,
  runner_host    TEXT NOT NULL,
  started_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at    TEXT,
  duration_s     REAL,                  -- wall time of the whole process
  samples_per_s  REAL,                  -- training throughput (all ranks)
  train_time_s   REAL,
  train_samples  INTEGER,
  test_loss      REAL,
  test_accuracy  REAL,                  -- percent
  val_accuracy   REAL,                  -- last epoch, percent
  report         TEXT                   -- the run report as written by the trial
);
CREATE INDEX runs_by_trial ON runs (trial_key, status);
CREATE INDEX runs_by_matrix ON runs (matrix_id, environment_id);
CREATE TABLE epochs (
  run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch          INTEGER NOT NULL,      -- 1-based
  samples        INTEGER NOT NULL,
  time_s         REAL NOT NULL,
  samples_per_s  REAL NOT NULL,
  lr             REAL,
  train_loss     REAL,
  train_accuracy REAL,
  val_loss       REAL,
  val_accuracy   REAL,
  metrics        TEXT NOT NULL,         -- JSON: {"train": {...}, "val": {...}} with every metric
  PRIMARY KEY (run_id, epoch)
);
CREATE TABLE layer_timings (
  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  layer_id     INTEGER NOT NULL,
  type         TEXT NOT NULL,
  conv_algo    TEXT,
  problem      TEXT,                    -- canonical conv problem string for Conv2D layers
  output_shape TEXT,
  params       INTEGER,
  forward_ms   REAL,                    -- per training batch
  backward_ms  REAL,
  PRIMARY KEY (run_id, layer_id)
);
)SQL";

inline constexpr const char* kMigration2Sql = R"SQL(
ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '';
CREATE TABLE targets (
  id         INTEGER PRIMARY KEY,
  model      TEXT NOT NULL,
  dataset    TEXT NOT NULL,
  metric     TEXT NOT NULL CHECK (metric IN ('test_accuracy', 'val_accuracy')),
  target     REAL NOT NULL,             -- percent
  tolerance  REAL NOT NULL,             -- pass when value >= target - tolerance
  num_epochs INTEGER NOT NULL,          -- the recipe's epochs; 0 matches any
  optimizer  TEXT NOT NULL,             -- '' matches any
  recipe     TEXT NOT NULL,
  source     TEXT NOT NULL
);
)SQL";

inline constexpr const char* kMigration3Sql = R"SQL(
CREATE TABLE conv_benchmarks (
  id             INTEGER PRIMARY KEY,
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  source         TEXT NOT NULL CHECK (source IN ('bench_conv', 'dtnn_layers')),
  file           TEXT NOT NULL,           -- the ingested file
  model          TEXT NOT NULL,           -- dtnn layers: the model; bench_conv: ''
  layer          INTEGER,                 -- dtnn layers: first conv layer (1-based) with this problem
  problem        TEXT NOT NULL,           -- canonical conv problem string
  algorithm      TEXT NOT NULL,           -- cpu.convgemm, gpu.cudnn.fft, gpu.cudnn_find, ...
  direction      TEXT NOT NULL CHECK (direction IN ('fwd', 'bwd_data', 'bwd_filter')),
  device         TEXT NOT NULL CHECK (device IN ('cpu', 'gpu')),
  threads        INTEGER NOT NULL,        -- CPU threads (0 on the GPU)
  tf32           INTEGER NOT NULL,        -- GPU math mode
  median_ms      REAL,                    -- NULL when the algorithm declined the problem
  min_ms         REAL,
  max_ms         REAL,
  gflops         REAL,                    -- direct-convolution FLOPs / median
  declined       TEXT,                    -- the algorithm's reason
  ingested_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX conv_benchmarks_by_problem ON conv_benchmarks (problem, direction, device, threads);
)SQL";

inline constexpr const char* kMigration4Sql = R"SQL(
-- SQLite cannot change a CHECK in place: the table is rebuilt (https://www.sqlite.org/lang_altertable.html,
-- "Making Other Kinds Of Table Schema Changes"; the store turns foreign keys off around migrations and runs
-- foreign_key_check before committing, so epochs and layer_timings keep their rows). The indexes are
-- recreated. Columns keep their order (tags last, where migration 2 added it).
CREATE TABLE runs_new (
  id             INTEGER PRIMARY KEY,
  matrix_id      INTEGER NOT NULL REFERENCES matrices(id),
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  trial_key      TEXT NOT NULL,         -- every parameter, sorted: the identity compare and --resume use
  config_key     TEXT NOT NULL,         -- trial_key without ranks: the scaling group
  label          TEXT NOT NULL,         -- the axis values only
  repeat         INTEGER NOT NULL,
  framework      TEXT NOT NULL,
  model          TEXT NOT NULL,
  dataset        TEXT NOT NULL,         -- dataset label: fashion-mnist, mnist-10k, synthetic-mnist, ...
  conv_algo      TEXT NOT NULL,
  ranks          INTEGER NOT NULL,
  threads        INTEGER NOT NULL,
  device         TEXT NOT NULL,
  batch_size     INTEGER NOT NULL,
  num_epochs     INTEGER NOT NULL,
  optimizer      TEXT NOT NULL,
  params         TEXT NOT NULL,         -- JSON object of every parameter
  status         TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'timeout', 'interrupted',
                                                 'unsupported', 'diverged')),
  error          TEXT,
  command        TEXT NOT NULL,
  log_path       TEXT NOT NULL,
  runner_pid     INTEGER NOT NULL,
  runner_host    TEXT NOT NULL,
  started_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at    TEXT,
  duration_s     REAL,                  -- wall time of the whole process
  samples_per_s  REAL,                  -- training throughput (all ranks)
  train_time_s   REAL,
  train_samples  INTEGER,
  test_loss      REAL,
  test_accuracy  REAL,                  -- percent
  val_accuracy   REAL,                  -- last epoch, percent
  report         TEXT,                  -- the run report as written by the trial
  tags           TEXT NOT NULL DEFAULT ''
);
INSERT INTO runs_new (id, matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model, dataset,
  conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, error, command, log_path, runner_pid,
  runner_host, started_at, finished_at, duration_s, samples_per_s, train_time_s, train_samples, test_loss,
  test_accuracy, val_accuracy, report, tags)
  SELECT id, matrix_id, environment_id, trial_key, config_key, label, repeat, framework, model, dataset,
  conv_algo, ranks, threads, device, batch_size, num_epochs, optimizer, params, status, error, command, log_path, runner_pid,
  runner_host, started_at, finished_at, duration_s, samples_per_s, train_time_s, train_samples, test_loss,
  test_accuracy, val_accuracy, report, tags
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_new RENAME TO runs;
CREATE INDEX runs_by_trial ON runs (trial_key, status);
CREATE INDEX runs_by_matrix ON runs (matrix_id, environment_id);
)SQL";

}  // namespace dtnn::schema
