// A trace that cannot be written costs the trace, nothing else: a full disk (or a file-size limit) under a
// large trace still leaves the run's weights, history and report, and a Paraver trace's three files are
// replaced as a set, so a .prv too large to write never leaves the old .prv beside a new .pcf and .row. A
// file-size limit (ulimit -f, SIGXFSZ ignored: writes fail with EFBIG as on a full disk) stands in for the full
// disk: the trace's files are the run's largest.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "core/file_io.h"

using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// dtnn train under a file-size limit of `kib` KiB (0: none); returns the exit status.
int train_limited(const fs::path& dir, const std::string& args, int kib) {
  const std::string limit = kib > 0 ? "trap '' XFSZ; ulimit -f " + std::to_string(kib) + "; " : "";
  const std::string cmd = "cd '" + dir.string() + "' && bash -c \"" + limit + "exec " + DTNN_BINARY + " train " +
                          args + " --progress=False\" > out.txt 2> err.txt";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace

TEST_CASE("trace: a trace too large to write leaves the weights, history and report, and says so",
          "[trace][cli]") {
  const fs::path dir = dtnn::test::temp_path("trace_write_failure");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 300 steps of batch 1: a ~1.7 MB JSON trace and a 0.6 MB .prv, beside 0.75 MB of weights and a 22 KB report.
  const std::string args = "--model=simplecnn --use_synthetic_data=True --steps_per_epoch=300 --batch_size=1 "
                           "--tracing=True --tracer_output=t.json --weights_and_bias_filename=w.npz "
                           "--history_file=h.txt --report=r.json";
  REQUIRE(train_limited(dir, args, 1000) == 0);
  CHECK(fs::exists(dir / "w.npz"));
  CHECK(fs::exists(dir / "h.txt"));
  REQUIRE(fs::exists(dir / "r.json"));
  CHECK_FALSE(fs::exists(dir / "t.json"));
  const nlohmann::json report = nlohmann::json::parse(dtnn::read_file((dir / "r.json").string()));
  CHECK_THAT(report["trace"]["write_error"].get<std::string>(), Contains("t.json: write error"));
  CHECK(report["trace"]["files"].empty());
  CHECK_THAT(dtnn::read_file((dir / "err.txt").string()), Contains("dtnn: warning: the trace was not written"));
  CHECK_THAT(dtnn::read_file((dir / "out.txt").string()), Contains("NOT WRITTEN"));
  fs::remove_all(dir);
}

TEST_CASE("trace: Paraver's .prv, .pcf and .row are replaced as a set or not at all", "[trace][cli]") {
  const fs::path dir = dtnn::test::temp_path("trace_paraver_set");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // An earlier trace of another model: its .pcf names other layers.
  REQUIRE(train_limited(dir, "--model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --tracing=True "
                             "--tracer_output=t.prv", 0) == 0);
  const std::string pcf = dtnn::read_file((dir / "t.pcf").string()), row = dtnn::read_file((dir / "t.row").string()),
                    prv = dtnn::read_file((dir / "t.prv").string());
  // simplecnn's .prv (~600 KB) does not fit in 400 KiB; its .pcf and .row would.
  REQUIRE(train_limited(dir, "--model=simplecnn --use_synthetic_data=True --steps_per_epoch=300 --batch_size=1 "
                             "--tracing=True --tracer_output=t.prv --report=r.json", 400) == 0);
  CHECK(dtnn::read_file((dir / "t.prv").string()) == prv);
  CHECK(dtnn::read_file((dir / "t.pcf").string()) == pcf);
  CHECK(dtnn::read_file((dir / "t.row").string()) == row);
  const nlohmann::json report = nlohmann::json::parse(dtnn::read_file((dir / "r.json").string()));
  CHECK_THAT(report["trace"]["write_error"].get<std::string>(), Contains("t.prv: write error"));
  // No temporary file is left behind.
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  // Without the limit the same run replaces all three.
  REQUIRE(train_limited(dir, "--model=simplecnn --use_synthetic_data=True --steps_per_epoch=3 --tracing=True "
                             "--tracer_output=t.prv", 0) == 0);
  CHECK(dtnn::read_file((dir / "t.pcf").string()) != pcf);
  CHECK(dtnn::read_file((dir / "t.prv").string()) != prv);
  fs::remove_all(dir);
}
