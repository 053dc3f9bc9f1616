// See trial_process.h.
#include "experiments/trial_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace dtnn {

namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

}  // namespace

int stop_signal() { return g_stop_signal; }

StopSignals::StopSignals() {
  g_stop_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &sa, &old_[i]);
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
}

// Sends `sig` to every process of session `sid` (/proc/PID/stat's 6th field). A trial runs in a session of its
// own, and its process group is not all of it: a wrapper's `timeout` (GNU timeout calls setpgid) moves to a
// group of its own, and so does each rank under mpirun (Open MPI 4.1). Ranks that initialised MPI end within
// about a second of losing their mpirun (measured: PMIx), but processes that did not (a dtnn without
// --parallel=data under mpirun, a wrapper's children) trained on to the end when their launcher was killed
// outright. They stay in the session.
void kill_session(pid_t sid, int sig) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(entry.path() / "stat");
    std::string stat;
    std::getline(f, stat);
    const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    if (rest >> state >> ppid >> pgrp >> session && session == sid) ::kill(static_cast<pid_t>(std::stol(name)), sig);
  }
}

ChildResult run_child(const std::vector<std::string>& argv, const std::string& log_path, const std::string& nonce,
                      double timeout_s, const std::function<std::string()>& on_timeout,
                      const std::vector<std::string>& env) {
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) fail(log_path, ": cannot create the log file (", std::strerror(errno), ")");
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();
  // The child starts with the runner's stop handlers until it execs: a SIGTERM from the runner in that
  // window would only set the child's copy of the flag. Blocked across fork, reset to the default in the
  // child, then unblocked: such a signal ends the child at once.
  sigset_t stop_set, old_mask;
  sigemptyset(&stop_set);
  for (const int sig : kStopSignals) sigaddset(&stop_set, sig);
  ::sigprocmask(SIG_BLOCK, &stop_set, &old_mask);
  const pid_t pid = ::fork();
  if (pid != 0) ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (pid < 0) {
    const int err = errno;
    ::close(log_fd);
    fail("cannot fork a trial process (", std::strerror(err), ")");
  }
  if (pid == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (const int sig : kStopSignals) ::sigaction(sig, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::setsid();  // a session and process group of its own (kill_session)
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
    ::setenv("DTNN_RUN_NONCE", nonce.c_str(), 1);  // mpirun and srun pass it on to the ranks they start here
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));  // the child's own copy: it execs next
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "dtnn: cannot execute %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  // No setpgid(pid, pid) here: it would make the child a group leader, which setsid() refuses. Until the
  // child's setsid() a kill(-pid) finds no group; the SIGKILL below repeats until the trial has ended.
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
        if (WIFEXITED(status)) result.kind = ChildResult::kExited, result.code = WEXITSTATUS(status);
        else result.kind = ChildResult::kSignalled, result.code = WTERMSIG(status);
      }
      // Stragglers of the trial's session: a wrapper's children in groups of their own, processes of a
      // mpirun killed outright.
      ::kill(-pid, SIGKILL);
      kill_session(pid, SIGKILL);
      return result;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!killing && (g_stop_signal || elapsed > timeout_s)) {
      result.kind = g_stop_signal ? ChildResult::kInterrupted : ChildResult::kTimeout;
      if (!g_stop_signal && on_timeout) result.timeout_note = on_timeout();  // while the child still waits
      ::kill(-pid, SIGTERM);
      killing = true;
      term_sent = Clock::now();
    }
    if (killing && Clock::now() - term_sent > std::chrono::seconds(5)) {
      ::kill(-pid, SIGKILL);
      kill_session(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace dtnn
