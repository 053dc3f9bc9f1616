// See run_files.h.
#include "experiments/run_files.h"

#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "experiments/launcher.h"

namespace dtnn {

namespace fs = std::filesystem;

namespace {
bool before(const timespec& a, const timespec& b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}
}  // namespace

// This database's own log folder: <db dir>/logs/<db file stem>-<8 hex digits of the SHA-256 of its
// canonical path>. Databases in one directory each count run ids from 1 and must not share files.
fs::path database_log_dir(const fs::path& db_path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(db_path, ec);
  if (ec) canonical = db_path;
  const std::string tag = sha256_hex(canonical.string()).substr(0, 8);
  return db_path.parent_path() / "logs" / (db_path.stem().string() + "-" + tag);
}

// A fresh name for one attempt at a run (64 random bits, 16 hex digits): in its file names, so an attempt
// never meets the files of another (a recreated database counts run ids from 1 again), and in
// $DTNN_RUN_NONCE, which the trial copies into its report as "run_nonce".
std::string attempt_nonce() {
  std::random_device rd;
  const uint64_t bits = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(bits));
  return buf;
}

// Where the trial logged at `log_path` (<name>.log) writes its report: <name>.report.json.
namespace {
// <name> of <name>.log: the stem an attempt's files share.
std::string log_base(const std::string& log_path) {
  const bool dot_log = log_path.size() >= 4 && log_path.compare(log_path.size() - 4, 4, ".log") == 0;
  return dot_log ? log_path.substr(0, log_path.size() - 4) : log_path;
}
}  // namespace

std::string report_path_for(const std::string& log_path) { return log_base(log_path) + ".report.json"; }


// Why the file at report_path is not this attempt's report: it was written before the attempt began
// (`began` comes from the same file system's clock, so coarse timestamps can only tie), or it names
// another attempt. "" when it is this attempt's, and when there is none (the caller says so). A report
// without "run_nonce" is taken on its path and time: dtnn builds from before the nonce (`dtnn run --dtnn`
// with an older build, as ci/perf-regression.sh runs its baselines) write none, and the path is this
// attempt's own, cleared before it began.
std::string refused_report_reason(const std::string& report_path, const std::string& nonce, const timespec& began) {
  struct stat st {};
  if (::stat(report_path.c_str(), &st) != 0) return "";
  if (before(st.st_mtim, began)) return report_path + " was written before the run started";
  const nlohmann::json j = nlohmann::json::parse(read_file(report_path), nullptr, false);
  if (!j.is_object() || !j.contains("run_nonce")) return "";  // malformed: ingesting it says why
  const nlohmann::json& named = j["run_nonce"];
  if (!named.is_string() || named.get<std::string>() != nonce)
    return report_path + " names run nonce " + named.dump() + ", not this run's \"" + nonce + "\"";
  return "";
}

