// The matrix runner. See runner.h.
#include "experiments/runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "analysis/compare.h"
#include "backend/gpu.h"
#include "core/host.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/utf8.h"
#include "experiments/launcher.h"
#include "experiments/matrix.h"
#include "experiments/run_files.h"
#include "experiments/runner_predict.h"
#include "experiments/slurm.h"
#include "experiments/trial_process.h"
#include "results/store.h"
#include "train/option_table.h"

namespace dtnn {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool is_error_line(const std::string& line) {
  return line.rfind("dtnn: ", 0) == 0 || line.rfind("torch_train: ", 0) == 0 || line.rfind("pydtnn_peer: ", 0) == 0;
}

// The line a failed child left behind: its last "dtnn: ..." / "torch_train: ..." / "pydtnn_peer: ..." line, else its last
// meaningful line. Rules made only of '-', '=', '*' and blanks (mpirun frames its messages in them) say
// nothing: they are skipped.
std::string error_line(const std::string& log_path) {
  // Open MPI's long box for ranks srun started without a PMI it speaks, said in one line.
  const std::string text = read_file(log_path);
  if (text.find("have been direct launched using \"srun\"") != std::string::npos)
    return "Open MPI could not join ranks that srun started without PMIx (give srun --mpi=pmix, the runner's default)";
  // And its box for more ranks than slots, whose last line ("launch.") says nothing.
  if (text.find("There are not enough slots available in the system") != std::string::npos)
    return "Open MPI: not enough slots on this machine for the trial's ranks (more ranks than cores: add "
           "args = [\"--oversubscribe\"] to the matrix's [launcher], or give a hostfile with more slots)";
  std::ifstream f(log_path);
  std::string line, last, last_tagged;
  while (std::getline(f, line)) {
    if (line.find_first_not_of(" \t\r-=*") == std::string::npos) continue;
    last = line;
    if (is_error_line(line) || line.find("Error") != std::string::npos) last_tagged = line;
  }
  std::string out = last_tagged.empty() ? last : last_tagged;
  if (out.size() > 500) out = out.substr(0, 500) + "...";
  return out;
}

// Why a child that died by a signal died, if it said so: its last line, only when that line is complete
// (output cut off by the kill is a fragment of something else, such as the options dump) and is one of its
// error lines. "" otherwise.
std::string signal_reason(const std::string& log_path) {
  const std::string text = read_file(log_path);
  if (text.empty() || text.back() != '\n') return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const size_t newline = text.rfind('\n', end);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  std::string line = text.substr(begin, end + 1 - begin);
  if (!is_error_line(line)) return "";
  if (line.size() > 500) line = line.substr(0, 500) + "...";
  return line;
}

}  // namespace

BuildProvenance parse_version_line(const std::string& text) {
  BuildProvenance p;
  std::string line = text.substr(0, text.find('\n'));  // the first line, without its newline
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  const size_t at = line.find("(commit ");
  if (at == std::string::npos) return p;
  const size_t begin = at + 8, semi = line.find("; ", begin);
  std::string commit = line.substr(begin, semi == std::string::npos ? std::string::npos : semi - begin);
  if (semi == std::string::npos && !commit.empty() && commit.back() == ')') commit.pop_back();
  const std::string suffix = "+dirty";
  if (commit.size() > suffix.size() && commit.compare(commit.size() - suffix.size(), suffix.size(), suffix) == 0) {
    p.dirty = true;
    commit.resize(commit.size() - suffix.size());
  }
  p.commit = commit.empty() ? "unknown" : commit;
  if (semi != std::string::npos) {
    p.flags = line.substr(semi + 2);
    if (!p.flags.empty() && p.flags.back() == ')') p.flags.pop_back();
  }
  return p;
}

BuildProvenance binary_provenance(const std::string& binary) {
  // Bounded: a stand-in trial program (tests) may not know --version and sleep instead.
  return parse_version_line(capture_command("timeout 5 " + shell_quote(binary) + " --version 2>/dev/null"));
}

