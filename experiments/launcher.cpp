// A trial's command line and its ranks' layout. See launcher.h.
#include "experiments/launcher.h"
#include "experiments/source_dir.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/host.h"
#include "core/strings.h"
#include "experiments/runner_predict.h"
#include "train/option_table.h"

namespace dtnn {

namespace {

// Whether the PyTorch reference (analysis/reference/torch_train.py, whose parser is built from the same
// option table) takes this option.
bool torch_takes(const std::string& name) {
  const OptionSpec* o = find_option(name);
  return o && (o->flags & kOptTorch);
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// srun's options for a trial: its ranks, layout and cores, the matrix's launcher args last (they may
// override). `mpi`: the trial's processes are MPI ranks (dtnn), not the PyTorch reference.
std::vector<std::string> srun_argv(const Matrix& matrix, const Trial& trial, bool mpi) {
  const RankLayout l = layout_of(trial);
  std::vector<std::string> argv = {"srun", "-n", std::to_string(l.ranks)};
  // A layout names its node count always: inside a --submit job srun would take the allocation's (sized for the
  // largest trial) from SLURM_NNODES, and spread a ranks_per_node layout over it.
  if (l.given) argv.push_back("--nodes=" + std::to_string(l.nodes));
  if (trial.params.count("ranks_per_node")) argv.push_back("--ntasks-per-node=" + trial.params.at("ranks_per_node"));
  const std::string threads = trial.get("threads", "0");
  if (threads != "0") argv.push_back("--cpus-per-task=" + threads);
  argv.push_back("--job-name=dtnn-" + matrix.name);
  argv.push_back("--kill-on-bad-exit=1");
  const bool names_mpi = std::any_of(matrix.launcher.args.begin(), matrix.launcher.args.end(),
                                     [](const std::string& a) { return a.rfind("--mpi", 0) == 0; });
  if (mpi && !names_mpi) argv.push_back("--mpi=pmix");
  argv.insert(argv.end(), matrix.launcher.args.begin(), matrix.launcher.args.end());
  return argv;
}

}  // namespace

bool is_harness_param(const std::string& name) {
  return name == "ranks" || name == "nodes" || name == "ranks_per_node" || name == "device" || name == "framework" ||
         name == "scaling" || name == "transport" || name == "tracing" || is_prediction_param(name);
}

std::string command_string(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + shell_quote(a);
  return s;
}

RankLayout layout_of(const Trial& trial) {
  RankLayout l;
  l.ranks = trial.ranks();
  const auto n = trial.params.find("nodes"), p = trial.params.find("ranks_per_node");
  l.given = n != trial.params.end() || p != trial.params.end();
  if (n != trial.params.end()) {
    l.nodes = std::stoi(n->second);
    l.slots = p != trial.params.end() ? std::stoi(p->second) : ceil_div(l.ranks, l.nodes);
  } else if (p != trial.params.end()) {
    l.slots = std::stoi(p->second);
    l.nodes = ceil_div(l.ranks, l.slots);
  }
  return l;
}

std::vector<std::string> hostfile_hosts(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, ": is a directory, expected a hostfile (one host per line)");
  std::istringstream f(read_file(path, std::size_t{1} << 24));  // lines of names: 16 MiB is plenty
  std::vector<std::string> hosts;
  std::string line;
  for (int number = 1; std::getline(f, line); ++number) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string host;
    if (!(words >> host)) continue;
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    // Open MPI's slot counts (its other keywords pass through): a bad one failed every trial with mpirun's
    // own message, stored as each run's error.
    for (std::string word; words >> word;) {
      const std::string::size_type eq = word.find('=');
      const std::string key = word.substr(0, eq);
      if (key != "slots" && key != "max_slots" && key != "max-slots") continue;
      const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(value) == 0)
        fail(path, ":", number, ": '", word, "' is not ", key, "=N with N a positive count of slots");
    }
  }
  if (hosts.empty()) fail(path, ": the hostfile lists no host");
  return hosts;
}

void check_trial_layout(const std::string& path, const Matrix& m, const Trial& t) {
  const bool has_nodes = t.params.count("nodes"), has_rpn = t.params.count("ranks_per_node");
  if (!has_nodes && !has_rpn) return;
  const std::string name = t.label.empty() ? t.key : t.label;
  const int ranks = t.ranks();
  const int nodes = has_nodes ? std::stoi(t.params.at("nodes")) : 0;
  const int rpn = has_rpn ? std::stoi(t.params.at("ranks_per_node")) : 0;
  if (t.params.count("ranks")) {
    if (has_nodes && has_rpn && ranks != int64_t{nodes} * rpn)
      fail(path, ": trial ", name, ": ranks = ", ranks, " but nodes x ranks_per_node = ", nodes, " x ", rpn, " = ",
           int64_t{nodes} * rpn);
    if (has_nodes && ranks < nodes)
      fail(path, ": trial ", name, ": ranks = ", ranks, " cannot fill nodes = ", nodes, " (one rank per node at least)");
  }
  if (m.launcher.kind == "none" && (nodes > 1 || ranks > 1))
    fail(path, ": launcher kind 'none' cannot start ", ranks, " ranks on ", std::max(nodes, 1),
         " node(s) (trial ", name, "): use mpirun or srun");
  if (m.launcher.kind == "mpirun" && ranks > 1) {
    const int need = layout_of(t).nodes;
    const size_t have = m.launcher.hostfile.empty() ? 1 : hostfile_hosts(m.launcher.hostfile).size();
    if (static_cast<size_t>(need) > have)
      fail(path, ": trial ", name, ": ", need, " nodes need a [launcher] hostfile listing at least ", need,
           " hosts (", m.launcher.hostfile.empty() ? std::string("none is given")
                                                    : m.launcher.hostfile + " lists " + std::to_string(have), ")");
  }
}

