// Shared by the runner's test files: a scratch workspace, `dtnn` run as a command, and a quick matrix base.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "helpers.h"
#include "results/store.h"

namespace dtnn::test::runner {

struct Workspace {
  std::filesystem::path dir;
  explicit Workspace(const std::string& name) : dir(dtnn::test::temp_path("runner_" + name)) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~Workspace() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string p = (dir / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string db() const { return (dir / "dtnn.db").string(); }
};

// Runs `dtnn <args>` with output in `log`, returns the exit code (128 + signal when killed).
inline int dtnn_cli(const std::string& args, const std::string& log = "/dev/null") {
  const std::string cmd = std::string(DTNN_BINARY) + " " + args + " > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Synthetic data keeps the trials short and independent of dataset files.
inline const char* const kQuickBase = R"(
[base]
use_synthetic_data = true
dataset = "mnist"
num_epochs = 2
steps_per_epoch = 3
threads = 1
)";

// A database holding one run of a simplemlp trial with this status (begun by this process: 'running' rows
// name it as their runner).
inline void make_db_with_run(const std::string& db, const std::string& status) {
  dtnn::ResultStore store = dtnn::ResultStore::open(db);
  dtnn::RunStart s;
  s.matrix_id = store.add_matrix("m", "m.toml", "hash", "name = \"m\"\n");
  dtnn::StoredEnvironment e;
  e.host = "h";
  s.environment_id = store.add_environment(e);
  s.trial_key = s.config_key = s.label = "model=simplemlp";
  s.params = {{"model", "simplemlp"}, {"dataset", "mnist"}};
  s.command = "dtnn train";
  s.log_path = "x.log";
  const int64_t id = store.begin_run(s);
  if (status != "running") store.exec("UPDATE runs SET status = '" + status + "' WHERE id = " + std::to_string(id));
}

}  // namespace dtnn::test::runner