StoredEnvironment current_environment() {
  const Environment& e = environment();
  StoredEnvironment s;
  s.host = e.host;
  // A runner inside a Slurm job (dtnn run --submit) runs on whichever node the job got, and its trials on
  // the nodes of their steps (runs.node_list): the environment is the cluster, so a matrix resumed by a later
  // job on another node is still the same environment (--resume finds its runs).
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* cluster = std::getenv("SLURM_CLUSTER_NAME");
  if (job && *job && cluster && *cluster) s.host = std::string("slurm:") + cluster;
  s.cpu_model = e.cpu_model;
  s.cores = e.cores;
  s.machine = e.machine;
  s.gpu = gpu_device_count() > 0 ? std::to_string(gpu_device_count()) + " CUDA device(s)" : "none";
  s.compiler = e.compiler;
  s.blas = e.blas;
  s.onednn = e.onednn;
  s.mpi = e.mpi.empty() ? "none" : e.mpi;
  s.cuda = e.cuda;
  // The build's flags are part of what identifies the environment (a -march or backend change is another build).
  s.build_type = e.build_type + " [" + e.build_flags + "]";
  s.dtnn_version = e.dtnn_version;
  // The commit this binary was built from (core/build_info.h), not the tree it runs in: a binary built
  // yesterday and run on today's edited tree is still yesterday's commit, marked dirty if its tree was.
  s.git_commit = e.build_commit;
  s.git_dirty = e.build_dirty;
  nlohmann::json vars = nlohmann::json::object();
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES",
                           "CUDA_VISIBLE_DEVICES", "DNNL_VERBOSE", "NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO",
                           "OMPI_MCA_btl", "OMPI_MCA_pml"})  // not SLURM_JOB_ID: runs.runner_job_id
    if (const char* v = std::getenv(name)) vars[name] = v;
  escape_invalid_utf8(vars);  // an environment variable may hold any bytes
  s.env_vars = vars.dump();
  return s;
}

namespace {

struct Planned {
  Trial trial;
  int repeat = 0;
};

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

// The database path made absolute, with its directory created; a clear error for a path that cannot be one.
fs::path prepare_db_path(const std::string& db) {
  ResultStore::check_path(db);
  const fs::path path = fs::absolute(db);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) fail(db, ": cannot create the directory ", path.parent_path().string(), " (", ec.message(), ")");
  return path;
}

RunStart run_start(int64_t matrix_id, int64_t env_id, const Planned& planned, const std::string& tags,
                   const std::string& command) {
  RunStart rs;
  rs.matrix_id = matrix_id;
  rs.environment_id = env_id;
  rs.trial_key = planned.trial.key;
  rs.label = planned.trial.label;
  rs.repeat = planned.repeat;
  rs.params = planned.trial.params;
  rs.tags = tags;
  if (!rs.params.count("ranks")) rs.params["ranks"] = std::to_string(planned.trial.ranks());  // nodes x ranks_per_node
  std::map<std::string, std::string> config = planned.trial.params;
  // The scaling group: the same configuration at another rank count, or on another number of nodes when that
  // is what sets the ranks (a study over nodes keeps ranks_per_node). A trial naming both ranks and nodes keeps
  // its nodes: 2 ranks on one node and 2 ranks on two are other configurations, and v_scaling averaged them
  // into one row describing neither.
  config.erase("ranks");
  if (config.count("ranks_per_node") || !planned.trial.params.count("ranks")) config.erase("nodes");
  for (const auto& [name, value] : config) rs.config_key += (rs.config_key.empty() ? "" : ";") + name + "=" + value;
  rs.command = command;
  rs.log_path = "(pending)";
  return rs;
}

struct Outcome {
  std::string status, error;  // status "ok" or "diverged": stored with the report already
};

