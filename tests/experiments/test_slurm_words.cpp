// What the runner reads from Slurm (experiments/slurm.h) and where ranks ran (parallel/placement.h), against
// the lines Slurm 22.05's srun and slurmstepd print and the variables its and Open MPI's launchers set
// (copied from real runs on the local cluster of ci/slurm_local.sh; tests/experiments/test_slurm.sh runs them).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/file_io.h"
#include "experiments/launcher.h"
#include "experiments/run_files.h"
#include "experiments/runner.h"
#include "experiments/slurm.h"
#include "experiments/submit.h"
#include "helpers.h"
#include "parallel/placement.h"

using dtnn::slurm_cancellation;
using dtnn::slurm_queued_job;

TEST_CASE("slurm: a cancelled step or job in a trial's log", "[runner]") {
  const std::string scancel =
      "# srun -n 1 ...\nslurmstepd-vm: error: *** STEP 6.0 ON vm CANCELLED AT 2026-11-24T19:24:47 ***\n"
      "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\nsrun: error: vm: task 0: Terminated\n";
  const dtnn::SlurmEnd c = slurm_cancellation(scancel);
  CHECK(c.status == "interrupted");
  CHECK(c.reason == "Slurm: STEP 6.0 ON vm CANCELLED AT 2026-11-24T19:24:47");

  const dtnn::SlurmEnd t = slurm_cancellation(
      "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
      "slurmstepd-vm: error: *** STEP 8.0 ON vm CANCELLED AT 2026-11-24T19:36:28 DUE TO TIME LIMIT ***\n");
  CHECK(t.status == "timeout");
  CHECK(t.reason == "Slurm: STEP 8.0 ON vm CANCELLED AT 2026-11-24T19:36:28 DUE TO TIME LIMIT");

  // A batch job cancelled after its step: the job's line, the last, is the reason.
  const dtnn::SlurmEnd j = slurm_cancellation(
      "slurmstepd-n1: error: *** STEP 12.3 ON n1 CANCELLED AT 2026-01-01T00:00:00 ***\n"
      "slurmstepd-n1: error: *** JOB 12 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO PREEMPTION ***\n");
  CHECK(j.status == "interrupted");
  CHECK(j.reason == "Slurm: JOB 12 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO PREEMPTION");

  // srun's --kill-on-bad-exit: task 0 failed, srun stopped task 1, which was still starting (Slurm 22.05's lines
  // on the local cluster, srun -n 2 --kill-on-bad-exit=1 with task 0 exiting 1): a failure, not an interruption.
  const std::string bad_exit =
      "srun: error: vm: task 0: Exited with exit code 1\nsrun: launch/slurm: _step_signal: Terminating StepId=1.0\n"
      "slurmstepd-vm: error: *** STEP 1.0 ON vm CANCELLED AT 2026-11-27T19:46:33 ***\n"
      "srun: error: vm: task 1: Terminated\nsrun: Force Terminated StepId=1.0\n";
  CHECK(slurm_cancellation(bad_exit).status.empty());
  CHECK(slurm_cancellation("srun: error: vm: tasks 0-1: Exited with exit code 2\n"
                           "slurmstepd-vm: error: *** STEP 1.0 ON vm CANCELLED AT 2026-11-27T19:46:33 ***\n")
            .status.empty());
  // A rank's MPI_Abort under srun --mpi=pmix: PMIx aborts the step, and srun and slurmstepd say what they say of
  // an scancel. Open MPI's message comes first: a failure (it was stored 'interrupted' and the matrix exited 0).
  const std::string mpi_abort =
      "dtnn: /nonexistent/mnist: neither train-images-idx3-ubyte nor train-images-idx3-ubyte.gz\n"
      "--------------------------------------------------------------------------\n"
      "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\nwith errorcode 3.\n\n"
      "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
      "--------------------------------------------------------------------------\n"
      "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
      "slurmstepd-vm: error: *** STEP 17.0 ON vm CANCELLED AT 2026-11-28T01:50:00 ***\n"
      "srun: error: vm: task 1: Killed\n";
  CHECK(slurm_cancellation(mpi_abort).status.empty());
  // Which of them is dtnn's "cannot run here" (3): by the abort's errorcode, or srun's line for the task.
  CHECK(dtnn::unsupported_exit_in_log(mpi_abort, 3));
  CHECK_FALSE(dtnn::unsupported_exit_in_log(mpi_abort, 1));
  CHECK(dtnn::unsupported_exit_in_log("srun: error: vm: task 0: Exited with exit code 3\n"
                                      "srun: error: vm: task 1: Terminated\n", 3));
  CHECK_FALSE(dtnn::unsupported_exit_in_log("srun: error: vm: task 0: Exited with exit code 1\n", 3));
  // A task that exits non-zero after the cancellation (its own handler of SIGTERM) does not hide it.
  CHECK(slurm_cancellation("slurmstepd-vm: error: *** STEP 6.0 ON vm CANCELLED AT 2026-11-24T19:24:47 ***\n"
                           "srun: error: vm: task 0: Exited with exit code 143\n")
            .status == "interrupted");
  // srun's "Job step aborted" says slurmctld cancelled it, whichever of the task's exit and slurmstepd's line came
  // first.
  CHECK(slurm_cancellation("srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
                           "srun: error: vm: task 0: Exited with exit code 143\n"
                           "slurmstepd-vm: error: *** STEP 6.0 ON vm CANCELLED AT 2026-11-24T19:24:47 ***\n")
            .status == "interrupted");
  // A task that exited 0 before the others were cancelled is no failure.
  CHECK(slurm_cancellation("srun: error: vm: task 0: Exited with exit code 0\n"
                           "slurmstepd-vm: error: *** STEP 6.0 ON vm CANCELLED AT 2026-11-24T19:24:47 ***\n")
            .status == "interrupted");

  // Not Slurm's: a training log that mentions stars or cancellation in other words.
  CHECK(slurm_cancellation("*** An error occurred in MPI_Init_thread\n*** on a NULL communicator\n").status.empty());
  CHECK(slurm_cancellation("dtnn: loss CANCELLED AT epoch 3 ***\n").status.empty());
  CHECK(slurm_cancellation("").status.empty());
}

