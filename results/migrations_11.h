// Migration 11 of the results store (results/migrations.h lists them all): where each run's ranks ran and what
// started them (engine/parallel/placement.h), from the run report's "placement". Released text is never edited.
#pragma once

namespace dtnn::schema {

// Plain added columns: runs stored before this migration, and runs with no report (failed, timeout,
// unsupported), keep '' -- "not recorded". runner_job_id is the runner's own Slurm job (dtnn run --submit, or a
// runner started inside an allocation): set when the run begins, so a run whose trial never reported still
// says which job ran it.
inline constexpr const char* kMigration11Sql = R"SQL(
ALTER TABLE runs ADD COLUMN scheduler TEXT NOT NULL DEFAULT '';        -- none | slurm
ALTER TABLE runs ADD COLUMN cluster TEXT NOT NULL DEFAULT '';          -- SLURM_CLUSTER_NAME
ALTER TABLE runs ADD COLUMN job_id TEXT NOT NULL DEFAULT '';           -- the trial's Slurm job
ALTER TABLE runs ADD COLUMN step_id TEXT NOT NULL DEFAULT '';          -- its step within that job
ALTER TABLE runs ADD COLUMN node_list TEXT NOT NULL DEFAULT '';        -- the ranks' hosts, in rank order: "n1,n2"
ALTER TABLE runs ADD COLUMN tasks_per_node TEXT NOT NULL DEFAULT '';   -- ranks on each of them: "2,2"
ALTER TABLE runs ADD COLUMN launcher TEXT NOT NULL DEFAULT '';         -- none | mpirun | srun
ALTER TABLE runs ADD COLUMN launcher_version TEXT NOT NULL DEFAULT ''; -- "slurm 22.05.8", "mpirun (Open MPI) 4.1.4"
ALTER TABLE runs ADD COLUMN runner_job_id TEXT NOT NULL DEFAULT '';    -- the runner's SLURM_JOB_ID, if any
)SQL";

}  // namespace dtnn::schema
