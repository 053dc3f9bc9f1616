// A 'running' run whose runner is gone: shown as 'running (runner gone)' by read-only tools and marked
// interrupted by the next writer -- also when the runner's pid now belongs to another process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_helpers.h"
#include "experiments/runner_helpers.h"
#include "results/store.h"
#include "store_value.h"

using Catch::Matchers::Contains;
using dtnn::test::runner::make_db_with_run;
using dtnn::test::runner::Workspace;
using dtnn::test::one;

TEST_CASE("cli: query runs shows a run whose runner is gone", "[runner]") {
  Workspace ws("orphan_view");
  make_db_with_run(ws.db(), "running");
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(ws.db());
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);  // the pid is gone now
    store.exec("UPDATE runs SET runner_pid = " + std::to_string(child));
  }
  const dtnn::test::Command q = dtnn::test::run_dtnn("query runs --format csv --db " + ws.db());
  CHECK(q.status == 0);
  CHECK_THAT(q.out, Contains(",running (runner gone),"));
  CHECK(one(ws.db(), "SELECT status FROM runs") == "running");  // shown, not written
}

TEST_CASE("cli: a run whose runner's pid now belongs to another process is shown and reaped as gone", "[runner]") {
  // In a container pids start small again: the next job's process may have the dead runner's pid. The run
  // records its runner's boot id and start time beside the pid (runs.runner_start).
  Workspace ws("orphan_reused_pid");
  make_db_with_run(ws.db(), "running");
  const pid_t other = ::fork();  // a live process that is not the runner
  if (other == 0) {
    ::pause();
    ::_exit(0);
  }
  std::string boot_id, stat;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot_id);
  std::getline(std::ifstream("/proc/" + std::to_string(other) + "/stat"), stat);
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field, started;
  for (int i = 3; i <= 22 && fields >> field; ++i) started = field;  // field 22: start time in ticks
  const auto status_with = [&](const std::string& start) {
    {
      dtnn::ResultStore store = dtnn::ResultStore::open(ws.db());
      store.exec("UPDATE runs SET status = 'running', runner_pid = " + std::to_string(other) + ", runner_start = '" +
                 start + "'");
    }
    const dtnn::test::Command q = dtnn::test::run_dtnn("query runs --format csv --db " + ws.db());
    CHECK(q.status == 0);
    return q.out.find(",running (runner gone),") != std::string::npos ? "gone" : "running";
  };
  CHECK(std::string(status_with(boot_id + " " + started)) == "running");  // it is the runner
  CHECK(std::string(status_with("")) == "running");                       // not recorded: the pid decides
  CHECK(std::string(status_with(boot_id + " 1")) == "gone");              // the pid, another process
  {  // and the next writer marks it interrupted
    dtnn::ResultStore store = dtnn::ResultStore::open(ws.db());
    store.reap_orphaned_runs();
  }
  CHECK(one(ws.db(), "SELECT status FROM runs") == "interrupted");
  ::kill(other, SIGKILL);
  int wstatus = 0;
  ::waitpid(other, &wstatus, 0);
}
