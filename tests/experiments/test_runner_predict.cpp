// A matrix's predicted trials (mode = "predict", experiments/runner_predict.h) through `dtnn run`: the
// measured trial runs first and calibrates them; each predicted trial is one row of predictions (none of
// runs) equal to what `dtnn predict --from-run ... --json` prints for the same arguments (the CLI path, an
// independent reference for the runner's own call), grouped with the measured run in v_scaling and labelled;
// --resume predicts nothing twice; without a measured run the trial fails saying what to add. [[include]]
// arrays expand to every combination (parse_matrix).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "experiments/matrix.h"
#include "results/store.h"
#include "store_value.h"
#include "runner_helpers.h"
#include "skip.h"

using namespace dtnn::test::runner;
using Catch::Matchers::Contains;

using dtnn::test::one;

namespace {

const std::string kPredictMatrix = std::string("name = \"predict\"\nrepeats = 2\n") + kQuickBase + R"(model = "simplecnn"
[axes]
ranks = [1]
[[include]]
mode = "predict"
platform = ["eth10g", "ib100"]
ranks = [1, 2, 4]
)";

}  // namespace

TEST_CASE("matrix: an [[include]] with arrays is every combination, first key slowest", "[matrix]") {
  const dtnn::Matrix m = dtnn::parse_matrix(std::string("name = \"x\"\n") + kQuickBase + R"(model = "simplecnn"
[axes]
ranks = [1]
[[include]]
mode = "predict"
platform = ["eth10g", "ib100"]
ranks = [2, 4]
)", "x.toml");
  REQUIRE(m.trials.size() == 5);
  CHECK(m.trials[0].label == "ranks=1");
  CHECK(m.trials[1].label == "mode=predict;platform=eth10g;ranks=2");
  CHECK(m.trials[2].label == "mode=predict;platform=eth10g;ranks=4");
  CHECK(m.trials[3].label == "mode=predict;platform=ib100;ranks=2");
  CHECK(m.trials[4].label == "mode=predict;platform=ib100;ranks=4");
  CHECK(m.trials[4].key == "dataset=mnist;mode=predict;model=simplecnn;num_epochs=2;platform=ib100;ranks=4;"
                           "steps_per_epoch=3;threads=1;use_synthetic_data=True");
  const std::string head = std::string("name = \"x\"\n") + kQuickBase + "[axes]\nranks = [1]\n";
  CHECK_THROWS_WITH(dtnn::parse_matrix(head + "[[include]]\nranks = [1, 2]\n", "x.toml"), Contains("duplicates trial"));
  CHECK_THROWS_WITH(dtnn::parse_matrix(head + "[[include]]\nranks = []\n", "x.toml"), Contains("an empty array"));
  CHECK_THROWS_WITH(dtnn::parse_matrix(head + "[[include]]\nmode = \"predict\"\nplatform = \"moon\"\n", "x.toml"),
                    Contains("ib100") && Contains("moon"));
  CHECK_THROWS_WITH(dtnn::parse_matrix(head + "[[include]]\nmode = \"guess\"\n", "x.toml"), Contains("run, predict"));
  CHECK_THROWS_WITH(dtnn::parse_matrix(head + "[[exclude]]\nranks = [1]\n", "x.toml"), Contains("exclude"));
}

