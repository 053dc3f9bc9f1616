// Where a run's ranks ran and what started them: the scheduler (none or Slurm) with its job and step, the
// nodes in rank order with the ranks on each, and the launcher with its version. Recorded in every run
// report ("placement") and in the results store's runs row, so a scaling point says which nodes it measured.
//
// The node list is what the ranks themselves report (each rank's host name, gathered to rank 0), never what
// was asked for: a layout the launcher did not honour shows as it ran. The launcher is read from the
// environment the launcher gives its ranks:
//   Open MPI's mpirun   OMPI_MCA_orte_launch / OMPI_MCA_orte_hnp_uri      -> "mpirun"
//   Slurm's srun        SLURM_STEP_ID (and no mpirun variables)          -> "srun"
//   neither             one process started directly                     -> "none"
// mpirun inside a Slurm allocation is "mpirun" with the allocation's scheduler fields. The version is
// $DTNN_LAUNCHER_VERSION when the matrix runner set it (it asks `srun --version` / `mpirun --version` once),
// else "" (a hand-started run does not spawn a process to ask).
#pragma once

#include <string>
#include <vector>

namespace dtnn {

// Reads one environment variable; the default reads the process's own (tests pass a map).
using EnvLookup = const char* (*)(const char* name);

struct Placement {
  std::string scheduler = "none";  // none | slurm
  std::string cluster;             // SLURM_CLUSTER_NAME
  std::string job_id, step_id;     // SLURM_JOB_ID, SLURM_STEP_ID ("" outside Slurm)
  std::string node_list;           // the distinct hosts of the ranks, in order of their first rank: "n1,n2"
  std::string tasks_per_node;      // ranks on each of those hosts, same order: "2,2"
  std::string launcher = "none";   // none | mpirun | srun
  std::string launcher_version;    // "" when unknown
};

// `rank_hosts`: each rank's host name, indexed by rank (one entry for a sequential run).
Placement detect_placement(const std::vector<std::string>& rank_hosts, EnvLookup env = nullptr);

// "n1,n2" and "2,2" from the per-rank host names (pure; exposed for tests).
void nodes_and_tasks(const std::vector<std::string>& rank_hosts, std::string& node_list, std::string& tasks_per_node);

}  // namespace dtnn
