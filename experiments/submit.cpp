// A matrix as a Slurm batch job. See submit.h.
#include "experiments/submit.h"

#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "core/error.h"
#include "core/file_io.h"
#include "core/strings.h"
#include "experiments/launcher.h"
#include "experiments/matrix.h"
#include "experiments/run_files.h"

namespace dtnn {

namespace fs = std::filesystem;

namespace {

std::string absolute(const std::string& path) { return path.empty() ? path : fs::absolute(path).lexically_normal().string(); }

// A program as the job will find it: a path made absolute, a bare name ("python3") left to the job's PATH.
std::string program_path(const std::string& program) {
  return program.find('/') == std::string::npos ? program : absolute(program);
}

// Text for a comment line: control characters (a newline would end the comment) shown as '?'.
std::string printable(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

// A word for a #SBATCH directive (sbatch splits at spaces and expands '%'): letters, digits and -_. kept.
std::string slurm_word(std::string text) {
  for (char& c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return text;
}


}  // namespace

std::string batch_script(const RunnerOptions& options, const std::string& targets_path, const std::string& runner) {
  const Matrix matrix = load_matrix(options.matrix_path);
  const std::vector<Trial> trials = filter_trials(matrix.trials, options.only);
  if (trials.empty()) fail("no trial of ", matrix.path, " matches the --only filters");
  int ranks = 1, nodes = 0;
  for (const Trial& t : trials) {
    const RankLayout l = layout_of(t);
    ranks = std::max(ranks, l.ranks);
    if (l.given) nodes = std::max(nodes, l.nodes);
  }
  // Paths go only into the exec line, quoted (and --output onto sbatch's command line, submit_matrix): in a
  // comment or a directive a newline would end the directives (sbatch reads none after the first command) and
  // run the rest, a space split a directive, a '%' be expanded by Slurm.
  std::ostringstream s;
  s << "#!/bin/sh\n"
    << "# Written by dtnn run --submit: matrix " << printable(matrix.name) << "\n"
    << "#SBATCH --job-name=dtnn-" << slurm_word(matrix.name) << "\n"
    << "#SBATCH --ntasks=" << ranks << "\n";
  if (nodes > 0) s << "#SBATCH --nodes=" << nodes << "\n";
  s << "#SBATCH --exclusive\n";
  // Slurm requeues a batch job after a node failure or preemption (JobRequeue=1): the requeued job starts this
  // script again, and must not run the trials that finished before it once more.
  s << "resume=\n[ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ] && resume=--resume\n";
  std::vector<std::string> argv = {runner, "run", absolute(options.matrix_path), "--db", absolute(options.db_path)};
  if (options.resume) argv.push_back("--resume");
  for (const std::string& f : options.only) argv.insert(argv.end(), {"--only", f});
  for (const std::string& t : options.tags) argv.insert(argv.end(), {"--tag", t});
  if (!options.dtnn_binary.empty()) argv.insert(argv.end(), {"--dtnn", program_path(options.dtnn_binary)});
  if (!options.git_commit.empty()) argv.insert(argv.end(), {"--commit", options.git_commit});
  argv.insert(argv.end(), {"--targets", absolute(targets_path)});
  s << "exec " << command_string(argv) << (options.resume ? "" : " $resume") << "\n";
  return s.str();
}

int submit_matrix(const RunnerOptions& options, const std::string& targets_path, const std::string& sbatch_args,
                  std::ostream& out) {
  const Matrix matrix = load_matrix(options.matrix_path);
  ResultStore::check_path(options.db_path);
  const fs::path dir = database_log_dir(fs::absolute(options.db_path)) / matrix.name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create the log directory (", ec.message(), ")");
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  const std::string script_path = (dir / ("sbatch-" + std::string(stamp) + ".sh")).string();
  write_file_atomically(script_path, batch_script(options, targets_path, self_executable()));

  // Slurm expands '%' patterns in --output: the directory's own '%' doubled, only %j left to be the job id.
  std::string output_arg;
  for (char c : dir.string()) output_arg += c == '%' ? std::string("%%") : std::string(1, c);
  output_arg += "/sbatch-%j.out";
  std::vector<std::string> argv = {"sbatch", "--parsable", "--output=" + output_arg};
  std::istringstream words(sbatch_args);
  for (std::string w; words >> w;) argv.push_back(w);
  argv.push_back(script_path);
  const std::string cmd = command_string(argv) + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (!pipe) fail("cannot run sbatch");
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  const int status = ::pclose(pipe);
  const int rc = status == -1 ? 127 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  // --parsable: "<job id>[;<cluster>]" first; sbatch's errors otherwise.
  const std::string first = text.substr(0, text.find('\n'));
  const std::string job = first.substr(0, first.find(';'));
  const bool submitted = !job.empty() && job.find_first_not_of("0123456789") == std::string::npos;
  if (!submitted) {
    if (rc == 127) fail("sbatch is not installed or not on PATH (Slurm's client commands)");
    std::string said = text;  // one line: sbatch's lines joined
    for (size_t at; (at = said.find('\n')) != std::string::npos;) said.replace(at, 1, "; ");
    fail("sbatch refused the job: ", said.empty() ? "exit " + std::to_string(rc) : said);
  }
  const std::string output = (dir / ("sbatch-" + job + ".out")).string();
  out << "submitted matrix " << matrix.name << " as Slurm job " << job << "; its runner writes "
      << fs::absolute(options.db_path).string() << " (only it); output " << output << "\n";
  if (text.find('\n') != std::string::npos) out << text.substr(text.find('\n') + 1) << "\n";  // --wait's words
  return rc;
}

}  // namespace dtnn
