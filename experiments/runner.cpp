// The matrix runner. See runner.h.
#include "experiments/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "backend/gpu.h"
#include "core/error.h"
#include "experiments/matrix.h"
#include "parallel/communicator.h"
#include "results/store.h"
#include "train/output.h"

namespace dtnn {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

// Parameters that are not `dtnn train` options.
bool is_harness_param(const std::string& name) { return name == "ranks" || name == "device" || name == "framework"; }

// The options torch_train.py accepts (analysis/reference/torch_train.py OPTIONS).
const std::vector<std::string>& torch_options() {
  static const std::vector<std::string> names = {
      "model",         "dataset",       "dataset_train_path", "dataset_test_path", "batch_size",
      "num_epochs",    "steps_per_epoch", "optimizer",        "learning_rate",     "momentum",
      "nesterov",      "decay",         "beta1",              "beta2",             "epsilon",
      "validation_split", "test_as_validation", "use_synthetic_data", "seed",     "threads",
      "tensor_format", "pad_to_cifar",  "allow_tf32",   "enable_cudnn_auto_conv_alg", "evaluate_on_test"};
  return names;
}

std::string command_string(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    const bool quote = a.find_first_of(" \t\"'$") != std::string::npos || a.empty();
    s += (s.empty() ? "" : " ") + (quote ? "'" + a + "'" : a);
  }
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The line a failed child left behind: its last "dtnn: ..." / "torch_train: ..." line, else its last
// non-empty line.
std::string error_line(const std::string& log_path) {
  std::ifstream f(log_path);
  std::string line, last, last_tagged;
  while (std::getline(f, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    if (line.rfind("dtnn: ", 0) == 0 || line.rfind("torch_train: ", 0) == 0 || line.find("Error") != std::string::npos)
      last_tagged = line;
  }
  std::string out = last_tagged.empty() ? last : last_tagged;
  if (out.size() > 500) out = out.substr(0, 500) + "...";
  return out;
}

std::string capture_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

StoredEnvironment current_environment() {
  const Environment e = capture_environment(1, 0, mpi_library_version());
  StoredEnvironment s;
  s.host = e.host;
  s.cpu_model = e.cpu_model;
  s.cores = e.cores;
  s.gpu = gpu_device_count() > 0 ? std::to_string(gpu_device_count()) + " CUDA device(s)" : "none";
  s.compiler = e.compiler;
  s.blas = e.blas;
  s.onednn = e.onednn;
  s.mpi = e.mpi.empty() ? "none" : e.mpi;
  s.cuda = e.cuda;
  s.build_type = e.build_type;
  s.dtnn_version = e.dtnn_version;
  const std::string src = DTNN_SOURCE_DIR;
  s.git_commit = capture_command("git -C '" + src + "' rev-parse HEAD 2>/dev/null");
  if (!s.git_commit.empty())
    s.git_dirty = !capture_command("git -C '" + src + "' status --porcelain --untracked-files=no 2>/dev/null").empty();
  nlohmann::json vars = nlohmann::json::object();
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES",
                           "CUDA_VISIBLE_DEVICES", "DNNL_VERBOSE", "NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO",
                           "OMPI_MCA_btl", "OMPI_MCA_pml", "SLURM_JOB_ID"})
    if (const char* v = std::getenv(name)) vars[name] = v;
  s.env_vars = vars.dump();
  return s;
}