Launch trial_launch(const Matrix& matrix, const Trial& trial, const std::string& dtnn_binary,
                    const std::string& work_dir) {
  Launch launch;
  std::vector<std::string>& argv = launch.argv;
  const std::string framework = trial.framework();
  const int ranks = trial.ranks();
  const bool srun = matrix.launcher.kind == "srun";
  if (framework == "pytorch") {
    if (ranks != 1) launch.unsupported_why = "the PyTorch reference runs on 1 rank";
    if (trial.get("conv_algo", "auto") != "auto")
      launch.unsupported_why = "the PyTorch reference has no --conv_algo (exclude it in the matrix)";
    if (srun) argv = srun_argv(matrix, trial, false);
    // $DTNN_PYTHON: the interpreter with PyTorch (Debian's /usr/bin/python3 here; plain python3 on the GPU machines)
    const char* python = std::getenv("DTNN_PYTHON");
    argv.insert(argv.end(), {python && *python ? python : "/usr/bin/python3",
                             source_dir() + "/analysis/reference/torch_train.py"});
    if (trial.get("device", "cpu") == "gpu") argv.push_back("--enable_gpu=True");
    if (trial.get("tracing", "False") == "True") launch.unsupported_why = "the PyTorch reference has no --tracing";
    for (const auto& [name, value] : trial.params) {
      if (is_harness_param(name) || name == "conv_algo") continue;
      if (!torch_takes(name)) {
        launch.unsupported_why = "the PyTorch reference has no --" + name;
        continue;
      }
      argv.push_back("--" + name + "=" + (is_path_parameter(name) ? resolve_against(matrix.dir, value) : value));
    }
    return launch;
  }
  if (srun) {
    argv = srun_argv(matrix, trial, true);
  } else if (ranks > 1) {
    if (matrix.launcher.kind == "none") fail(matrix.path, ": launcher kind 'none' cannot start ", ranks, " ranks");
    argv = {"mpirun", "-np", std::to_string(ranks)};
    const RankLayout l = layout_of(trial);
    if (l.given) {
      const std::vector<std::string> pool =
          matrix.launcher.hostfile.empty() ? std::vector<std::string>{"localhost"} : hostfile_hosts(matrix.launcher.hostfile);
      if (static_cast<size_t>(l.nodes) > pool.size())
        fail(matrix.path, ": ", l.nodes, " nodes need a hostfile of at least ", l.nodes, " hosts");
      launch.hostfile_path = work_dir + "/hosts-" + std::to_string(l.nodes) + "x" + std::to_string(l.slots) + ".txt";
      for (int i = 0; i < l.nodes; ++i) launch.hostfile_text += pool[static_cast<size_t>(i)] + " slots=" + std::to_string(l.slots) + "\n";
      argv.insert(argv.end(), {"--hostfile", launch.hostfile_path});
    } else if (!matrix.launcher.hostfile.empty()) {
      argv.insert(argv.end(), {"--hostfile", matrix.launcher.hostfile});
    }
    const std::string transport = trial.get("transport", "default");
    if (transport != "default") argv.insert(argv.end(), {"--mca", "btl", transport == "tcp" ? "self,tcp" : "self,vader"});
    argv.insert(argv.end(), {"-x", "DTNN_RUN_NONCE", "-x", "DTNN_LAUNCHER_VERSION"});
    argv.insert(argv.end(), matrix.launcher.args.begin(), matrix.launcher.args.end());
  }
  argv.insert(argv.end(), {dtnn_binary, "train"});
  const bool strong = trial.get("scaling", "weak") == "strong";
  for (const auto& [name, value] : trial.params)
    if (!is_harness_param(name) && !(strong && name == "batch_size"))
      argv.push_back("--" + name + "=" + (is_path_parameter(name) ? resolve_against(matrix.dir, value) : value));
  if (strong) argv.push_back("--global_batch_size=" + trial.get("batch_size", "64"));
  argv.push_back(std::string("--parallel=") + (ranks > 1 ? "data" : "sequential"));
  if (trial.get("device", "cpu") == "gpu") argv.push_back("--enable_gpu=True");
  if (trial.get("tracing", "False") == "True") argv.push_back(kTracingFlag);  // run_trial adds the files
  argv.push_back("--progress=False");
  return launch;
}

std::string self_executable() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "dtnn" : p.string();
}

void write_hostfile(const Launch& launch) {
  if (!launch.hostfile_path.empty()) write_file_atomically(launch.hostfile_path, launch.hostfile_text);
}

std::string launcher_version(const std::string& kind) {
  if (kind == "srun") return capture_command("timeout 5 srun --version 2>/dev/null");
  if (kind == "mpirun") {
    const std::string text = capture_command("timeout 5 mpirun --version 2>/dev/null");
    return text.substr(0, text.find('\n'));
  }
  return "";
}

}  // namespace dtnn
