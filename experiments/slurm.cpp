// Reading Slurm's words about a trial. See slurm.h.
#include "experiments/slurm.h"

#include <cctype>
#include <sstream>

#include "core/host.h"
#include "core/strings.h"

namespace dtnn {

SlurmEnd slurm_cancellation(const std::string& log_text) {
  std::istringstream lines(log_text);
  std::string line, found;
  while (std::getline(lines, line)) {
    const size_t open = line.find("*** ");
    if (open == std::string::npos || line.find(" CANCELLED AT ") == std::string::npos) continue;
    if (line.compare(open + 4, 5, "STEP ") != 0 && line.compare(open + 4, 4, "JOB ") != 0) continue;
    std::string what = line.substr(open + 4);
    const size_t close = what.rfind(" ***");
    if (close != std::string::npos) what.resize(close);
    found = what;  // the last one: a job cancelled after its step was says so last
  }
  if (found.empty()) return {};
  const bool time_limit = found.find("DUE TO TIME LIMIT") != std::string::npos;
  return {time_limit ? "timeout" : "interrupted", "Slurm: " + found};
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
  for (const char c : job_id)
    if (!std::isdigit(static_cast<unsigned char>(c))) return "";
  if (job_id.empty()) return "";
  std::string out = capture_command("timeout 5 squeue -h -j " + job_id + " -o '%T (%r)' 2>/dev/null");
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace dtnn
