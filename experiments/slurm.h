// What Slurm said about a trial, read from the trial's log (srun's and slurmstepd's own lines) and asked of
// squeue: a step or job that Slurm cancelled, and a job still waiting in the queue. The runner turns these
// into a run's status and error (experiments/runner.h):
//   "slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT <time> DUE TO TIME LIMIT ***"  -> timeout
//   "... *** JOB 12 ON n1 CANCELLED AT <time> ***" (scancel), DUE TO PREEMPTION / NODE FAILURE -> interrupted
// with the line (without its "slurmstepd-<node>: error: " prefix and stars) as the reason.
// Not when a task had failed before that line ("srun: error: vm: task 0: Exited with exit code 1": the
// CANCELLED is srun's --kill-on-bad-exit stopping the others; or Open MPI's "MPI_ABORT was invoked": a rank's
// MPI_Abort aborts the step through PMIx): the trial failed with its task's exit.
#pragma once

#include <string>

namespace dtnn {

struct SlurmEnd {
  std::string status;  // "" (the log has no such line), "timeout" or "interrupted"
  std::string reason;  // "Slurm: STEP 12.0 ON n1 CANCELLED AT 2026-11-24T19:36:28 DUE TO TIME LIMIT"
};
SlurmEnd slurm_cancellation(const std::string& log_text);

// Whether a task of the trial exited with `unsupported_code` (dtnn's "this build or machine cannot run it"),
// by srun's line for the task ("task 1: Exited with exit code 3") or Open MPI's MPI_Abort message ("with
// errorcode 3."): srun's own exit code is then another (its --kill-on-bad-exit signal, 143), but the trial
// is unsupported as under mpirun.
bool unsupported_exit_in_log(const std::string& log_text, int unsupported_code);

// The job srun named in its own lines ("srun: job 12 queued ...", "... allocated resources", "StepId=12.0"),
// the last one; "" when it named none. srun names it when it queues or signals a step, not in a plain run.
std::string slurm_job_in_log(const std::string& log_text);

// Slurm's word on how a job ended, for a trial whose log lacks slurmstepd's line: the step was cancelled
// before its tasks had started (slurmstepd prints nothing then) or srun exited before the line reached it.
// Reads `scontrol show job -o <job>` (waiting up to 5 s while the job is COMPLETING):
//   CANCELLED, PREEMPTED, NODE_FAIL -> interrupted; TIMEOUT, DEADLINE -> timeout; anything else -> {}.
// The reason names the job, its state and scontrol as the source:
//   "Slurm: JOB 5 CANCELLED (scontrol: JobState=CANCELLED Reason=None)".
// A job Slurm no longer knows (past MinJobAge), a job still running (a step cancelled inside an allocation)
// or no answer within 5 s gives {}: the trial then keeps its exit status.
SlurmEnd slurm_job_end(const std::string& job_id);
// The part of slurm_job_end that reads one line of `scontrol show job -o` (tested on Slurm's own lines).
SlurmEnd slurm_end_of_job_line(const std::string& job_id, const std::string& scontrol_line);

// The job srun said it queued ("srun: job 7 queued and waiting for resources") and has not yet said it was
// allocated; "" otherwise.
std::string slurm_queued_job(const std::string& log_text);

// squeue's state and reason of a job ("PENDING (ReqNodeNotAvail, UnavailableNodes:n1)"), "" when squeue does
// not know it or does not answer within 5 s.
std::string slurm_job_state(const std::string& job_id);

}  // namespace dtnn
