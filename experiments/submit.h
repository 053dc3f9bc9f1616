// `dtnn run X.toml --submit [--sbatch-args "..."]`: a whole matrix as one Slurm batch job. The submitting
// command reads the matrix (a bad one fails here, not in the queue), writes a batch script and calls sbatch;
// it never opens the database. The job runs `dtnn run` with the same options (absolute paths), so that runner
// is the database's only writer, and its trials start with the matrix's launcher inside the job's allocation
// (srun steps, or an mpirun that reads the allocation).
//
// The allocation fits the largest trial: --ntasks = the most ranks, --nodes = the most nodes a trial names
// (none when no trial names any), --exclusive (a benchmark wants its nodes to itself: nothing else shares
// their cores or memory bandwidth). --sbatch-args come after those on sbatch's command line and override
// them (a partition, a time limit, an account: "--partition=gpu --time=2:00:00"; split at spaces, no quoting).
// The script is <db log dir>/<matrix>/sbatch-<UTC time>.sh and the job's output sbatch-<job id>.out beside it.
// A job that is cancelled or runs out of time leaves its running trial interrupted (or, when the runner is
// killed before it can say so, 'running' until the next runner on that host reaps it); `dtnn run X.toml
// --resume` (with --submit or not) runs what is missing.
#pragma once

#include <iosfwd>
#include <string>

#include "experiments/runner.h"

namespace dtnn {

// Returns sbatch's exit status (0: submitted; with --sbatch-args=--wait, the job's own). Throws dtnn::Error
// for a bad matrix or filter, or when sbatch cannot be run.
int submit_matrix(const RunnerOptions& options, const std::string& targets_path, const std::string& sbatch_args,
                  std::ostream& out);

// The batch script for these options (pure; exposed for tests). `runner`: the dtnn binary the job runs. No path
// stands in a comment or directive (the output file is sbatch's --output argument, submit_matrix).
std::string batch_script(const RunnerOptions& options, const std::string& targets_path, const std::string& runner);

}  // namespace dtnn
