// What Slurm said about a trial, read from the trial's log (srun's and slurmstepd's own lines) and asked of
// squeue: a step or job that Slurm cancelled, and a job still waiting in the queue. The runner turns these
// into a run's status and error (experiments/runner.h):
//   "slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT <time> DUE TO TIME LIMIT ***"  -> timeout
//   "... *** JOB 12 ON n1 CANCELLED AT <time> ***" (scancel), DUE TO PREEMPTION / NODE FAILURE -> interrupted
// with the line (without its "slurmstepd-<node>: error: " prefix and stars) as the reason.
#pragma once

#include <string>

namespace dtnn {

struct SlurmEnd {
  std::string status;  // "" (the log has no such line), "timeout" or "interrupted"
  std::string reason;  // "Slurm: STEP 12.0 ON n1 CANCELLED AT 2026-11-24T19:36:28 DUE TO TIME LIMIT"
};
SlurmEnd slurm_cancellation(const std::string& log_text);

// The job srun said it queued ("srun: job 7 queued and waiting for resources") and has not yet said it was
// allocated; "" otherwise.
std::string slurm_queued_job(const std::string& log_text);

// squeue's state and reason of a job ("PENDING (ReqNodeNotAvail, UnavailableNodes:n1)"), "" when squeue does
// not know it or does not answer within 5 s.
std::string slurm_job_state(const std::string& job_id);

}  // namespace dtnn
