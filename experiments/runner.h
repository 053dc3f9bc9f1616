// The matrix runner (`dtnn run`): expands a matrix and runs each trial as a child process,
//   [mpirun -np R ...] dtnn train <options> --report <tmp>.json      (framework dtnn)
//   [mpirun -np R ...] /usr/bin/python3 experiments/reference/torch_train.py <options> ...   (framework pytorch)
//   [mpirun -np R ...] /usr/bin/python3 experiments/peers/pydtnn_peer.py <options> ...    (framework pydtnn)
// with the matrix's timeout, stdout and stderr in a per-run log file next to the database,
// <db dir>/logs/<db file stem>-<hash of its path>/<matrix>/<run id>-<nonce>.log (runs.log_path): databases in
// one directory each count run ids from 1, and every attempt gets a fresh random nonce. The runner is the only
// writer of runs: a run row is inserted as 'running' before the child starts and finished in one transaction
// with the ingested report.
//
// Reports: the child writes <run id>-<nonce>.report.json next to its log, with $DTNN_RUN_NONCE copied into it
// ("run_nonce"). Nothing may be at that path when the child starts; after an exit 0 the report is ingested
// only when written after the run began and naming this nonce (one without "run_nonce", from a dtnn build
// older than the nonce, is taken on its path and time), else the run fails "exit 0 but its report was
// refused: <why>". The runner deletes the reports of the runs it reaps, and under this database's log folder
// any report more than a minute old whose run is not running (ranks of a killed mpirun can write late).
//
// Statuses: ok; diverged (the child exits with kDivergedExit, its training loss NaN or infinite: its report is
// stored as an ok run's, so the epochs up to the divergence are kept, with the child's "dtnn: diverged" line as
// the error; no throughput or accuracy is stored for it); failed (non-zero exit, the error line kept; killed by a signal, with the child's last line
// only when it is a complete "dtnn: "/"torch_train: " line; or the runner could not run it, e.g. no log
// file: "runner: <why>", and the runner goes on with the next trial); timeout; unsupported (the child exits
// with kUnsupportedExit, or the runner knows beforehand, e.g. a PyDTNN trial with no PyDTNN named); interrupted
// (SIGINT, SIGTERM, SIGHUP or SIGQUIT: the child's process group is stopped, the run is marked, the runner
// exits 128 + the signal). Slurm's verdicts (experiments/slurm.h): a step or job Slurm cancelled is interrupted,
// one it stopped at its time limit timeout, each with Slurm's line, and the runner goes on; a trial still
// queued when timeout_s ends is timeout with squeue's state and reason. An exit 0 whose report counts another
// number of ranks than the trial's (separate MPI worlds) is failed. A runner killed outright leaves a 'running' row; the next runner on this host
// marks it interrupted, and `dtnn query runs` shows it as 'running (runner gone)' meanwhile.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

struct RunnerOptions {
  std::string matrix_path;
  std::string db_path = "results/dtnn.db";
  bool resume = false;      // skip repeats already stored ok or diverged for this matrix and environment
  bool dry_run = false;     // print the expanded trials and their count, run nothing
  std::vector<std::string> only;  // name=value filters
  std::string dtnn_binary;  // the dtnn executable for child runs (default: this process's own)
  std::string git_commit;   // recorded instead of this checkout's commit (when dtnn_binary is another build)
  std::vector<std::string> tags;  // added to the matrix's tags for every run
};

// This machine and build as the store records them (host, CPU, libraries, GPU, git commit, env vars).
StoredEnvironment current_environment();

// Another dtnn build's provenance, as its `--version` line states it ("dtnn V (commit SHA[+dirty]; FLAGS)"):
// commit "unknown" (and no flags) when the line has none (an older build), never a guess from a source tree.
struct BuildProvenance {
  std::string commit = "unknown";
  bool dirty = false;
  std::string flags;
};
BuildProvenance parse_version_line(const std::string& line);
BuildProvenance binary_provenance(const std::string& binary);  // runs `binary --version` (5 s at most)

// Returns the exit code: 0 when every run is ok or unsupported, 1 when any failed, diverged or timed out, 128 + the
// signal when stopped by one. Throws dtnn::Error for a bad matrix, filter or database path (empty, under a
// file, not a regular file).
int run_matrix(const RunnerOptions& options, std::ostream& out);

}  // namespace dtnn