// Runs one begun run to its outcome: the child, its exit, its report ingested when ok and this attempt's
// (refused_report_reason). Throws when the runner itself cannot go on with it (no log file, no fork); the
// caller marks the run failed then.
Outcome run_trial(ResultStore& store, int64_t run_id, const Launch& launch, const RankLayout& layout,
                  const fs::path& log_dir, double timeout_s, double& duration) {
  const bool srun = !launch.argv.empty() && launch.argv[0] == "srun";
  const std::string nonce = attempt_nonce();
  const std::string log_path = (log_dir / (std::to_string(run_id) + "-" + nonce + ".log")).string();
  const std::string report_path = report_path_for(log_path);
  store.set_log_path(run_id, log_path);
  if (!launch.unsupported_why.empty()) return {"unsupported", launch.unsupported_why};
  write_hostfile(launch);
  std::vector<std::string> argv = launch.argv;
  argv.push_back("--report=" + report_path);
  clear_report_path(report_path);
  // A matrix's tracing = true: the Chrome trace (Perfetto), PyDTNN's CSV and Paraver's files beside the log.
  const bool tracing = std::find(argv.begin(), argv.end(), kTracingFlag) != argv.end();
  const std::string trace_base = report_path.substr(0, report_path.size() - std::strlen(".report.json")) + ".trace";
  if (tracing) argv.push_back("--tracer_output=" + trace_base + ".json," + trace_base + ".csv," + trace_base + ".prv");
  const std::vector<std::string> own_files = give_attempt_own_files(argv, log_path);
  {
    std::ofstream log(log_path);
    log << "# " << (launch.env.empty() ? "" : "env " + command_string(launch.env) + " ") << command_string(argv) << "\n";
    for (const std::string& note : own_files) log << note << "\n";
  }
  struct stat log_stat {};
  if (::stat(log_path.c_str(), &log_stat) != 0)
    fail(log_path, ": cannot create the log file (", std::strerror(errno), ")");
  const timespec began = log_stat.st_mtim;  // the file system's clock, as the report's time will be
  const auto t0 = Clock::now();
  // A trial that times out still queued in Slurm (a drained node, a full partition) says so, with squeue's reason.
  const auto queued_note = [&log_path]() -> std::string {
    const std::string job = slurm_queued_job(read_file(log_path));
    if (job.empty()) return "";
    const std::string state = slurm_job_state(job);
    return "still queued in Slurm: job " + job + (state.empty() ? "" : " " + state);
  };
  const ChildResult child = run_child(argv, log_path, nonce, timeout_s, queued_note, launch.env);
  duration = std::chrono::duration<double>(Clock::now() - t0).count();
  // Slurm cancelled the step or its job (scancel, its time limit, preemption): its words, whatever the exit.
  if (child.kind != ChildResult::kInterrupted && (child.kind != ChildResult::kExited || child.code != 0)) {
    const std::string log_text = read_file(log_path);
    SlurmEnd end = slurm_cancellation(log_text);
    // No slurmstepd line (a step cancelled before its tasks started, or srun gone first): ask scontrol. Not
    // after the runner's own timeout: the runner stopped srun, and the job it cancelled is no news.
    if (end.status.empty() && child.kind != ChildResult::kTimeout) end = slurm_job_end(slurm_job_in_log(log_text));
    if (!end.status.empty()) {
      std::error_code ec;
      fs::remove(report_path, ec);
      return {end.status, end.reason};
    }
  }
  // Only a report this attempt wrote is a result (exit 0, and a diverged run's report too).
  if (child.kind == ChildResult::kExited && (child.code == 0 || (child.code == kDivergedExit && fs::exists(report_path)))) {
    const std::string why = refused_report_reason(report_path, nonce, began);
    if (!why.empty()) {
      std::error_code ec;
      fs::remove(report_path, ec);  // at this attempt's own path: no later run would read it anyway
      return {"failed", "exit " + std::to_string(child.code) + " but its report was refused: " + why};
    }
  }
  Outcome o;
  switch (child.kind) {
    case ChildResult::kInterrupted:
      o = {"interrupted", "stopped by signal " + std::to_string(stop_signal())};
      break;
    case ChildResult::kTimeout: {
      const std::string after = timeout_s < 60 ? format_double(timeout_s) + " s" : format_duration(timeout_s);
      o = {"timeout", "no result after " + after + " (timeout_s = " + format_double(timeout_s) + ")" +
                          (child.timeout_note.empty() ? "" : "; " + child.timeout_note)};
      break;
    }
    case ChildResult::kSignalled: {
      const std::string why = signal_reason(log_path);
      o = {"failed", "killed by signal " + std::to_string(child.code) + (why.empty() ? "" : "; " + why)};
      break;
    }
    case ChildResult::kExited:
      if (child.code == kUnsupportedExit ||
          (child.code != 0 && unsupported_exit_in_log(read_file(log_path), kUnsupportedExit))) {
        o = {"unsupported", error_line(log_path)};
      } else if (child.code == kDivergedExit && fs::exists(report_path)) {
        // A result, not a failure: stored with its report so the epochs up to the divergence are kept; unless
        // separate 1-rank worlds diverged (not this trial's run).
        try {
          if (const std::string why = world_mismatch(report_path, layout, srun); !why.empty()) fail(why);
          const std::string report = read_file(report_path);
          store.finish_run_diverged(run_id, report, error_line(log_path), duration);
          if (tracing && trace_written(report)) store.set_trace_path(run_id, trace_base + ".json");  // to the divergence
          o = {"diverged", error_line(log_path)};
        } catch (const Error& e) {
          o = {"failed", e.what()};
        }
      } else if (child.code != 0) {
        o = {"failed", "exit " + std::to_string(child.code) + ": " + error_line(log_path)};
      } else if (!fs::exists(report_path)) {
        o = {"failed", "exit 0 but no report was written"};
      } else if (const std::string why = world_mismatch(report_path, layout, srun); !why.empty()) {
        o = {"failed", why};
      } else {
        try {
          const std::string report = read_file(report_path);
          store.finish_run_ok(run_id, report, duration);
          if (tracing && trace_written(report)) store.set_trace_path(run_id, trace_base + ".json");
          o = {"ok", ""};
        } catch (const Error& e) {
          o = {"failed", e.what()};
        }
      }
      break;
  }
  std::error_code ec;
  fs::remove(report_path, ec);  // the report is stored in the run row
  return o;
}

}  // namespace

