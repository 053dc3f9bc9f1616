// Reading Slurm's words about a trial. See slurm.h.
#include "experiments/slurm.h"

#include <cctype>
#include <chrono>
#include <sstream>
#include <thread>

#include "core/host.h"
#include "core/strings.h"

namespace dtnn {

namespace {
// The value of `key=` in one line of `scontrol -o` output (fields are separated by spaces).
std::string field_of(const std::string& line, const std::string& key) {
  const std::string want = key + "=";
  size_t at = 0;
  while ((at = line.find(want, at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      const size_t begin = at + want.size();
      const size_t end = line.find(' ', begin);
      return line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    }
    at += want.size();
  }
  return "";
}
bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// srun's line for a task that ended on its own with a non-zero code: "srun: error: vm: task 0: Exited with exit
// code 1", "srun: error: vm: tasks 0-1: Exited with exit code 1" (a task killed by a signal says "Terminated",
// "Killed", ...: not this line).
bool task_failed_line(const std::string& line) {
  if (line.rfind("srun: error: ", 0) != 0 || line.find(": task") == std::string::npos) return false;
  const std::string exited = "Exited with exit code ";
  const size_t at = line.find(exited);
  if (at == std::string::npos) return false;
  const std::string code = line.substr(at + exited.size());
  return all_digits(code) && code != "0";
}
}  // namespace

SlurmEnd slurm_cancellation(const std::string& log_text) {
  std::istringstream lines(log_text);
  std::string line, found;
  bool task_failed_first = false, aborted = false;
  while (std::getline(lines, line)) {
    // A task that failed before any cancellation: srun's --kill-on-bad-exit then terminates the step, and
    // slurmstepd says CANCELLED of the tasks still running. The trial failed; Slurm did not interrupt it.
    // srun says "Job step aborted" when slurmctld tells it of a cancellation (scancel, a time limit), which
    // kill-on-bad-exit never does: after it, a task's exit is the cancellation's doing.
    if (line.rfind("srun: Job step aborted", 0) == 0) aborted = true;
    if (found.empty() && !aborted && task_failed_line(line)) task_failed_first = true;
    // A rank that failed after MPI started calls MPI_Abort: under srun --mpi=pmix that aborts the step, and srun
    // and slurmstepd then say "Job step aborted" and CANCELLED as for an scancel. Open MPI's own message
    // comes first: the trial failed; nobody interrupted it.
    if (found.empty() && !aborted && line.find("MPI_ABORT was invoked") != std::string::npos) task_failed_first = true;
    const size_t open = line.find("*** ");
    if (open == std::string::npos || line.find(" CANCELLED AT ") == std::string::npos) continue;
    if (line.compare(open + 4, 5, "STEP ") != 0 && line.compare(open + 4, 4, "JOB ") != 0) continue;
    std::string what = line.substr(open + 4);
    const size_t close = what.rfind(" ***");
    if (close != std::string::npos) what.resize(close);
    found = what;  // the last one: a job cancelled after its step was says so last
  }
  if (found.empty() || task_failed_first) return {};
  const bool time_limit = found.find("DUE TO TIME LIMIT") != std::string::npos;
  return {time_limit ? "timeout" : "interrupted", "Slurm: " + found};
}

bool unsupported_exit_in_log(const std::string& log_text, int unsupported_code) {
  const std::string code = std::to_string(unsupported_code);
  std::istringstream lines(log_text);
  std::string line;
  bool abort_message = false;
  while (std::getline(lines, line)) {
    if (task_failed_line(line) && line.substr(line.rfind(' ') + 1) == code) return true;
    // "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD" / "with errorcode 3."
    if (line.find("MPI_ABORT was invoked") != std::string::npos) abort_message = true;
    if (abort_message && line.find("errorcode " + code + ".") != std::string::npos) return true;
  }
  return false;
}

std::string slurm_queued_job(const std::string& log_text) {
  std::istringstream lines(log_text);
  std::string line, job;
  while (std::getline(lines, line)) {
    const std::string queued = "srun: job ";
    if (line.rfind(queued, 0) != 0) continue;
    const size_t end = line.find(' ', queued.size());
    if (end == std::string::npos) continue;
    const std::string id = line.substr(queued.size(), end - queued.size());
    if (line.find("queued and waiting for resources") != std::string::npos) job = id;
    else if (line.find("has been allocated resources") != std::string::npos && id == job) job.clear();
  }
  return job;
}

std::string slurm_job_state(const std::string& job_id) {
  if (!all_digits(job_id)) return "";
  std::string out = capture_command("timeout 5 squeue -h -j " + job_id + " -o '%T (%r)' 2>/dev/null");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string slurm_job_in_log(const std::string& log_text) {
  std::istringstream lines(log_text);
  std::string line, job;
  const auto digits_at = [](const std::string& s, size_t at) {
    size_t end = at;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    return s.substr(at, end - at);
  };
  while (std::getline(lines, line)) {
    if (line.rfind("srun: ", 0) != 0) continue;  // srun's own lines only, never the training's output
    const std::string queued = "srun: job ";
    if (line.rfind(queued, 0) == 0) {
      const std::string id = digits_at(line, queued.size());
      if (!id.empty()) job = id;
    }
    const size_t step = line.find("StepId=");
    if (step != std::string::npos) {
      const std::string id = digits_at(line, step + 7);
      if (!id.empty()) job = id;
    }
  }
  return job;
}

SlurmEnd slurm_end_of_job_line(const std::string& job_id, const std::string& scontrol_line) {
  if (field_of(scontrol_line, "JobId") != job_id) return {};
  const std::string state = field_of(scontrol_line, "JobState");
  std::string status;
  if (state == "CANCELLED" || state == "PREEMPTED" || state == "NODE_FAIL") status = "interrupted";
  else if (state == "TIMEOUT" || state == "DEADLINE") status = "timeout";
  else return {};
  return {status, "Slurm: JOB " + job_id + " " + state + " (scontrol: JobState=" + state +
                      " Reason=" + field_of(scontrol_line, "Reason") + ")"};
}

SlurmEnd slurm_job_end(const std::string& job_id) {
  if (!all_digits(job_id)) return {};  // only digits reach scontrol's command line
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    std::string line = capture_command("timeout 5 scontrol show job -o " + job_id + " 2>/dev/null");
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    // COMPLETING: Slurm is still taking the step down; the job's final state follows within seconds.
    if (field_of(line, "JobState") != "COMPLETING" || std::chrono::steady_clock::now() > deadline)
      return slurm_end_of_job_line(job_id, line);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace dtnn