TEST_CASE("slurm: a job still queued, from srun's lines", "[runner]") {
  CHECK(slurm_queued_job("srun: Required node not available (down, drained or reserved)\n"
                         "srun: job 14 queued and waiting for resources\n") == "14");
  CHECK(slurm_queued_job("srun: job 14 queued and waiting for resources\nsrun: job 14 has been allocated resources\n")
            .empty());
  CHECK(slurm_queued_job("srun: job 3 queued and waiting for resources\nsrun: job 3 has been allocated resources\n"
                         "srun: job 4 queued and waiting for resources\n") == "4");
  CHECK(slurm_queued_job("nothing from srun\n").empty());
  CHECK(dtnn::slurm_job_state("12; rm -rf /").empty());  // only digits reach squeue's command line
}

TEST_CASE("slurm: the job srun named, and how scontrol says it ended", "[runner]") {
  // A step cancelled before its task had started: srun's lines only, no slurmstepd line.
  const std::string early =
      "# srun -n 1 ...\nsrun: launch/slurm: launch_p_step_launch: StepId=1.0 aborted before step completely launched.\n"
      "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\nsrun: error: vm: task 0: Terminated\n"
      "srun: launch/slurm: _step_signal: Terminating StepId=1.0\n";
  CHECK(slurm_cancellation(early).status.empty());
  CHECK(dtnn::slurm_job_in_log(early) == "1");
  CHECK(dtnn::slurm_job_in_log("srun: job 2 queued and waiting for resources\nsrun: Job has been cancelled\n") == "2");
  CHECK(dtnn::slurm_job_in_log("srun: job 3 queued and waiting for resources\nsrun: job 3 has been allocated "
                               "resources\nsrun: error: vm: task 0: Exited with exit code 1\n") == "3");
  CHECK(dtnn::slurm_job_in_log("srun: error: vm: task 0: Exited with exit code 1\n").empty());
  CHECK(dtnn::slurm_job_in_log("training: StepId=9.0 in its own words\n").empty());  // not srun's line

  // scontrol show job -o, as Slurm 22.05 prints it (cut).
  const std::string cancelled = "JobId=2 JobName=t2 UserId=root(0) Priority=1 JobState=CANCELLED "
                                "Reason=Nodes_required_for_job_are_DOWN,_DRAINED Dependency=(null) Requeue=1";
  const dtnn::SlurmEnd c = dtnn::slurm_end_of_job_line("2", cancelled);
  CHECK(c.status == "interrupted");
  CHECK(c.reason == "Slurm: JOB 2 CANCELLED (scontrol: JobState=CANCELLED Reason=Nodes_required_for_job_are_DOWN,_DRAINED)");
  CHECK(dtnn::slurm_end_of_job_line("3", "JobId=3 JobName=x JobState=TIMEOUT Reason=TimeLimit").status == "timeout");
  CHECK(dtnn::slurm_end_of_job_line("4", "JobId=4 JobName=x JobState=PREEMPTED Reason=None").status == "interrupted");
  CHECK(dtnn::slurm_end_of_job_line("3", "JobId=3 JobName=x JobState=FAILED Reason=NonZeroExitCode").status.empty());
  CHECK(dtnn::slurm_end_of_job_line("3", "JobId=3 JobName=x JobState=RUNNING Reason=None").status.empty());
  CHECK(dtnn::slurm_end_of_job_line("3", "JobId=33 JobState=CANCELLED Reason=None").status.empty());  // another job
  CHECK(dtnn::slurm_end_of_job_line("3", "JobId=3 JobName=JobState=CANCELLED Reason=None").status.empty());
  CHECK(dtnn::slurm_end_of_job_line("3", "slurm_load_jobs error: Invalid job id specified").status.empty());
  CHECK(dtnn::slurm_job_end("1; rm -rf /").status.empty());  // only digits reach scontrol's command line
}