TEST_CASE("runner: predicted trials are calibrated from the measured run and stored as predictions", "[runner]") {
  Workspace w("predict");
  const std::string matrix = w.file("predict.toml", kPredictMatrix);
  const std::string log = (w.dir / "run.log").string();
  // The dry run says which trials are predicted and starts nothing.
  REQUIRE(dtnn_cli("run " + matrix + " --dry-run", log) == 0);
  CHECK_THAT(read_text(log), Contains("predicted (model, platform ib100, 4 ranks)"));

  REQUIRE(dtnn_cli("run " + matrix + " --db " + w.db(), log) == 0);
  CHECK_THAT(read_text(log), Contains("2 ok, 0 failed") && Contains("6 predicted"));
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(w.db());
  CHECK(one(s, "SELECT count(*) FROM runs") == "2");  // the measured trial's repeats, nothing predicted
  CHECK(one(s, "SELECT count(*) FROM runs WHERE status = 'ok'") == "2");
  CHECK(one(s, "SELECT count(*) FROM predictions") == "6");  // once each, whatever the repeats
  // The newest ok run of the fewest ranks calibrates every prediction, which joins its group.
  const std::string run = one(s, "SELECT max(id) FROM runs");
  CHECK(one(s, "SELECT count(*) FROM predictions p JOIN prediction_runs l ON l.prediction_id = p.id JOIN runs r "
               "ON r.id = l.run_id WHERE r.id = " + run + " AND p.config_key = r.config_key AND p.environment_id = "
               "r.environment_id AND p.matrix_id = r.matrix_id AND p.mode = 'blocking' AND p.trial_key LIKE "
               "'%mode=predict%'") == "6");
  for (const std::string platform : {"eth10g", "ib100"}) {
    INFO(platform);
    const std::string out = (w.dir / "predict.json").string();
    REQUIRE(dtnn_cli("predict --json --from-run " + run + " --db " + w.db() + " --ranks 1,2,4 --mode blocking "
                     "--platform " + platform, out) == 0);
    const nlohmann::json doc = nlohmann::json::parse(read_text(out));
    const dtnn::QueryResult rows = s.query("SELECT ranks, step_s, samples_per_s, efficiency, label FROM predictions "
                                           "WHERE platform = '" + platform + "' ORDER BY ranks");
    REQUIRE(rows.rows.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(std::stoi(*rows.rows[i][0]) == doc["rows"][i]["ranks"].get<int>());
      CHECK(std::stod(*rows.rows[i][1]) == Approx(doc["rows"][i]["step_s"].get<double>()).epsilon(1e-12));
      CHECK(std::stod(*rows.rows[i][2]) == Approx(doc["rows"][i]["samples_per_s"].get<double>()).epsilon(1e-12));
      CHECK(std::stod(*rows.rows[i][3]) == Approx(doc["rows"][i]["efficiency"].get<double>()).epsilon(1e-12));
      CHECK(*rows.rows[i][4] == "mode=predict;platform=" + platform + ";ranks=" + *rows.rows[i][0]);
    }
  }
  // v_scaling: the measured point and both curves, in one group, labelled.
  const dtnn::QueryResult v = s.query("SELECT source, curve, count(*) FROM v_scaling GROUP BY source, curve ORDER BY 1, 2");
  REQUIRE(v.rows.size() == 3);
  CHECK(*v.rows[0][0] == "measured");
  CHECK(*v.rows[1][1] == "model, eth10g, blocking");
  CHECK(*v.rows[2][1] == "model, ib100, blocking");
  CHECK(*v.rows[2][2] == "3");
  CHECK(one(s, "SELECT count(DISTINCT config_key) FROM v_scaling") == "1");
  // --resume: everything is stored, nothing is predicted twice.
  REQUIRE(dtnn_cli("run " + matrix + " --db " + w.db() + " --resume", log) == 0);
  CHECK_THAT(read_text(log), Contains("0 run(s) to do, 8 already stored ok"));
  CHECK(one(dtnn::ResultStore::open_read_only(w.db()), "SELECT count(*) FROM predictions") == "6");
}

TEST_CASE("runner: a predicted trial without a measured run fails saying what to add", "[runner]") {
  Workspace w("predict_none");
  const std::string matrix = w.file("none.toml", std::string("name = \"none\"\n") + kQuickBase +
                                                     "model = \"simplemlp\"\nmode = \"predict\"\n[axes]\nranks = [8]\n");
  const std::string log = (w.dir / "run.log").string();
  CHECK(dtnn_cli("run " + matrix + " --db " + w.db(), log) == 1);
  CHECK_THAT(read_text(log), Contains("0 ok, 1 failed"));
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(w.db());
  CHECK(one(s, "SELECT status FROM runs") == "failed");
  CHECK_THAT(one(s, "SELECT error FROM runs"), Contains("no ok measured run of this configuration") &&
                                                   Contains("mode = \"run\""));
  CHECK(one(s, "SELECT count(*) FROM predictions") == "0");
  CHECK(one(s, "SELECT count(*) FROM v_scaling") == "0");
  // A measured run of another commit (another environment) does not calibrate it: it did, and the curve was
  // stored under that other environment.
  const std::string measured = w.file("measured.toml", std::string("name = \"measured\"\n") + kQuickBase +
                                                          "model = \"simplemlp\"\n[axes]\nranks = [1]\n");
  REQUIRE(dtnn_cli("run " + measured + " --db " + w.db() + " --commit c0ffee", log) == 0);
  CHECK(dtnn_cli("run " + matrix + " --db " + w.db(), log) == 1);
  CHECK(one(dtnn::ResultStore::open_read_only(w.db()), "SELECT error FROM runs ORDER BY id DESC LIMIT 1")
            .find("on this machine and commit") != std::string::npos);
  // Measured here, it does.
  REQUIRE(dtnn_cli("run " + measured + " --db " + w.db(), log) == 0);
  REQUIRE(dtnn_cli("run " + matrix + " --db " + w.db(), log) == 0);
  const dtnn::ResultStore after = dtnn::ResultStore::open_read_only(w.db());
  CHECK(one(after, "SELECT count(*) FROM predictions p JOIN prediction_runs l ON l.prediction_id = p.id JOIN runs r "
                   "ON r.id = l.run_id WHERE p.environment_id = (SELECT environment_id FROM runs ORDER BY id DESC "
                   "LIMIT 1) AND r.environment_id = p.environment_id") == "1");
}