namespace {

// Before anything runs or is stored: a --dtnn that cannot run made every trial a stored failure.
void check_run_inputs(const RunnerOptions& options, const Matrix& matrix, const std::vector<Trial>& trials,
                      const std::string& dtnn_binary) {
  if (!options.dtnn_binary.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(dtnn_binary, ec) || ::access(dtnn_binary.c_str(), X_OK) != 0)
      fail("--dtnn ", dtnn_binary, ": not an executable file (a dtnn binary the trials run)");
  }
  if (trials.empty()) fail("no trial of ", matrix.path, " matches the --only filters");
  for (const std::string& t : options.tags)
    if (const std::string why = tag_problem(t); !why.empty()) fail("--tag '", t, "': ", why);
}

// --dry-run: the runs a matrix would make, each trial's command line (or why it is unsupported) and hostfile.
void print_dry_run(const RunnerOptions& options, const Matrix& matrix, const std::vector<Trial>& trials,
                   const std::string& dtnn_binary, std::ostream& out) {
  // Predicted trials are predicted once (they are not measured, so not repeated).
  const size_t predicted = std::count_if(trials.begin(), trials.end(), is_predicted);
  out << "matrix " << matrix.name << " (" << matrix.path << "): " << trials.size() - predicted << " trial(s) x "
      << matrix.repeats << " repeat(s)" << (predicted ? " + " + std::to_string(predicted) + " predicted" : "")
      << " = " << (trials.size() - predicted) * matrix.repeats + predicted << " run(s)\n";
  const std::string work_dir = (database_log_dir(fs::absolute(options.db_path)) / matrix.name).string();
  for (size_t i = 0; i < trials.size(); ++i) {
    const Launch launch = trial_launch(matrix, trials[i], dtnn_binary, work_dir);
    const std::string& why = launch.unsupported_why;
    out << "  " << i + 1 << "  " << trials[i].label << "\n     "
        << (is_predicted(trials[i]) ? predicted_description(trials[i])
                                    : why.empty() ? command_string(launch.argv) : "unsupported: " + why) << "\n";
    if (!launch.hostfile_path.empty() && why.empty()) {
      std::string hosts = launch.hostfile_text.substr(0, launch.hostfile_text.size() - 1);  // one line
      for (size_t at; (at = hosts.find('\n')) != std::string::npos;) hosts.replace(at, 1, "; ");
      out << "     hostfile " << launch.hostfile_path << ": " << hosts << "\n";
    }
  }
}

