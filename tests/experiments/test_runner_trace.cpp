// A matrix's tracing = true end to end: the runner passes --tracing with the trace files beside the run's
// log, records runs.trace_path, and the store holds the traced steps' phases, stragglers and one step's
// timeline; `dtnn query stragglers` shows them. Under a real mpirun ([mpi]: ranks 1 and 2). The PyTorch
// reference cannot trace: such a trial is unsupported with the reason.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "experiments/runner_helpers.h"
#include "results/store.h"
#include "store_value.h"
#include "skip.h"

using Catch::Contains;
using Catch::StartsWith;
using namespace dtnn::test::runner;
namespace fs = std::filesystem;

using dtnn::test::one;

namespace {

dtnn::QueryResult rows(const std::string& db, const std::string& sql) {
  return dtnn::ResultStore::open_read_only(db).query(sql);
}

}  // namespace

TEST_CASE("runner: tracing = true keeps the trace beside the log and its stragglers in the store", "[runner][mpi]") {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) DTNN_SKIP("mpirun not found");
  Workspace ws("tracing");
  // Six steps (2 epochs of 3), steps 1..4 traced; no test pass (its 10000 synthetic samples take seconds).
  const std::string matrix = ws.file("traced.toml", R"(name = "traced"
timeout_s = 120
[launcher]
args = ["--oversubscribe"]
[base]
model = "resnet20_cifar10"
dataset = "cifar10"
use_synthetic_data = true
batch_size = 8
steps_per_epoch = 3
num_epochs = 2
threads = 1
evaluate_on_test = false
tracing = true
trace_steps = "1..4"
[axes]
ranks = [1, 2]
)");
  const std::string log = (ws.dir / "run.log").string();
  const int rc = dtnn_cli("run " + matrix + " --db " + ws.db(), log);
  INFO(read_text(log));
  REQUIRE(rc == 0);
  CHECK_THAT(read_text(log), Contains("2 ok, 0 failed"));
  const std::string db = ws.db();
  const std::string id1 = one(db, "SELECT id FROM runs WHERE ranks = 1 AND status = 'ok'");
  const std::string id2 = one(db, "SELECT id FROM runs WHERE ranks = 2 AND status = 'ok'");

  // The trace beside the log: <log without .log>.trace.json and .trace.csv; the path of the JSON stored.
  for (const std::string& id : {id1, id2}) {
    const std::string log_path = one(db, "SELECT log_path FROM runs WHERE id = " + id);
    const std::string trace_path = one(db, "SELECT trace_path FROM runs WHERE id = " + id);
    INFO("run " << id << ": " << log_path << " " << trace_path);
    REQUIRE(log_path.size() > 4);
    CHECK(trace_path == log_path.substr(0, log_path.size() - 4) + ".trace.json");
    REQUIRE(fs::is_regular_file(trace_path));
    const std::string csv = trace_path.substr(0, trace_path.size() - 5) + ".csv";
    REQUIRE(fs::is_regular_file(csv));
    CHECK_THAT(read_text(csv), StartsWith("Event type;Event value;Event name;Calls;Total time;Median of times\n"));
    const nlohmann::json chrome = nlohmann::json::parse(read_text(trace_path));
    CHECK(chrome.at("traceEvents").size() > 0);
    // The command line in the log asks for both files.
    CHECK_THAT(read_text(log_path), Contains("--tracing=True") && Contains("--trace_steps=1..4") &&
                                        Contains("--tracer_output=" + trace_path + "," + csv));
    // Phases from the trace: the 4 traced steps on every rank.
    CHECK(one(db, "SELECT group_concat(DISTINCT source) FROM run_phases WHERE run_id = " + id) == "trace");
    CHECK(one(db, "SELECT group_concat(DISTINCT calls) FROM run_phases WHERE phase = 'step' AND run_id = " + id) ==
          "4");
    CHECK(one(db, "SELECT count(*) FROM run_phases WHERE phase = 'forward' AND layer >= 0 AND run_id = " + id) !=
          "0");
  }
  CHECK(one(db, "SELECT count(DISTINCT rank) FROM run_phases WHERE run_id = " + id2) == "2");

  // Stragglers: one per traced step of the 2-rank run, none for 1 rank.
  CHECK(one(db, "SELECT count(*) FROM run_stragglers WHERE run_id = " + id1) == "0");
  CHECK(one(db, "SELECT count(*) || ',' || min(step) || ',' || max(step) FROM run_stragglers WHERE run_id = " + id2) ==
        "4,1,4");
  CHECK(one(db, "SELECT count(*) FROM run_stragglers WHERE run_id = " + id2 +
                    " AND slowest_rank IN (0, 1) AND busy_s > 0 AND lag_s >= 0 AND busy_s >= median_busy_s"
                    " AND phase <> ''") == "4");
  // The timeline: one of the traced steps, events of both ranks from 0 s.
  for (const std::string& id : {id1, id2}) {
    const std::string where = " FROM run_timeline WHERE run_id = " + id;
    CHECK(one(db, "SELECT count(DISTINCT step)" + where) == "1");
    const std::string step = one(db, "SELECT step" + where + " LIMIT 1");
    CHECK((step == "1" || step == "2" || step == "3" || step == "4"));
    CHECK(std::stod(one(db, "SELECT min(begin_s)" + where)) == Approx(0.0).margin(1e-9));
    CHECK(one(db, "SELECT count(*)" + where + " AND kind = 'step'") == (id == id1 ? "1" : "2"));
  }
  CHECK(one(db, "SELECT count(DISTINCT rank) FROM run_timeline WHERE run_id = " + id2) == "2");
  CHECK(one(db, "SELECT count(DISTINCT rank) FROM run_timeline WHERE run_id = " + id1) == "1");

  // dtnn query stragglers: the four steps of the 2-rank run with the phase each slowest rank lost most in.
  const std::string out = (ws.dir / "query.log").string();
  REQUIRE(dtnn_cli("query stragglers --db " + db, out) == 0);
  const std::string q = read_text(out);
  INFO(q);
  CHECK_THAT(q, Contains("slowest_rank") && Contains("lag_ms") && Contains("resnet20_cifar10"));
  for (const auto& r : rows(db, "SELECT phase FROM run_stragglers WHERE run_id = " + id2).rows)
    CHECK_THAT(q, Contains(*r[0]));
  REQUIRE(dtnn_cli("query straggler_summary --db " + db, out) == 0);
  CHECK_THAT(read_text(out), Contains("most_often_slowest"));
  REQUIRE(dtnn_cli("query phases --db " + db, out) == 0);
  CHECK_THAT(read_text(out), Contains("backward") && Contains("trace"));
}