TEST_CASE("runner: predictor = \"simgrid\" stores the calibration run's SimGrid replay with source simgrid",
          "[runner]") {
  Workspace w("predict_simgrid");
  const std::string matrix = w.file("sg.toml", std::string("name = \"sg\"\nrepeats = 1\n") + kQuickBase +
                                                   R"(model = "simplecnn"
[axes]
ranks = [1]
[[include]]
mode = "predict"
predictor = ["simgrid", "model"]
platform = "eth10g"
ranks = [1, 4]
[[include]]
mode = "predict"
predictor = "simgrid"
platform = "horovod_roce25"
ranks = [4]
)");
  const std::string log = (w.dir / "run.log").string();
  dtnn_cli("run " + matrix + " --db " + w.db(), log);
  const std::string text = read_text(log);
  if (text.find("smpirun not found") != std::string::npos || text.find("is not built") != std::string::npos) {
    DTNN_SKIP("SimGrid is not installed or step_replay_smpi is not built: " + text.substr(text.find("unsupported")));
    return;
  }
  INFO(text);
  CHECK_THAT(text, Contains("1 ok, 0 failed") && Contains("1 unsupported") && Contains("4 predicted"));
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(w.db());
  // The preset without a SimGrid platform file is refused, not approximated.
  CHECK_THAT(one(s, "SELECT error FROM runs WHERE status = 'unsupported'"),
             Contains("no SimGrid platform file for platform horovod_roce25"));
  CHECK(one(s, "SELECT count(*) FROM predictions WHERE source = 'simgrid' AND platform = 'eth10g' AND "
               "model_version LIKE '%SimGrid%'") == "2");
  const std::string run = one(s, "SELECT id FROM runs WHERE status = 'ok'");
  CHECK(one(s, "SELECT count(*) FROM predictions p JOIN prediction_runs l ON l.prediction_id = p.id WHERE "
               "l.run_id = " + run + " AND p.source = 'simgrid'") == "2");
  // One rank: the replay's step is the profile's compute, which is the model's 1-rank step (within the
  // simulation's 1 %); 4 ranks on 10 GbE: the two independent predictions within the required 10 %.
  for (const char* ranks : {"1", "4"}) {
    INFO(ranks << " ranks");
    const double sim = std::stod(one(s, std::string("SELECT step_s FROM predictions WHERE source = 'simgrid' AND "
                                                    "ranks = ") + ranks));
    const double model = std::stod(one(s, std::string("SELECT step_s FROM predictions WHERE source = 'model' AND "
                                                      "ranks = ") + ranks));
    CHECK(sim == Approx(model).epsilon(std::string(ranks) == "1" ? 0.01 : 0.10));
  }
  CHECK(one(s, "SELECT count(*) FROM v_scaling WHERE source = 'simgrid' AND curve = 'simgrid, eth10g, blocking'") ==
        "2");
  // The CLI path refuses what is not a SimGrid prediction, storing nothing.
  const std::string bad = w.file("bad.json", "{\"schema\": \"dtnn.prediction/1\", \"rows\": []}");
  CHECK(dtnn_cli("predict --from-simgrid " + bad + " --store --db " + w.db(), log) == 1);
  CHECK_THAT(read_text(log), Contains("not a SimGrid prediction"));
  CHECK(dtnn_cli("predict --from-simgrid " + bad + " --db " + w.db(), log) == 1);
  CHECK_THAT(read_text(log), Contains("add --store"));
  CHECK(one(dtnn::ResultStore::open_read_only(w.db()), "SELECT count(*) FROM predictions") == "4");  // 2 simgrid + 2 model
}
