// How a trial's processes start: the command line the runner executes for a trial (experiments/runner.h),
// launcher included, and the layout of its ranks on nodes.
//
//   launcher kind  ranks = 1                      ranks > 1
//   mpirun         dtnn train ... (no launcher)   mpirun -np R [--hostfile F] [--mca btl ...] -x ... dtnn train ...
//   srun           srun -n 1 ... dtnn train ...   srun -n R [-N n] [--ntasks-per-node p] [-c t] --mpi=pmix ...
//   none           dtnn train ...                 refused when the matrix is loaded
//
// The peers start the same way, in place of `dtnn train`: framework pytorch runs
// experiments/reference/torch_train.py (ranks > 1: one PyTorch DDP world, its rendezvous in MASTER_ADDR, under
// mpirun, and MASTER_PORT, a port free when the command is made; srun gets no --mpi=pmix for it), framework
// pydtnn runs experiments/peers/pydtnn_peer.py with DTNN_PYDTNN set (the trial's pydtnn_path, else the
// runner's own $DTNN_PYDTNN; neither: unsupported) and --parallel=data at ranks > 1. Both take the trial's
// options under dtnn's names and strong scaling's batch as --global_batch_size, and refuse what they lack
// (exit 3: unsupported).
//
// RankLayout (matrix parameters nodes and ranks_per_node, either or both; ranks is their product when not given):
//   srun    -N nodes and --ntasks-per-node ranks_per_node, as given; Slurm places the ranks.
//   mpirun  a hostfile written per layout in the run's log directory, hosts-<n>x<p>.txt: the first n hosts
//           of the matrix's [launcher] hostfile (one per line, first word; `localhost` when there is none and n
//           is 1), each `slots=p`; Open MPI fills them in order, so each node gets p ranks.
// A trial without nodes and ranks_per_node keeps the launcher's own placement (the hostfile as given).
//
// srun gets --mpi=pmix unless the matrix's launcher args name --mpi (Open MPI 4 ranks started by srun find
// each other through PMIx; without it each would be a world of one, which the runner catches by the rank
// count the report states), --kill-on-bad-exit=1 (a rank that dies takes the step with it instead of leaving
// the others in a collective), a job name dtnn-<matrix>, and -c <threads> when the trial sets threads (Slurm
// then gives each rank that many cores; otherwise dtnn train's threads default to the cores a rank gets).
// Every srun trial, the PyTorch reference's included, runs as a Slurm step, so it runs where the allocation is.
// mpirun gets -x for $DTNN_RUN_NONCE and $DTNN_LAUNCHER_VERSION, so ranks on other hosts see them too.
#pragma once

#include <string>
#include <vector>

#include "experiments/matrix.h"

namespace dtnn {

struct RankLayout {
  int ranks = 1;
  int nodes = 1;   // the hosts the ranks span (1 when the trial does not say)
  int slots = 0;   // ranks per host; 0: the launcher decides (no nodes / ranks_per_node given)
  bool given = false;  // the trial sets nodes or ranks_per_node
};
RankLayout layout_of(const Trial& trial);
// When the matrix loads (`path` names it in messages): a trial's nodes, ranks_per_node and ranks agree, and
// its launcher can place them (kind "none" starts one rank; an mpirun hostfile lists enough hosts). Throws
// dtnn::Error "<path>: trial <name>: ...".
void check_trial_layout(const std::string& path, const Matrix& m, const Trial& t);

// The hosts of an Open MPI hostfile, in order, each once (the first word of each line; blank lines and
// '#' comments skipped). Throws dtnn::Error "<path>: cannot read the file (...)", "...: lists no host", or
// "<path>:<line>: 'slots=x' is not slots=N ..." (also max_slots, max-slots; other keywords are not checked).
std::vector<std::string> hostfile_hosts(const std::string& path);

struct Launch {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // NAME=VALUE set for the trial's process (mpirun passes each on with -x)
  std::string work_dir;          // where a generated hostfile goes
  std::string unsupported_why;   // set when the runner knows the trial cannot run here (no PyDTNN named)
  std::string hostfile_path;    // mpirun with a layout: the generated hostfile, written by write_hostfile
  std::string hostfile_text;
};

// `work_dir`: where a generated hostfile goes (the matrix's log directory).
Launch trial_launch(const Matrix& matrix, const Trial& trial, const std::string& dtnn_binary, const std::string& work_dir);

// Writes launch.hostfile_path when it is set (atomically); throws dtnn::Error when it cannot.
void write_hostfile(const Launch& launch);

// "slurm 22.05.8" (srun --version), "mpirun (Open MPI) 4.1.4" (the first line of mpirun --version), "" for none
// or when the launcher does not answer within 5 s.
std::string launcher_version(const std::string& kind);

// The command as a POSIX shell reads it back (every argument that is not plainly safe single-quoted).
std::string command_string(const std::vector<std::string>& argv);

// This process's executable (/proc/self/exe), "dtnn" when it cannot be read: the default trial binary and the
// runner a submitted job runs.
std::string self_executable();

// Matrix parameters that are not `dtnn train` options (ranks, nodes, device, framework, ...).
bool is_harness_param(const std::string& name);

inline constexpr const char* kTracingFlag = "--tracing=True";

}  // namespace dtnn
