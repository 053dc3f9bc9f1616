// Migration 10 of the results store (results/migrations.h lists them all): the machine's identity in
// environments, the recipe of each accuracy target, and benchmarks known by name only (named_benchmarks). Kept in its own header so migrations.h stays
// readable; released text is never edited.
#pragma once

namespace dtnn::schema {

// environments gains the CPU's identity (core/machine.h) and the kernel. They must be part of the row's
// UNIQUE identity -- two machines that differ only there are two environments -- and SQLite cannot change a
// UNIQUE constraint in place, so the table is rebuilt (as migration 4 rebuilt runs; foreign keys are off during
// migrations and checked before the commit). v_throughput, the one view over environments, is dropped and
// recreated as migration 4 defined it, since renaming a table re-parses every view. Rows stored before this
// migration keep '' / -1 / 0: "not recorded", which compare and history treat as an unknown machine.
inline constexpr const char* kMigration10Sql = R"SQL(
CREATE TABLE environments_new (
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
  build_type   TEXT NOT NULL,           -- "Release [the binary's build flags]"
  dtnn_version TEXT NOT NULL,
  git_commit   TEXT NOT NULL,           -- the commit the binary was built from
  git_dirty    INTEGER NOT NULL,        -- its tree had uncommitted changes (untracked files count)
  env_vars     TEXT NOT NULL,           -- JSON object
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  machine_key  TEXT NOT NULL DEFAULT '',  -- MachineIdentity::key(): what compare/history tell machines apart by
  cpu_vendor   TEXT NOT NULL DEFAULT '',
  cpu_family   INTEGER NOT NULL DEFAULT -1,
  cpu_model_number INTEGER NOT NULL DEFAULT -1,
  cpu_stepping INTEGER NOT NULL DEFAULT -1,
  isa          TEXT NOT NULL DEFAULT '',  -- recorded ISA extensions present, space-separated
  logical_cpus INTEGER NOT NULL DEFAULT 0,
  physical_cores INTEGER NOT NULL DEFAULT 0,
  sockets      INTEGER NOT NULL DEFAULT 0,
  l1d_kib      INTEGER NOT NULL DEFAULT 0,
  l2_kib       INTEGER NOT NULL DEFAULT 0,
  l3_kib       INTEGER NOT NULL DEFAULT 0,
  kernel       TEXT NOT NULL DEFAULT '',
  hypervisor   TEXT NOT NULL DEFAULT '',
  UNIQUE (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type, dtnn_version, git_commit,
          git_dirty, env_vars, machine_key, kernel)
);
INSERT INTO environments_new (id, host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,
  dtnn_version, git_commit, git_dirty, env_vars, created_at)
  SELECT id, host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,
  dtnn_version, git_commit, git_dirty, env_vars, created_at FROM environments;
DROP TABLE environments;
ALTER TABLE environments_new RENAME TO environments;
-- A target states its recipe (analysis/targets.h): learning rate, batch size per rank with the rank counts or
-- the global batch, steps per epoch (0: whole epochs). Rows stored before this migration keep 0 / '' for the
-- learning rate, batches and ranks: not stated, matching any run; their steps_per_epoch 0 matches whole-epoch
-- runs only (a run capping its epochs never followed a published recipe). The view matches as `dtnn check` does, reading a run's learning rate
-- and steps per epoch from its report's options (every option, defaults included), else its parameters.
ALTER TABLE targets ADD COLUMN learning_rate REAL NOT NULL DEFAULT 0;
ALTER TABLE targets ADD COLUMN batch_size INTEGER NOT NULL DEFAULT 0;         -- per rank
ALTER TABLE targets ADD COLUMN global_batch_size INTEGER NOT NULL DEFAULT 0;  -- batch_size x ranks
ALTER TABLE targets ADD COLUMN ranks TEXT NOT NULL DEFAULT '';                -- "1,2": rank counts, with batch_size
ALTER TABLE targets ADD COLUMN steps_per_epoch INTEGER NOT NULL DEFAULT 0;
-- Google Benchmark results that are not convolutions or collectives: suites/bench_gemm, suites/bench_layers, and
-- other projects' suites (`dtnn ingest`, experiments/ingest_named.h). Times in ms, NULL for a case skipped
-- with an error; user counters (FLOP/s, bytes/s, ...) as a JSON object of their medians.
CREATE TABLE named_benchmarks (
  id             INTEGER PRIMARY KEY,
  environment_id INTEGER NOT NULL REFERENCES environments(id),
  source         TEXT NOT NULL CHECK (source IN ('bench_gemm', 'bench_layers', 'google_benchmark')),
  file           TEXT NOT NULL,           -- the ingested file
  executable     TEXT NOT NULL,           -- the file's context.executable ('' if unsaid)
  name           TEXT NOT NULL,           -- Google Benchmark's run_name
  threads        INTEGER NOT NULL,
  repetitions    INTEGER NOT NULL,
  iterations     INTEGER,                 -- of a single run; NULL with repetitions
  real_time_ms   REAL,                    -- the median over repetitions (the only run without)
  cpu_time_ms    REAL,
  real_min_ms    REAL,                    -- over repetitions; NULL with a single run or aggregates only
  real_max_ms    REAL,
  real_stddev_ms REAL,                    -- Google Benchmark's stddev aggregate
  items_per_s    REAL,
  bytes_per_s    REAL,
  counters       TEXT NOT NULL,           -- JSON object, e.g. {"FLOP/s": 1.5e10}
  label          TEXT NOT NULL,
  error          TEXT,                    -- error_message of a case skipped with an error
  ingested_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX named_benchmarks_by_name ON named_benchmarks (source, name);
)SQL";

}  // namespace dtnn::schema
