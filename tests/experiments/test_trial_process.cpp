// The runner's trial process (experiments/trial_process.h): what it started is ended with it, also the
// processes that left its process group (a wrapper's `timeout`, mpirun's ranks) -- they stay in its session.
#include <catch2/catch.hpp>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "experiments/trial_process.h"
#include "helpers.h"

namespace {

// Whether `pid` is a live process (not gone, not a zombie waiting for a reaper).
bool alive(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return false;
  const size_t close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

std::string wait_for_file(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream f(path);
    std::string text;
    if (std::getline(f, text) && !text.empty()) return text;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace

TEST_CASE("trial process: children that left its process group end with the trial", "[runner]") {
  const std::filesystem::path dir = dtnn::test::temp_path("trial_process");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string pid_file = (dir / "child.pid").string(), log = (dir / "log").string();
  // A child that moves to a process group of its own (as GNU timeout and mpirun's ranks do) and would sleep
  // for 10 minutes; the trial itself ends at once. Killing the trial's group alone left the child running.
  const std::string script = "/usr/bin/python3 -c 'import os, time; os.setpgid(0, 0); open(\"" + pid_file +
                             ".tmp\", \"w\").write(str(os.getpid())); os.rename(\"" + pid_file + ".tmp\", \"" +
                             pid_file + "\"); time.sleep(600)' & while [ ! -s " + pid_file + " ]; do sleep 0.05; done; exit 3";
  const dtnn::ChildResult r = dtnn::run_child({"/bin/sh", "-c", script}, log, "nonce", 60.0, {});
  CHECK(r.kind == dtnn::ChildResult::kExited);
  CHECK(r.code == 3);
  const std::string child = wait_for_file(pid_file);
  REQUIRE_FALSE(child.empty());
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {  // SIGKILL is sent before run_child returns; the exit is the kernel's
    gone = !alive(child);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
  if (!gone) ::kill(std::stoi(child), SIGKILL);
  std::filesystem::remove_all(dir);
}
