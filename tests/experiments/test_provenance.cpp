// The binary's own provenance (core/build_info.h): what `dtnn --version` states, what a run
// report carries, what the runner stores for its own build and for another build given with --dtnn.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "store_value.h"
#include "core/build_info.h"
#include "experiments/runner.h"
#include "experiments/runner_helpers.h"
#include "helpers.h"
#include "results/store.h"

using namespace dtnn::test::runner;
namespace fs = std::filesystem;

using dtnn::test::one;

namespace {

}  // namespace

TEST_CASE("provenance: the --version line is parsed back, dirty or not, and an older line gives unknown", "[provenance]") {
  const std::string sha(40, 'a');
  auto p = dtnn::parse_version_line("dtnn 0.1.0 (commit " + sha + "; GNU 12.2.0; Release; -O3 -march=x86-64-v3; "
                                    "backends: cuda=ON onednn=ON mpi=ON sanitize=OFF)");
  CHECK(p.commit == sha);
  CHECK_FALSE(p.dirty);
  CHECK(p.flags == "GNU 12.2.0; Release; -O3 -march=x86-64-v3; backends: cuda=ON onednn=ON mpi=ON sanitize=OFF");
  p = dtnn::parse_version_line("dtnn 0.1.0 (commit " + sha + "+dirty; F)");
  CHECK(p.commit == sha);
  CHECK(p.dirty);
  CHECK(p.flags == "F");
  p = dtnn::parse_version_line("dtnn 0.1.0");  // a build from before the provenance was compiled in
  CHECK(p.commit == "unknown");
  CHECK_FALSE(p.dirty);
  CHECK(p.flags.empty());
  p = dtnn::parse_version_line("dtnn 0.1.0 (commit unknown; F)");  // built outside a git checkout
  CHECK(p.commit == "unknown");
}

TEST_CASE("provenance: dtnn --version and a run report state the commit the binary was built from", "[provenance]") {
  const dtnn::BuildInfo& b = dtnn::build_info();
  // The generator writes 40 hex digits, or "unknown" outside a checkout (a tarball build).
  CHECK((std::regex_match(b.commit, std::regex("[0-9a-f]{40}")) || b.commit == "unknown"));
  CHECK_THAT(b.flags, Catch::Contains("backends: cuda="));
  Workspace ws("provenance_report");
  const std::string log = (ws.dir / "version.txt").string();
  REQUIRE(dtnn_cli("--version", log) == 0);
  const dtnn::BuildProvenance v = dtnn::parse_version_line(read_text(log));
  // dtnn and this test are linked from one build of dtnn_engine: one provenance.
  CHECK(v.commit == b.commit);
  CHECK(v.dirty == b.dirty);
  CHECK(v.flags == b.flags);
  const std::string report = (ws.dir / "r.json").string();
  REQUIRE(dtnn_cli("train --model=simplecnn --use_synthetic_data=True --num_epochs=1 --steps_per_epoch=2 "
                   "--batch_size=8 --threads=1 --progress=False --report=" + report) == 0);
  const std::string text = read_text(report);
  CHECK_THAT(text, Catch::Contains("\"build_commit\": \"" + b.commit + "\""));
  CHECK_THAT(text, Catch::Contains(std::string("\"build_dirty\": ") + (b.dirty ? "true" : "false")));
}

TEST_CASE("provenance: the runner stores another build's own commit, dirty state and flags (--dtnn)", "[provenance]") {
  Workspace ws("provenance_other");
  // A stand-in build: states a planted provenance, trains with the real binary otherwise.
  const std::string sha = "0123456789abcdef0123456789abcdef01234567";
  const std::string wrapper = ws.file("other_dtnn", "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'dtnn 0.0.9 (commit " +
                                                        sha + "+dirty; planted flags -march=znver4)'; exit 0; fi\n"
                                                        "exec " DTNN_BINARY " \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string m = ws.file("m.toml", std::string("name = \"prov\"\n") + kQuickBase + "[axes]\nmodel = [\"simplecnn\"]\n");
  REQUIRE(dtnn_cli("run '" + m + "' --db '" + ws.db() + "' --dtnn '" + wrapper + "'", (ws.dir / "run.log").string()) == 0);
  CHECK(one(ws.db(), "SELECT e.git_commit FROM runs r JOIN environments e ON e.id = r.environment_id") == sha);
  CHECK(one(ws.db(), "SELECT e.git_dirty FROM runs r JOIN environments e ON e.id = r.environment_id") == "1");
  CHECK_THAT(one(ws.db(), "SELECT e.build_type FROM runs r JOIN environments e ON e.id = r.environment_id"),
             Catch::Contains("planted flags -march=znver4"));
  // --commit states the commit; the flags are still the other build's, not this one's.
  Workspace stated("provenance_stated");
  const std::string m3 = stated.file("m.toml", std::string("name = \"prov\"\n") + kQuickBase + "[axes]\nmodel = [\"simplecnn\"]\n");
  REQUIRE(dtnn_cli("run '" + m3 + "' --db '" + stated.db() + "' --dtnn '" + wrapper + "' --commit abc1234",
                   (stated.dir / "run.log").string()) == 0);
  CHECK(one(stated.db(), "SELECT e.git_commit FROM runs r JOIN environments e ON e.id = r.environment_id") == "abc1234");
  CHECK_THAT(one(stated.db(), "SELECT e.build_type FROM runs r JOIN environments e ON e.id = r.environment_id"),
             Catch::Contains("planted flags -march=znver4"));
  // This binary's own runs: its compiled-in commit, not the tree's (which may have moved on since the build).
  Workspace own("provenance_own");
  const std::string m2 = own.file("m.toml", std::string("name = \"prov\"\n") + kQuickBase + "[axes]\nmodel = [\"simplecnn\"]\n");
  REQUIRE(dtnn_cli("run '" + m2 + "' --db '" + own.db() + "'", (own.dir / "run.log").string()) == 0);
  CHECK(one(own.db(), "SELECT e.git_commit FROM runs r JOIN environments e ON e.id = r.environment_id") ==
        dtnn::build_info().commit);
}
