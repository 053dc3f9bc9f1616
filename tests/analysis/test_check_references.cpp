// dtnn check's performance references (analysis/references.h) against verdicts worked out here: a trial's median
// over its runs inside [value x (1 + lower), value x (1 + upper)] passes, below or above fails, and a machine
// the file does not name gets "no reference"; --record-references writes what load_references reads back, keeps
// other machines' references and replaces the trial's own; malformed files are refused with their line.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "analysis/references.h"
#include "core/error.h"
#include "cli_helpers.h"
#include "experiments/runner_helpers.h"
#include "helpers.h"
#include "results/store.h"
#include "store_value.h"

using Catch::Contains;

namespace {

// A store whose machine runs trial "t" three times (90, 100, 110 samples/s: median 100) and trial "u" once (50).
struct Fixture {
  std::string db = dtnn::test::temp_path("references.db");
  std::string machine;
  Fixture() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    const int64_t matrix = store.add_matrix("m", "m.toml", "h", "name = \"m\"\n");
    dtnn::StoredEnvironment e;
    e.host = "h";
    e.machine.vendor = "TestVendor", e.machine.family = 1, e.machine.model = 2, e.machine.stepping = 3;
    e.machine.model_name = "Test CPU", e.machine.logical_cpus = 2;
    const int64_t env = store.add_environment(e);
    machine = dtnn::test::one(store, "SELECT machine_key FROM environments");
    for (const auto& [trial, sps] : std::vector<std::pair<std::string, double>>{{"t", 90}, {"t", 110}, {"t", 100}, {"u", 50}}) {
      dtnn::RunStart s;
      s.matrix_id = matrix, s.environment_id = env, s.trial_key = s.config_key = s.label = trial;
      s.params = {{"model", "simplemlp"}};
      s.command = "dtnn train", s.log_path = "x.log";
      const int64_t id = store.begin_run(s);
      store.exec("UPDATE runs SET status = 'ok', samples_per_s = " + std::to_string(sps) + " WHERE id = " +
                 std::to_string(id));
    }
  }
  std::string refs(const std::string& name, const std::string& body) const {
    const std::string path = dtnn::test::temp_path(name);
    std::ofstream(path) << body;
    return path;
  }
  std::string reference(const std::string& trial, double value, double lower, const std::string& upper = "",
                        const std::string& on = "") const {
    std::ostringstream s;
    s << "[[reference]]\nmachine = '''" << (on.empty() ? machine : on) << "'''\nmatrix = 'm'\ntrial = '" << trial
      << "'\nvalue = " << value << "\nlower = " << lower << "\n" << (upper.empty() ? "" : "upper = " + upper + "\n");
    return s.str();
  }
};

dtnn::PerfCounts judge(const Fixture& f, const std::string& path) {
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(f.db);
  std::ostringstream out;
  return dtnn::check_references(store, dtnn::load_references(path), "", path, out);
}

std::string verdict(const dtnn::PerfCounts& c, const std::string& trial) {
  for (const dtnn::PerfRow& r : c.rows)
    if (r.trial == trial) return r.verdict;
  return "(none)";
}

}  // namespace

TEST_CASE("check: performance references judge each trial's median on its machine", "[check]") {
  Fixture f;
  // Median 100: 100 >= 120 x 0.9 = 108 fails below; 100 > 95 x 1.02 = 96.9 fails above; 100 in [90, 110] passes.
  CHECK(verdict(judge(f, f.refs("below.toml", f.reference("t", 120, -0.1))), "t") == "FAIL (below)");
  CHECK(verdict(judge(f, f.refs("above.toml", f.reference("t", 95, -0.1, "0.02"))), "t") == "FAIL (above)");
  const dtnn::PerfCounts ok = judge(f, f.refs("ok.toml", f.reference("t", 100, -0.1, "0.1")));
  CHECK(verdict(ok, "t") == "pass");
  CHECK(ok.rows.size() == 2);
  CHECK(ok.rows[0].value == 100.0);
  CHECK(ok.rows[0].runs == 3);
  CHECK(verdict(ok, "u") == "no reference");  // a trial the file does not name
  // References of another machine judge nothing here.
  const dtnn::PerfCounts other = judge(f, f.refs("other.toml", f.reference("t", 100, -0.1, "", "Another CPU")));
  CHECK(other.no_reference == 2);
  CHECK(other.pass + other.fail == 0);
}

TEST_CASE("check: --record-references writes references that read back, keeping other machines'", "[check]") {
  Fixture f;
  const std::string path = f.refs("record.toml", f.reference("t", 1, -0.5, "", "Another CPU") +
                                                     f.reference("t", 7, -0.5));
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(f.db);
  std::ostringstream out;
  CHECK(dtnn::record_references(store, "", path, -0.2, 0.5, out) == 2);
  CHECK_THAT(out.str(), Contains("recorded 2 reference(s)") && Contains("1 kept from before"));
  const std::vector<dtnn::PerfReference> refs = dtnn::load_references(path);
  REQUIRE(refs.size() == 3);  // the other machine's kept, this machine's t replaced, u added
  CHECK(refs[0].machine == "Another CPU");
  for (const dtnn::PerfReference& r : refs) {
    if (r.machine != f.machine) continue;
    CHECK(r.value == (r.trial == "t" ? 100.0 : 50.0));
    CHECK(r.lower == -0.2);
    CHECK(r.upper == 0.5);
    CHECK(r.runs == (r.trial == "t" ? 3 : 1));
  }
  CHECK(judge(f, path).pass == 2);
}

TEST_CASE("check: a malformed references file is refused with its line", "[check]") {
  Fixture f;
  auto refused = [&](const std::string& name, const std::string& body) {
    try {
      dtnn::load_references(f.refs(name, body));
    } catch (const dtnn::Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK_THAT(refused("k.toml", f.reference("t", 100, -0.1) + "colour = 'red'\n"), Contains(":7: unknown key 'colour'"));
  CHECK_THAT(refused("l.toml", f.reference("t", 100, 0.1)), Contains("lower must be a fraction in (-1, 0]"));
  CHECK_THAT(refused("v.toml", f.reference("t", -5, -0.1)), Contains("value must be a number > 0"));
  CHECK_THAT(refused("d.toml", f.reference("t", 100, -0.1) + f.reference("t", 90, -0.1)),
             Contains("a second reference for matrix 'm', trial 't'"));
  CHECK_THAT(refused("deep.toml", std::string(50000, '[')), Contains("references file"));
  CHECK(dtnn::load_references(f.refs("empty.toml", "# none yet\n")).empty());
}

TEST_CASE("cli: check exits 1 on a performance failure and writes it to JUnit and Markdown", "[check]") {
  Fixture f;
  const std::string refs = f.refs("cli.toml", f.reference("t", 120, -0.1));
  const std::string junit = dtnn::test::temp_path("refs.xml"), md = dtnn::test::temp_path("refs.md");
  // No target matches these runs (no recipe): the accuracy part has nothing to fail; the reference fails.
  const dtnn::test::Command c = dtnn::test::run_dtnn("check --db " + f.db + " --references " + refs +
                                                     " --junit " + junit + " --markdown " + md);
  CHECK(c.status == 1);
  CHECK_THAT(c.out, Contains("FAIL (below)"));
  CHECK_THAT(dtnn::test::runner::read_text(junit), Contains("type=\"performance\""));
  CHECK_THAT(dtnn::test::runner::read_text(md), Contains("**FAIL (below)**"));
  // A references file that is not there, named: an error, not a pass.
  CHECK(dtnn::test::run_dtnn("check --db " + f.db + " --references /nonexistent/refs.toml").status != 0);
}