namespace {

struct Planned {
  Trial trial;
  int repeat = 0;
};

struct ChildResult {
  enum Kind { kExited, kSignalled, kTimeout, kInterrupted } kind = kExited;
  int code = 0;
};

// Runs argv in its own process group with stdout/stderr appended to log_path. Kills the whole group on
// timeout or on a stop signal (SIGTERM, then SIGKILL after 5 s).
ChildResult run_child(const std::vector<std::string>& argv, const std::string& log_path, double timeout_s) {
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) fail(log_path, ": cannot create the log file");
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    fail("cannot fork a trial process");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a runner killed outright takes its trial with it
    if (::getppid() != parent) ::_exit(127);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (::getuid() == 0) {  // Open MPI refuses root unless told; containers and CI run as root
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "dtnn: cannot execute %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(log_fd);
  const auto start = Clock::now();
  ChildResult result;
  bool killing = false;
  Clock::time_point term_sent;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (!killing) {
        if (WIFEXITED(status)) result = {ChildResult::kExited, WEXITSTATUS(status)};
        else result = {ChildResult::kSignalled, WTERMSIG(status)};
      }
      ::kill(-pid, SIGKILL);  // stragglers of the group (ranks of a dead mpirun)
      return result;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!killing && (g_stop_signal || elapsed > timeout_s)) {
      result.kind = g_stop_signal ? ChildResult::kInterrupted : ChildResult::kTimeout;
      ::kill(-pid, SIGTERM);
      killing = true;
      term_sent = Clock::now();
    }
    if (killing && Clock::now() - term_sent > std::chrono::seconds(5)) ::kill(-pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

std::string self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "dtnn" : p.string();
}

// The command line of one trial (launcher included). `unsupported_why` is set when the runner knows the
// trial cannot run here (e.g. the PyTorch reference with 2 ranks).
std::vector<std::string> trial_argv(const Matrix& matrix, const Trial& trial, const std::string& dtnn_binary,
                                    std::string& unsupported_why) {
  const std::string framework = trial.framework();
  const int ranks = trial.ranks();
  std::vector<std::string> argv;
  if (framework == "pytorch") {
    if (ranks != 1) unsupported_why = "the PyTorch reference runs on 1 rank";
    if (trial.get("conv_algo", "auto") != "auto")
      unsupported_why = "the PyTorch reference has no --conv_algo (exclude it in the matrix)";
    // $DTNN_PYTHON: the interpreter with PyTorch (Debian's /usr/bin/python3 here; plain python3 on the GPU machines)
    const char* python = std::getenv("DTNN_PYTHON");
    argv = {python && *python ? python : "/usr/bin/python3",
            std::string(DTNN_SOURCE_DIR) + "/analysis/reference/torch_train.py"};
    if (trial.get("device", "cpu") == "gpu") argv.push_back("--enable_gpu=True");
    for (const auto& [name, value] : trial.params) {
      if (is_harness_param(name) || name == "conv_algo") continue;
      if (std::find(torch_options().begin(), torch_options().end(), name) == torch_options().end()) {
        unsupported_why = "the PyTorch reference has no --" + name;
        continue;
      }
      argv.push_back("--" + name + "=" + value);
    }
    return argv;
  }
  if (ranks > 1) {
    if (matrix.launcher.kind == "none") fail(matrix.path, ": launcher kind 'none' cannot start ", ranks, " ranks");
    if (matrix.launcher.kind == "srun") {
      argv = {"srun", "-n", std::to_string(ranks)};
    } else {
      argv = {"mpirun", "-np", std::to_string(ranks)};
      if (!matrix.launcher.hostfile.empty()) argv.insert(argv.end(), {"--hostfile", matrix.launcher.hostfile});
    }
    argv.insert(argv.end(), matrix.launcher.args.begin(), matrix.launcher.args.end());
  }
  argv.insert(argv.end(), {dtnn_binary, "train"});
  for (const auto& [name, value] : trial.params)
    if (!is_harness_param(name)) argv.push_back("--" + name + "=" + value);
  argv.push_back(std::string("--parallel=") + (ranks > 1 ? "data" : "sequential"));
  if (trial.get("device", "cpu") == "gpu") argv.push_back("--enable_gpu=True");
  argv.push_back("--progress=False");
  return argv;
}

}  // namespace

