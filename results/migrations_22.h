// Migration 22 of the results store (results/migrations.h lists them all): contention_ceilings, what a machine
// allows ranks that share it. Released text is never edited.
#pragma once

namespace dtnn::schema {

// One row per measurement of experiments/contention_ceiling.sh (stored with `dtnn ingest` of the
// dtnn.contention_ceiling/1 file it writes): on the machine machine_key, `ranks` independent 1-rank copies of
// a recipe reach `ceiling` times one copy alone (their summed samples/s over the alone run's), and the same
// recipe on `ranks` MPI ranks reached data_parallel_samples_per_s. `dtnn predict` reads the newest row of a
// profile's machine and model for a platform of that machine (localhost*): ranks sharing the node compute
// ranks / ceiling slower, and the slowest of them ends its step step_jitter (the copies' step-time standard
// deviation over their mean step, from the wait two copies' aligned steps would impose on each other) times
// E[max of p normals] later (analysis/perfmodel/step_model.h). The ceiling depends on the model (its working set against the shared caches), so
// rows are per model and dataset.
inline constexpr const char* kMigration22Sql = R"SQL(
CREATE TABLE contention_ceilings (
  id                          INTEGER PRIMARY KEY,
  environment_id              INTEGER NOT NULL REFERENCES environments(id),  -- where it was ingested
  machine_key                 TEXT NOT NULL CHECK (machine_key <> ''),       -- MachineIdentity::key() measured
  model                       TEXT NOT NULL,
  dataset                     TEXT NOT NULL,
  ranks                       INTEGER NOT NULL CHECK (ranks >= 2),
  ceiling                     REAL NOT NULL CHECK (ceiling > 0),            -- independent / alone
  alone_samples_per_s         REAL NOT NULL CHECK (alone_samples_per_s > 0),
  independent_samples_per_s   REAL NOT NULL CHECK (independent_samples_per_s > 0),
  data_parallel_samples_per_s REAL,                                         -- NULL: not run
  step_jitter                 REAL CHECK (step_jitter >= 0),               -- NULL: not measured
  rounds                      INTEGER NOT NULL CHECK (rounds >= 1),
  epochs                      INTEGER NOT NULL CHECK (epochs >= 1),
  dtnn_commit                 TEXT NOT NULL DEFAULT '',
  measured_at                 TEXT NOT NULL,                                -- UTC, ISO 8601
  file                        TEXT NOT NULL DEFAULT '',
  UNIQUE (machine_key, model, dataset, ranks, measured_at)
);
)SQL";

}  // namespace dtnn::schema