namespace {
std::map<std::string, std::string> g_env;
const char* lookup(const char* name) {
  const auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
}  // namespace

TEST_CASE("placement: nodes in rank order, launcher and Slurm job from the environment", "[runner]") {
  std::string nodes, tasks;
  dtnn::nodes_and_tasks({"n2", "n2", "n1", "n2", "n1"}, nodes, tasks);
  CHECK(nodes == "n2,n1");
  CHECK(tasks == "3,2");

  g_env = {};
  dtnn::Placement p = dtnn::detect_placement({"vm"}, lookup);
  CHECK(p.scheduler == "none");
  CHECK(p.launcher == "none");
  CHECK(p.job_id.empty());
  CHECK(p.node_list == "vm");
  CHECK(p.tasks_per_node == "1");

  g_env = {{"SLURM_JOB_ID", "4"}, {"SLURM_STEP_ID", "0"}, {"SLURM_CLUSTER_NAME", "dtnn-local"},
           {"SLURM_MPI_TYPE", "pmix"}, {"DTNN_LAUNCHER_VERSION", "slurm-wlm 22.05.8"}};
  p = dtnn::detect_placement({"vm", "vm"}, lookup);
  CHECK(p.scheduler == "slurm");
  CHECK(p.cluster == "dtnn-local");
  CHECK(p.job_id == "4");
  CHECK(p.step_id == "0");
  CHECK(p.launcher == "srun");
  CHECK(p.launcher_version == "slurm-wlm 22.05.8");
  CHECK(p.tasks_per_node == "2");

  // mpirun inside an allocation: its daemons are a Slurm step, its ranks are mpirun's.
  g_env = {{"SLURM_JOB_ID", "9"}, {"SLURM_STEP_ID", "1"}, {"OMPI_MCA_orte_launch", "1"}};
  p = dtnn::detect_placement({"a", "b"}, lookup);
  CHECK(p.scheduler == "slurm");
  CHECK(p.launcher == "mpirun");
  CHECK(p.node_list == "a,b");

  g_env = {{"OMPI_MCA_orte_hnp_uri", "1282867200.0;tcp://192.0.2.2:52919"}};
  p = dtnn::detect_placement({"vm", "vm"}, lookup);
  CHECK(p.scheduler == "none");
  CHECK(p.launcher == "mpirun");
}

// The batch script of `dtnn run --submit` holds no path outside the quoted exec line: a matrix under a directory
// whose name holds a newline ran the rest of the name as a command (and sbatch read no directive after it).
TEST_CASE("submit: paths never leave the quoted exec line, a requeued job resumes", "[runner]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(dtnn::test::temp_path("submit_paths")) / "nl\ntouch PWNED\n% x";
  fs::create_directories(dir);
  const std::string matrix = (dir / "m.toml").string();
  dtnn::write_file_atomically(matrix, "name = \"m\"\n[base]\nmodel = \"simplemlp\"\nuse_synthetic_data = true\n"
                                      "[axes]\nseed = [1, 2]\n");
  dtnn::RunnerOptions o;
  o.matrix_path = matrix;
  o.db_path = (dir / "r.db").string();
  const std::string script = dtnn::batch_script(o, (dir / "t.toml").string(), "/usr/bin/dtnn");
  std::istringstream lines(script);
  std::string line;
  bool exec_seen = false;
  while (std::getline(lines, line)) {
    INFO(line);
    if (line.rfind("exec ", 0) == 0) {
      exec_seen = true;
      // The quoted arguments span lines (the newline in the path): the command is the rest of the script,
      // and it ends with the requeue's $resume, outside the quotes.
      const std::string command = script.substr(script.find("\nexec ") + 1);
      CHECK(command.size() > 9);
      CHECK(command.substr(command.size() - 9) == " $resume\n");
      break;
    }
    const bool allowed = line.rfind("#", 0) == 0 || line == "resume=" || line.rfind("[ \"${SLURM_RESTART_COUNT", 0) == 0;
    CHECK(allowed);
    CHECK(line.find("PWNED") == std::string::npos);
    if (line.rfind("#SBATCH", 0) == 0) CHECK(line.find('%') == std::string::npos);
  }
  CHECK(exec_seen);
  fs::remove_all(dtnn::test::temp_path("submit_paths"));
}

// Under srun a layout is checked against where the ranks ran (the report's placement): inside a --submit job
// srun takes the allocation's node count from SLURM_NNODES, and --ntasks-per-node is only a maximum.
TEST_CASE("runner: a report whose ranks ran on other hosts than the srun layout is refused", "[runner]") {
  const std::string path = dtnn::test::temp_path("layout_report.json");
  const auto report = [&](int ranks, const std::string& tasks) {
    dtnn::write_file_atomically(path, "{\"parallel\": {\"ranks\": " + std::to_string(ranks) +
                                          "}, \"placement\": {\"tasks_per_node\": \"" + tasks + "\"}}");
    return path;
  };
  dtnn::RankLayout l;
  l.ranks = 4;
  l.nodes = 2;
  l.slots = 2;
  l.given = true;
  CHECK(dtnn::world_mismatch(report(4, "2,2"), l, true).empty());
  CHECK_THAT(dtnn::world_mismatch(report(4, "1,1,1,1"), l, true), Catch::Contains("ran 1,1,1,1 per node"));
  CHECK_THAT(dtnn::world_mismatch(report(4, "3,1"), l, true), Catch::Contains("at most 2"));
  CHECK(dtnn::world_mismatch(report(4, "1,1,1,1"), l, false).empty());  // mpirun's hostfile places them itself
  CHECK_THAT(dtnn::world_mismatch(report(1, "1"), l, true), Catch::Contains("reports 1 rank(s)"));
  l.given = false;
  CHECK(dtnn::world_mismatch(report(4, "1,1,1,1"), l, true).empty());  // no layout: srun decides
  std::remove(path.c_str());
}
