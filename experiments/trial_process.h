// A trial's process for the runner (experiments/runner.cpp): started in a session of its own with its output
// in a log file, waited for with a time limit, and stopped -- with everything it started -- on a timeout or
// when the runner itself is told to stop (SIGINT, SIGTERM, SIGHUP, SIGQUIT).
#pragma once

#include <sys/types.h>

#include <array>
#include <csignal>
#include <functional>
#include <string>
#include <vector>

namespace dtnn {

// SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal or ssh session went away), SIGQUIT: see StopSignals.
constexpr std::array<int, 4> kStopSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The stop signal the runner received while StopSignals was installed (0: none).
int stop_signal();

// While alive, the stop signals only record themselves (stop_signal()): the running trial is stopped and
// marked interrupted, and the runner exits 128 + the signal. The previous handlers come back on every way
// out of the runner (an exception included).
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  std::array<struct sigaction, kStopSignals.size()> old_{};
};

struct ChildResult {
  enum Kind { kExited, kSignalled, kTimeout, kInterrupted } kind = kExited;
  int code = 0;
  std::string timeout_note;  // on_timeout's answer, asked before the kill
};

// Runs argv in a session (and process group) of its own with stdout/stderr appended to log_path,
// $DTNN_RUN_NONCE set to `nonce` and each NAME=VALUE of `env` set. On timeout (after on_timeout() is asked for a note) or a stop signal: SIGTERM
// to the group, then SIGKILL to the whole session after 5 s; when the trial's process ends, its session's
// stragglers get SIGKILL (a wrapper's children in groups of their own, what a killed mpirun started). Throws
// dtnn::Error when the log cannot be created or no process can be forked.
ChildResult run_child(const std::vector<std::string>& argv, const std::string& log_path, const std::string& nonce,
                      double timeout_s, const std::function<std::string()>& on_timeout,
                      const std::vector<std::string>& env = {});

// Sends `sig` to every process of session `sid`.
void kill_session(pid_t sid, int sig);

}  // namespace dtnn
