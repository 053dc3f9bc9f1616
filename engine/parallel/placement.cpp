// See placement.h.
#include "parallel/placement.h"

#include <cstdlib>
#include <string>

namespace dtnn {

void nodes_and_tasks(const std::vector<std::string>& rank_hosts, std::string& node_list, std::string& tasks_per_node) {
  std::vector<std::string> hosts;
  std::vector<int> counts;
  for (const std::string& h : rank_hosts) {
    size_t i = 0;
    while (i < hosts.size() && hosts[i] != h) ++i;
    if (i == hosts.size()) {
      hosts.push_back(h);
      counts.push_back(0);
    }
    ++counts[i];
  }
  node_list.clear();
  tasks_per_node.clear();
  for (size_t i = 0; i < hosts.size(); ++i) {
    node_list += (i ? "," : "") + hosts[i];
    tasks_per_node += (i ? "," : "") + std::to_string(counts[i]);
  }
}

Placement detect_placement(const std::vector<std::string>& rank_hosts, EnvLookup env) {
  if (!env) env = [](const char* name) -> const char* { return std::getenv(name); };
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? v : "";
  };
  Placement p;
  nodes_and_tasks(rank_hosts, p.node_list, p.tasks_per_node);
  p.job_id = get("SLURM_JOB_ID");
  if (!p.job_id.empty()) {
    p.scheduler = "slurm";
    p.cluster = get("SLURM_CLUSTER_NAME");
    p.step_id = get("SLURM_STEP_ID");
  }
  // mpirun's variables first: mpirun inside an allocation starts its daemons with srun, so its ranks may see
  // a step id too.
  if (!get("OMPI_MCA_orte_launch").empty() || !get("OMPI_MCA_orte_hnp_uri").empty()) p.launcher = "mpirun";
  else if (!get("SLURM_STEP_ID").empty()) p.launcher = "srun";
  // The runner exports its matrix's launcher version to every trial; a 1-rank trial runs without that launcher.
  if (p.launcher != "none") p.launcher_version = get("DTNN_LAUNCHER_VERSION");
  return p;
}

}  // namespace dtnn
