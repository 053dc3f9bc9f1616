// Shared by the runner's test files: a scratch workspace, `dtnn` run as a command, and a quick matrix base.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "helpers.h"

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

}  // namespace dtnn::test::runner