int run_matrix(const RunnerOptions& options, std::ostream& out) {
  const Matrix matrix = load_matrix(options.matrix_path);
  const std::vector<Trial> trials = filter_trials(matrix.trials, options.only);
  const std::string dtnn_binary = options.dtnn_binary.empty() ? self_executable() : options.dtnn_binary;
  if (options.dry_run) {
    out << "matrix " << matrix.name << " (" << matrix.path << "): " << trials.size() << " trial(s) x "
        << matrix.repeats << " repeat(s) = " << trials.size() * matrix.repeats << " run(s)\n";
    for (size_t i = 0; i < trials.size(); ++i) {
      std::string why;
      const std::vector<std::string> argv = trial_argv(matrix, trials[i], dtnn_binary, why);
      out << "  " << i + 1 << "  " << trials[i].label << "\n     "
          << (why.empty() ? command_string(argv) : "unsupported: " + why) << "\n";
    }
    return 0;
  }
  if (trials.empty()) fail("no trial of ", matrix.path, " matches the --only filters");

  const fs::path db_path = fs::absolute(options.db_path);
  fs::create_directories(db_path.parent_path());
  ResultStore store = ResultStore::open(db_path.string());
  const int reaped = store.reap_orphaned_runs();
  if (reaped > 0) out << "marked " << reaped << " run(s) of an earlier, killed runner as interrupted\n";
  const int64_t matrix_id = store.add_matrix(matrix.name, matrix.path, matrix.hash, matrix.text);
  StoredEnvironment environment = current_environment();
  if (!options.git_commit.empty()) {  // the trials run another commit's build (ci/perf-regression.sh)
    environment.git_commit = options.git_commit;
    environment.git_dirty = false;
  }
  const int64_t env_id = store.add_environment(environment);
  const fs::path log_dir = db_path.parent_path() / "logs" / matrix.name;
  fs::create_directories(log_dir);
  std::string tags;
  for (const std::string& t : matrix.tags) tags += (tags.empty() ? "" : ",") + t;
  for (const std::string& t : options.tags) tags += (tags.empty() ? "" : ",") + t;

  std::vector<Planned> plan;
  int skipped = 0;
  for (const Trial& t : trials) {
    const int done = options.resume ? std::min(store.count_ok_runs(matrix_id, env_id, t.key), matrix.repeats) : 0;
    skipped += done;
    for (int r = done; r < matrix.repeats; ++r) plan.push_back({t, r});
  }
  out << "matrix " << matrix.name << ": " << trials.size() << " trial(s), " << plan.size() << " run(s) to do";
  if (options.resume) out << ", " << skipped << " already stored ok";
  out << "; database " << db_path.string() << "\n" << std::flush;

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  g_stop_signal = 0;

  const bool tty = ::isatty(STDOUT_FILENO);
  const auto start = Clock::now();
  int n_ok = 0, n_failed = 0, n_timeout = 0, n_unsupported = 0;
  bool interrupted = false;
  for (size_t i = 0; i < plan.size() && !interrupted; ++i) {
    const Trial& trial = plan[i].trial;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double eta = i == 0 ? NAN : elapsed / static_cast<double>(i) * static_cast<double>(plan.size() - i);
    out << (tty ? "\r\033[K" : "") << "[" << i + 1 << "/" << plan.size() << "] " << trial.label << " (repeat "
        << plan[i].repeat + 1 << "/" << matrix.repeats << ")  elapsed " << format_duration(elapsed) << "  ETA "
        << format_duration(eta) << (tty ? "" : "\n") << std::flush;

    std::string unsupported_why;
    std::vector<std::string> argv = trial_argv(matrix, trial, dtnn_binary, unsupported_why);

    RunStart rs;
    rs.matrix_id = matrix_id;
    rs.environment_id = env_id;
    rs.trial_key = trial.key;
    rs.label = trial.label;
    rs.repeat = plan[i].repeat;
    rs.params = trial.params;
    rs.tags = tags;
    {
      std::map<std::string, std::string> config = trial.params;
      config.erase("ranks");
      for (const auto& [name, value] : config) rs.config_key += (rs.config_key.empty() ? "" : ";") + name + "=" + value;
    }
    rs.command = command_string(argv);
    rs.log_path = "(pending)";
    const int64_t run_id = store.begin_run(rs);
    const std::string log_path = (log_dir / (std::to_string(run_id) + ".log")).string();
    const std::string report_path = (log_dir / (std::to_string(run_id) + ".report.json")).string();
    store.set_log_path(run_id, log_path);
    if (!unsupported_why.empty()) {
      store.finish_run(run_id, "unsupported", unsupported_why, 0.0);
      ++n_unsupported;
      continue;
    }
    argv.push_back("--report=" + report_path);
    {
      std::ofstream log(log_path);
      log << "# " << command_string(argv) << "\n";
    }
    const auto t0 = Clock::now();
    const ChildResult child = run_child(argv, log_path, matrix.timeout_s);
    const double duration = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string status, error;
    switch (child.kind) {
      case ChildResult::kInterrupted:
        status = "interrupted";
        error = "stopped by signal " + std::to_string(g_stop_signal);
        interrupted = true;
        break;
      case ChildResult::kTimeout:
        status = "timeout";
        error = "no result after " + format_duration(matrix.timeout_s) + " (timeout_s = " +
                std::to_string(static_cast<long>(matrix.timeout_s)) + ")";
        break;
      case ChildResult::kSignalled:
        status = "failed";
        error = "killed by signal " + std::to_string(child.code) + "; " + error_line(log_path);
        break;
      case ChildResult::kExited:
        if (child.code == kUnsupportedExit) {
          status = "unsupported";
          error = error_line(log_path);
        } else if (child.code != 0) {
          status = "failed";
          error = "exit " + std::to_string(child.code) + ": " + error_line(log_path);
        } else if (!fs::exists(report_path)) {
          status = "failed";
          error = "exit 0 but no report was written";
        } else {
          try {
            store.finish_run_ok(run_id, read_file(report_path), duration);
            status = "ok";
          } catch (const Error& e) {
            status = "failed";
            error = e.what();
          }
        }
        break;
    }
    std::error_code ec;
    fs::remove(report_path, ec);  // the report is stored in the run row
    if (status != "ok") store.finish_run(run_id, status, error, duration);
    if (status == "ok") ++n_ok;
    else if (status == "unsupported") ++n_unsupported;
    else if (status == "timeout") ++n_timeout;
    else if (status == "failed") ++n_failed;
    if (status != "ok" && status != "interrupted")
      out << (tty ? "\r\033[K" : "") << "  run " << run_id << " " << status << ": " << error << "\n" << std::flush;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  out << (tty ? "\r\033[K" : "") << "done in " << format_duration(total) << ": " << n_ok << " ok, " << n_failed
      << " failed, " << n_timeout << " timeout, " << n_unsupported << " unsupported"
      << (interrupted ? ", interrupted" : "") << "\n";
  if (interrupted) return 130;
  return n_failed + n_timeout > 0 ? 1 : 0;
}

}  // namespace dtnn