// Reports that no trial will read any more: those next to the logs of `orphans` (runs of a killed runner),
// and, under `log_root`, any *.report.json more than a minute old whose run is not running (a rank of a
// killed trial can write one after its run ended). A newer one may be a live trial's, just written.
void remove_stale_reports(const std::vector<std::string>& orphans, const fs::path& log_root, const ResultStore& store) {
  std::error_code ec;
  for (const std::string& log : orphans)
    if (fs::path(log).is_absolute()) fs::remove(report_path_for(log), ec);
  if (!fs::is_directory(log_root, ec)) return;
  std::set<std::string> live;
  for (const auto& row : store.query("SELECT log_path FROM runs WHERE status = 'running'").rows)
    if (row[0]) live.insert(report_path_for(*row[0]));
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::minutes(1);
  for (auto it = fs::recursive_directory_iterator(log_root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string path = it->path().string();
    if (path.size() < 12 || path.compare(path.size() - 12, 12, ".report.json") != 0 || live.count(path)) continue;
    std::error_code time_ec;
    const auto written = fs::last_write_time(it->path(), time_ec);
    if (!time_ec && written < cutoff) fs::remove(it->path(), time_ec);
  }
}

// Nothing may be at a report path before its attempt begins: removes what is there, throws if it cannot.
void clear_report_path(const std::string& report_path) {
  std::error_code ec;
  fs::remove(report_path, ec);
  if (ec || fs::symlink_status(report_path, ec).type() != fs::file_type::not_found)
    fail(report_path, ": cannot remove what is there before the run starts");
}

std::vector<std::string> give_attempt_own_files(std::vector<std::string>& argv, const std::string& log_path) {
  static const char* const kOwnFiles[] = {"weights_and_bias_filename", "history_file", "checkpoint_file",
                                          "early_stopping_weights_filename"};
  const std::string base = log_base(log_path);
  std::vector<std::string> notes;
  for (std::string& arg : argv)
    for (const char* option : kOwnFiles) {
      const std::string prefix = std::string("--") + option + "=";
      if (arg.compare(0, prefix.size(), prefix) != 0 || arg.size() == prefix.size()) continue;
      const std::string given = arg.substr(prefix.size());
      const std::string own = base + "." + option + fs::path(given).extension().string();
      std::error_code ec;
      fs::remove(own, ec);  // a file left by an earlier attempt with this name (none: the nonce is new) is not an input
      const bool start_from = std::string(option) == "weights_and_bias_filename" && fs::is_regular_file(given, ec);
      if (start_from) {
        fs::copy_file(given, own, ec);
        if (ec) fail(option, ": cannot copy ", given, " to ", own, " (", ec.message(), ")");
      }
      notes.push_back("# --" + std::string(option) + ": " +
                      (start_from ? "starts from a copy of " + given + "; " : "the matrix names " + given + "; ") +
                      "this attempt writes " + own);
      arg = prefix + own;
    }
  return notes;
}

bool trace_written(const std::string& report_json) {
  try {
    const nlohmann::json j = nlohmann::json::parse(report_json);
    return j.contains("trace") && j["trace"].is_object() && !j["trace"].contains("write_error");
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

// "" when the report's rank count is the trial's; else why not (a launcher that started `ranks` separate
// worlds of one rank, e.g. srun without PMIx, gives reports of 1 rank each). Under srun with a layout
// (nodes, ranks_per_node), the hosts the ranks ran on too: inside a --submit job srun takes the allocation's
// node count from its environment, and --ntasks-per-node is only a maximum, so a layout can be quietly
// spread over more nodes (1,1,1,1 for ranks_per_node = 2).
std::string world_mismatch(const std::string& report_path, const RankLayout& layout, bool srun) {
  const int ranks = layout.ranks;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(report_path));
  } catch (const std::exception&) {
    return "";  // the store says what is wrong with it
  }
  if (!j.is_object() || !j.contains("parallel") || !j["parallel"].contains("ranks")) return "";
  const nlohmann::json& r = j["parallel"]["ranks"];
  if (r.is_number_integer() && r.get<int>() != ranks)
    return "the run reports " + std::to_string(r.get<int>()) + " rank(s) in its MPI world, the trial asked for " +
           std::to_string(ranks) + ": the launcher did not join them (srun without --mpi=pmix?)";
  if (!srun || !layout.given || !j.contains("placement") || !j["placement"].is_object()) return "";
  const std::string tasks = j["placement"].value("tasks_per_node", std::string());
  if (tasks.empty()) return "";
  int hosts = 0, most = 0;
  for (size_t at = 0; at <= tasks.size(); ++hosts) {
    const size_t comma = std::min(tasks.find(',', at), tasks.size());
    most = std::max(most, std::atoi(tasks.substr(at, comma - at).c_str()));
    at = comma + 1;
  }
  if (hosts == layout.nodes && (layout.slots == 0 || most <= layout.slots)) return "";
  return "the ranks ran " + tasks + " per node, the trial's layout is " + std::to_string(layout.nodes) +
         " node(s) of at most " + std::to_string(layout.slots) + ": Slurm placed them otherwise";
}

}  // namespace dtnn
