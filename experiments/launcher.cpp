// A trial's command line and its ranks' layout. See launcher.h.
#include "experiments/launcher.h"
#include "experiments/source_dir.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/host.h"
#include "core/strings.h"
#include "experiments/runner_predict.h"
#include "train/option_table.h"

namespace dtnn {

namespace {

// Whether the PyTorch reference (experiments/reference/torch_train.py, whose parser is built from the same
// option table) takes this option.
bool torch_takes(const std::string& name) {
  const OptionSpec* o = find_option(name);
  return o && (o->flags & kOptTorch);
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// A TCP port nothing listens on now (the kernel's pick for port 0); another process may take it before the
// ranks bind it, as with any such rendezvous.
int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("cannot open a socket to pick a rendezvous port (", std::strerror(errno), ")");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) fail("cannot pick a rendezvous port (", std::strerror(errno), ")");
  return ntohs(a.sin_port);
}

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
  return argv;  // srun exports the whole environment (OPENBLAS_CORETYPE included) by default
}

}  // namespace

bool is_harness_param(const std::string& name) {
  return name == "ranks" || name == "nodes" || name == "ranks_per_node" || name == "device" || name == "framework" ||
         name == "pydtnn_path" ||
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
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(f, line); ++number) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string host;
    if (!(words >> host)) continue;
    // A host name reaches mpirun's command line (and ssh's): "-oProxyCommand=..." would be an option there.
    if (host.front() == '-' || host.size() > 253 ||
        host.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:[]") != std::string::npos)
      fail(path, ":", number, ": '", host, "' is not a host name (letters, digits, '.', '-', '_', ':' for IPv6; "
           "not starting with '-')");
    if (seen.insert(host).second) hosts.push_back(host);
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

namespace {

// The launcher's part of a trial's command: srun's options, or mpirun's for more than one rank (its layout's
// hostfile, transport and -x for every variable the ranks need), or nothing. `mpi`: the ranks are MPI
// processes (dtnn, PyDTNN), not PyTorch's.
std::vector<std::string> launcher_argv(const Matrix& matrix, const Trial& trial, bool mpi, Launch& launch) {
  const int ranks = trial.ranks();
  if (matrix.launcher.kind == "srun") return srun_argv(matrix, trial, mpi);
  if (ranks == 1) return {};
  if (matrix.launcher.kind == "none") fail(matrix.path, ": launcher kind 'none' cannot start ", ranks, " ranks");
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(ranks)};
  const RankLayout l = layout_of(trial);
  if (l.given) {
    const std::vector<std::string> pool =
        matrix.launcher.hostfile.empty() ? std::vector<std::string>{"localhost"} : hostfile_hosts(matrix.launcher.hostfile);
    if (static_cast<size_t>(l.nodes) > pool.size())
      fail(matrix.path, ": ", l.nodes, " nodes need a hostfile of at least ", l.nodes, " hosts");
    launch.hostfile_path = launch.work_dir + "/hosts-" + std::to_string(l.nodes) + "x" + std::to_string(l.slots) + ".txt";
    for (int i = 0; i < l.nodes; ++i) launch.hostfile_text += pool[static_cast<size_t>(i)] + " slots=" + std::to_string(l.slots) + "\n";
    argv.insert(argv.end(), {"--hostfile", launch.hostfile_path});
  } else if (!matrix.launcher.hostfile.empty()) {
    argv.insert(argv.end(), {"--hostfile", matrix.launcher.hostfile});
  }
  const std::string transport = trial.get("transport", "default");
  if (transport != "default") argv.insert(argv.end(), {"--mca", "btl", transport == "tcp" ? "self,tcp" : "self,vader"});
  argv.insert(argv.end(), {"-x", "DTNN_RUN_NONCE", "-x", "DTNN_LAUNCHER_VERSION"});
  for (const std::string& e : launch.env) argv.insert(argv.end(), {"-x", e.substr(0, e.find('='))});
  argv.insert(argv.end(), matrix.launcher.args.begin(), matrix.launcher.args.end());
  // The OpenBLAS kernels dtnn chose for this machine (backend/cpu/blas_core.h) reach every rank of every
  // framework, on other hosts too: mpirun forwards only what -x names.
  if (std::getenv("OPENBLAS_CORETYPE")) argv.insert(argv.end(), {"-x", "OPENBLAS_CORETYPE"});
  return argv;
}

// The rendezvous of a PyTorch DDP world (experiments/reference/torch_dist.py): a port free on this host now, and
// under mpirun the first host of the ranks (srun: the ranks ask Slurm for the step's first node).
void ddp_rendezvous(const Matrix& matrix, const Trial& trial, Launch& launch) {
  if (trial.ranks() == 1) return;
  if (matrix.launcher.kind != "srun") {
    std::string host = "127.0.0.1";
    if (!matrix.launcher.hostfile.empty()) host = hostfile_hosts(matrix.launcher.hostfile).front();
    if (host == "localhost") host = "127.0.0.1";
    launch.env.push_back("MASTER_ADDR=" + host);
  }
  launch.env.push_back("MASTER_PORT=" + std::to_string(free_tcp_port()));
}

// A peer's options: the trial's `dtnn train` options (paths resolved against the matrix), with strong
// scaling's batch as --global_batch_size; conv_algo = auto is every peer's own choice and left out.
void peer_options(const Matrix& matrix, const Trial& trial, std::vector<std::string>& argv) {
  const bool strong = trial.get("scaling", "weak") == "strong";
  for (const auto& [name, value] : trial.params) {
    if (is_harness_param(name) || (name == "conv_algo" && value == "auto") || (strong && name == "batch_size")) continue;
    argv.push_back("--" + name + "=" + (is_path_parameter(name) ? resolve_against(matrix.dir, value) : value));
  }
  if (strong) argv.push_back("--global_batch_size=" + trial.get("batch_size", "64"));
  if (trial.get("device", "cpu") == "gpu") argv.push_back("--enable_gpu=True");
}

std::string python_interpreter() {
  // $DTNN_PYTHON: the interpreter with PyTorch / numpy (Debian's /usr/bin/python3 here; plain python3 on the
  // GPU machines)
  const char* python = std::getenv("DTNN_PYTHON");
  return python && *python ? python : "/usr/bin/python3";
}

Launch pytorch_launch(const Matrix& matrix, const Trial& trial, Launch launch) {
  if (trial.get("conv_algo", "auto") != "auto")
    launch.unsupported_why = "the PyTorch reference has no --conv_algo (exclude it in the matrix)";
  if (trial.get("tracing", "False") == "True") launch.unsupported_why = "the PyTorch reference has no --tracing";
  for (const auto& [name, value] : trial.params)
    if (!is_harness_param(name) && name != "conv_algo" && !torch_takes(name))
      launch.unsupported_why = "the PyTorch reference has no --" + name;
  ddp_rendezvous(matrix, trial, launch);
  launch.argv = launcher_argv(matrix, trial, false, launch);
  launch.argv.insert(launch.argv.end(), {python_interpreter(), source_dir() + "/experiments/reference/torch_train.py"});
  peer_options(matrix, trial, launch.argv);
  return launch;
}

Launch pydtnn_launch(const Matrix& matrix, const Trial& trial, Launch launch) {
  const char* from_env = std::getenv("DTNN_PYDTNN");
  const std::string path = trial.params.count("pydtnn_path") ? resolve_against(matrix.dir, trial.params.at("pydtnn_path"))
                                                            : from_env ? from_env : "";
  if (path.empty())
    launch.unsupported_why = "no PyDTNN named: set DTNN_PYDTNN or the matrix's pydtnn_path to a checkout built by "
                             "ci/setup_pydtnn.sh";
  if (trial.get("tracing", "False") == "True") launch.unsupported_why = "the runner traces dtnn's trials only";
  if (!path.empty()) launch.env.push_back("DTNN_PYDTNN=" + path);
  launch.argv = launcher_argv(matrix, trial, true, launch);
  launch.argv.insert(launch.argv.end(), {python_interpreter(), source_dir() + "/experiments/peers/pydtnn_peer.py"});
  peer_options(matrix, trial, launch.argv);
  if (trial.ranks() > 1) launch.argv.push_back("--parallel=data");
  return launch;
}

}  // namespace

Launch trial_launch(const Matrix& matrix, const Trial& trial, const std::string& dtnn_binary,
                    const std::string& work_dir) {
  Launch launch;
  launch.work_dir = work_dir;
  const std::string framework = trial.framework();
  if (framework == "pytorch") return pytorch_launch(matrix, trial, launch);
  if (framework == "pydtnn") return pydtnn_launch(matrix, trial, launch);
  std::vector<std::string>& argv = launch.argv;
  const int ranks = trial.ranks();
  argv = launcher_argv(matrix, trial, true, launch);
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