// A missing, empty or malformed hostfile fails before any run, whether or not a trial has a layout (without
// one, mpirun would fail every multi-rank trial with its own message, stored as each run's error).
void check_hostfile(const Matrix& matrix, const std::vector<Trial>& trials) {
  if (matrix.launcher.kind != "mpirun" || matrix.launcher.hostfile.empty()) return;
  for (const Trial& t : trials)
    if (t.ranks() > 1 && !is_predicted(t)) {
      if (!fs::is_regular_file(matrix.launcher.hostfile))
        fail(matrix.path, ": launcher 'hostfile': ", matrix.launcher.hostfile, " is not a file");
      (void)hostfile_hosts(matrix.launcher.hostfile);
      return;
    }
}

// The environment the runs are stored under: this process's, or (--dtnn) another build's provenance and flags,
// from its --version line, with --git-commit's commit when stated (a build may predate provenance lines).
StoredEnvironment trial_environment(const RunnerOptions& options) {
  StoredEnvironment environment = current_environment();
  if (!options.dtnn_binary.empty()) {
    const BuildProvenance other = binary_provenance(options.dtnn_binary);
    environment.git_commit = other.commit;
    environment.git_dirty = other.dirty;
    environment.build_type = environment.build_type.substr(0, environment.build_type.find(" [")) + " [" +
                             other.flags + "]";
  }
  if (!options.git_commit.empty()) {
    environment.git_commit = options.git_commit;
    environment.git_dirty = false;
  }
  return environment;
}

struct RunPlan {
  std::vector<Planned> runs;  // measured trials first (they calibrate the predictions)
  int skipped = 0, skipped_diverged = 0;  // --resume: repeats stored before, those of them diverged
};

RunPlan plan_runs(const RunnerOptions& options, const Matrix& matrix, const std::vector<Trial>& trials,
                  ResultStore& store, int64_t matrix_id, int64_t env_id) {
  RunPlan plan;
  for (const Trial& t : trials) {
    // A prediction is made once, whatever the repeats.
    const int repeats = is_predicted(t) ? 1 : matrix.repeats;
    ResultStore::StoredResults stored;
    if (options.resume && is_predicted(t)) stored.ok = store.count_predictions(matrix_id, env_id, t.key);
    else if (options.resume) stored = store.count_stored_results(matrix_id, env_id, t.key);
    // A diverged repeat is a result: rerunning it (every --resume, every requeue of a --submit job) would
    // diverge again from the same seed. The ok ones count first.
    const int done = std::min(stored.ok + stored.diverged, repeats);
    plan.skipped += done;
    plan.skipped_diverged += std::max(0, done - stored.ok);
    for (int r = done; r < repeats; ++r) plan.runs.push_back({t, r});
  }
  std::stable_partition(plan.runs.begin(), plan.runs.end(), [](const Planned& p) { return !is_predicted(p.trial); });
  return plan;
}

// Where the runs of a matrix are stored: the store, its matrix and environment rows, the logs and tags.
struct RunTarget {
  ResultStore& store;
  int64_t matrix_id = 0, env_id = 0;
  fs::path log_dir;
  std::string tags;
  std::string dtnn_binary;
  int claim_repeats = 0;  // --resume: each run claims a free repeat of its trial first (0: no claim)
};

struct Tally {
  int ok = 0, failed = 0, timeout = 0, unsupported = 0, diverged = 0, predicted = 0, taken = 0;
  void add(const std::string& status) {
    if (status == "ok") ++ok;
    else if (status == "taken") ++taken;
    else if (status == "diverged") ++diverged;
    else if (status == "unsupported") ++unsupported;
    else if (status == "timeout") ++timeout;
    else if (status == "failed") ++failed;
    else if (status == "predicted") ++predicted;
  }
};

// The trial as repeat `repeat` trains it: with repeat_seeds, its seed + repeat (the trial's key, and so its
// identity, stays the one of every repeat).
Trial seeded(const Matrix& matrix, const Trial& trial, int repeat) {
  if (!matrix.repeat_seeds || repeat == 0) return trial;
  Trial t = trial;
  const std::string base = trial.get("seed", "0");
  if (base.empty() || base.size() > 18 || base.find_first_not_of("0123456789") != std::string::npos)
    fail(matrix.path, ": repeat_seeds needs the trials' seed to be a whole number (got '", base, "')");
  t.params["seed"] = std::to_string(std::stoll(base) + repeat);
  return t;
}