TEST_CASE("runner: the PyTorch reference with tracing = true is unsupported, saying why", "[runner]") {
  Workspace ws("tracing_torch");
  const std::string matrix = ws.file("torch.toml", std::string("name = \"torch\"\n") + kQuickBase +
                                                       "tracing = true\nframework = \"pytorch\"\n");
  const std::string log = (ws.dir / "dry.log").string();
  REQUIRE(dtnn_cli("run " + matrix + " --dry-run", log) == 0);
  CHECK_THAT(read_text(log), Contains("unsupported: the PyTorch reference has no --tracing"));
  // A real run records it without starting the reference.
  dtnn_cli("run " + matrix + " --db " + ws.db(), log);
  INFO(read_text(log));
  CHECK(one(ws.db(), "SELECT status FROM runs") == "unsupported");
  CHECK(one(ws.db(), "SELECT error FROM runs") == "the PyTorch reference has no --tracing");
  CHECK(one(ws.db(), "SELECT trace_path FROM runs") == "NULL");
  // dtnn itself traces: the same matrix without the framework passes --tracing=True.
  const std::string dtnn = ws.file("dtnn.toml", std::string("name = \"dtnn\"\n") + kQuickBase + "tracing = true\n");
  REQUIRE(dtnn_cli("run " + dtnn + " --dry-run", log) == 0);
  CHECK_THAT(read_text(log), Contains("--tracing=True") && !Contains("unsupported"));
}

TEST_CASE("runner: a traced trial that diverged keeps its trace path with its report", "[runner]") {
  Workspace ws("tracing_diverged");
  // 3e38 makes simplemlp's first-epoch loss NaN (as in test_diverged_runs.cpp); the trace is written anyway.
  const std::string matrix = ws.file("lr.toml", std::string("name = \"lr\"\ntimeout_s = 60\n") + kQuickBase +
                                                    "model = \"simplemlp\"\nlearning_rate = 3e38\ntracing = true\n");
  const std::string log = (ws.dir / "run.log").string();
  CHECK(dtnn_cli("run " + matrix + " --db " + ws.db(), log) == 1);  // diverged: news
  INFO(read_text(log));
  CHECK(one(ws.db(), "SELECT status FROM runs") == "diverged");
  const std::string log_path = one(ws.db(), "SELECT log_path FROM runs");
  const std::string trace_path = one(ws.db(), "SELECT trace_path FROM runs");
  CHECK(trace_path == log_path.substr(0, log_path.size() - 4) + ".trace.json");
  CHECK(fs::is_regular_file(trace_path));
  CHECK(one(ws.db(), "SELECT count(*) FROM run_phases WHERE source = 'trace' AND phase = 'step'") == "1");
}
