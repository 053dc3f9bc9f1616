// The matrix runner (`dtnn run`): expands a matrix and runs each trial as a child process,
//   [mpirun -np R ...] dtnn train <options> --report <tmp>.json      (framework dtnn)
//   /usr/bin/python3 analysis/reference/torch_train.py <options> ...   (framework pytorch)
// with the matrix's timeout, stdout and stderr in a per-run log file next to the database
// (<db dir>/logs/<matrix>/<run id>.log). The runner is the only writer of the results store: a run row is
// inserted as 'running' before the child starts and finished in one transaction with the ingested report.
//
// Statuses: ok; failed (non-zero exit, the error line kept); timeout; unsupported (the child exits with
// kUnsupportedExit, or the runner knows beforehand, e.g. a PyTorch trial with 2 ranks); interrupted
// (SIGINT/SIGTERM: the child's process group is stopped, the run is marked, the runner exits 130).
// A runner killed outright leaves a 'running' row; the next runner on this host marks it interrupted.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

struct RunnerOptions {
  std::string matrix_path;
  std::string db_path = "results/dtnn.db";
  bool resume = false;      // skip repeats already stored ok for this matrix and environment
  bool dry_run = false;     // print the expanded trials and their count, run nothing
  std::vector<std::string> only;  // name=value filters
  std::string dtnn_binary;  // the dtnn executable for child runs (default: this process's own)
  std::string git_commit;   // recorded instead of this checkout's commit (when dtnn_binary is another build)
  std::vector<std::string> tags;  // added to the matrix's tags for every run
};

// This machine and build as the store records them (host, CPU, libraries, GPU, git commit, env vars).
StoredEnvironment current_environment();

// Returns the exit code: 0 when every run is ok or unsupported, 1 when any failed or timed out, 130 when
// interrupted. Throws dtnn::Error for a bad matrix, filter or database.
int run_matrix(const RunnerOptions& options, std::ostream& out);

}  // namespace dtnn