// One planned run, stored with its final status (a prediction's rows, or a failed run saying why); returns the
// status ("predicted" for stored predictions) and prints the runs that did not go as planned.
std::string run_planned(const Matrix& matrix, const Planned& planned, RunTarget& t, bool tty, std::ostream& out) {
  const Trial& trial = planned.trial;
  if (is_predicted(trial)) {  // no process: a row of predictions, or a failed run saying why
    const PredictedOutcome p = run_predicted_trial(t.store, t.matrix_id, trial, t.env_id);
    if (p.status == "ok") return "predicted";
    const int64_t run_id = t.store.begin_run(run_start(t.matrix_id, t.env_id, planned, t.tags, p.command));
    t.store.set_log_path(run_id, "(none: a predicted trial starts no process)");
    t.store.finish_run(run_id, p.status, p.error, 0.0);
    out << (tty ? "\r\033[K" : "") << "  run " << run_id << " " << p.status << ": " << p.error << "\n" << std::flush;
    return p.status;
  }
  Launch launch = trial_launch(matrix, seeded(matrix, trial, planned.repeat), t.dtnn_binary, t.log_dir.string());
  RunStart start = run_start(t.matrix_id, t.env_id, planned, t.tags, command_string(launch.argv));
  // Runners resuming one matrix side by side (a requeued job beside a new one) split its missing runs: a
  // trial whose repeats another runner stored or is running since this one planned is not run twice.
  const std::optional<int64_t> claimed =
      t.claim_repeats ? t.store.claim_run(start, t.claim_repeats) : std::optional<int64_t>(t.store.begin_run(start));
  if (!claimed) return "taken";
  const int64_t run_id = *claimed;
  if (matrix.repeat_seeds && start.repeat != planned.repeat) {  // another repeat was free: its seed
    launch = trial_launch(matrix, seeded(matrix, trial, start.repeat), t.dtnn_binary, t.log_dir.string());
    t.store.set_command(run_id, command_string(launch.argv));
  }
  // From here on the run is 'running': whatever goes wrong, it gets a final status before the next trial
  // (a store that cannot even record that ends the runner; the next runner reaps the row).
  double duration = 0.0;
  Outcome o;
  try {
    o = run_trial(t.store, run_id, launch, layout_of(trial), t.log_dir, matrix.timeout_s, duration);
  } catch (const std::exception& e) {
    o = {"failed", std::string("runner: ") + e.what()};
  }
  const bool stored = o.status == "ok" || o.status == "diverged";  // with the report already
  if (!stored) t.store.finish_run(run_id, o.status, o.error, duration);
  const bool known_beforehand = o.status == "unsupported" && !launch.unsupported_why.empty();  // not news
  if (o.status != "ok" && o.status != "interrupted" && !known_beforehand)
    out << (tty ? "\r\033[K" : "") << "  run " << run_id << " " << o.status << ": " << o.error << "\n" << std::flush;
  return o.status;
}

// Opens (or creates) the database, reaps the rows of a killed runner, and adds the matrix and environment rows.
RunTarget open_target(const RunnerOptions& options, const Matrix& matrix, ResultStore& store, const fs::path& db_path,
                      const std::string& dtnn_binary, std::ostream& out) {
  const fs::path db_log_dir = database_log_dir(db_path);
  const std::vector<std::string> reaped = store.reap_orphaned_runs();
  remove_stale_reports(reaped, db_log_dir, store);
  if (!reaped.empty()) out << "marked " << reaped.size() << " run(s) of an earlier, killed runner as interrupted\n";
  RunTarget t{store, 0, 0, {}, {}, {}};
  t.matrix_id = store.add_matrix(matrix.name, matrix.path, matrix.hash, matrix.text);
  t.env_id = store.add_environment(trial_environment(options));
  t.log_dir = db_log_dir / matrix.name;
  std::error_code ec;
  fs::create_directories(t.log_dir, ec);
  if (ec) fail(t.log_dir.string(), ": cannot create the log directory (", ec.message(), ")");
  for (const std::string& tag : matrix.tags) t.tags += (t.tags.empty() ? "" : ",") + tag;
  for (const std::string& tag : options.tags) t.tags += (t.tags.empty() ? "" : ",") + tag;
  t.dtnn_binary = dtnn_binary;
  return t;
}

// The last lines: counts, and the exit status (the matrix's: a diverged run stored before and skipped is
// still news; a stop signal's 128 + signal).
int finish_matrix(const Tally& n, const RunPlan& plan, int stopped_by, double total, bool tty, std::ostream& out) {
  out << (tty ? "\r\033[K" : "") << "done in " << format_duration(total) << ": " << n.ok << " ok, " << n.failed
      << " failed, " << n.timeout << " timeout, " << n.unsupported << " unsupported, " << n.diverged << " diverged"
      << (n.predicted ? ", " + std::to_string(n.predicted) + " predicted" : std::string())
      << (n.taken ? ", " + std::to_string(n.taken) + " taken by another runner" : std::string())
      << (stopped_by ? ", interrupted by signal " + std::to_string(stopped_by) : std::string()) << "\n";
  if (plan.skipped_diverged)
    out << plan.skipped_diverged << " diverged run(s) stored before were not rerun (run those trials without "
        << "--resume, e.g. with --only, to try again)\n";
  if (stopped_by) return 128 + stopped_by;
  return n.failed + n.timeout + n.diverged + plan.skipped_diverged > 0 ? 1 : 0;
}

}  // namespace

int run_matrix(const RunnerOptions& options, std::ostream& out) {
  const Matrix matrix = load_matrix(options.matrix_path);
  const std::vector<Trial> trials = filter_trials(matrix.trials, options.only);
  const std::string dtnn_binary = options.dtnn_binary.empty() ? self_executable() : options.dtnn_binary;
  check_run_inputs(options, matrix, trials, dtnn_binary);
  // The PyTorch reference reads the option table from the binary whose runs it is compared with.
  ::setenv("DTNN_BINARY", dtnn_binary.c_str(), 1);
  if (options.dry_run) {
    print_dry_run(options, matrix, trials, dtnn_binary, out);
    return 0;
  }
  check_hostfile(matrix, trials);
  // Every trial's ranks read it into their report's placement (mpirun passes it on with -x).
  ::setenv("DTNN_LAUNCHER_VERSION", launcher_version(matrix.launcher.kind).c_str(), 1);
  const fs::path db_path = prepare_db_path(options.db_path);
  ResultStore store = ResultStore::open(db_path.string());
  RunTarget target = open_target(options, matrix, store, db_path, dtnn_binary, out);
  if (options.resume) target.claim_repeats = matrix.repeats;
  const RunPlan plan = plan_runs(options, matrix, trials, store, target.matrix_id, target.env_id);
  out << "matrix " << matrix.name << ": " << trials.size() << " trial(s), " << plan.runs.size() << " run(s) to do";
  if (options.resume) {
    out << ", " << plan.skipped << " already stored ok";
    if (plan.skipped_diverged) out << " or diverged (" << plan.skipped_diverged << " diverged: not rerun)";
  }
  out << "; database " << db_path.string() << "\n" << std::flush;

  const StopSignals stop_signals;
  const bool tty = ::isatty(STDOUT_FILENO);
  const auto start = Clock::now();
  Tally tally;
  int stopped_by = 0;  // the stop signal that ended the runner
  for (size_t i = 0; i < plan.runs.size() && !stopped_by; ++i) {
    if ((stopped_by = stop_signal())) break;  // between trials: start no other
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double eta = i == 0 ? NAN : elapsed / static_cast<double>(i) * static_cast<double>(plan.runs.size() - i);
    out << (tty ? "\r\033[K" : "") << "[" << i + 1 << "/" << plan.runs.size() << "] " << plan.runs[i].trial.label
        << " (repeat " << plan.runs[i].repeat + 1 << "/" << matrix.repeats << ")  elapsed " << format_duration(elapsed)
        << "  ETA " << format_duration(eta) << (tty ? "" : "\n") << std::flush;
    const std::string status = run_planned(matrix, plan.runs[i], target, tty, out);
    if (status == "interrupted") stopped_by = stop_signal();
    tally.add(status);
  }
  return finish_matrix(tally, plan, stopped_by, std::chrono::duration<double>(Clock::now() - start).count(), tty, out);
}

}  // namespace dtnn
