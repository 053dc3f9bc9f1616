// `dtnn predict --store`: the rows stored in the predictions table equal, field by field, the rows
// `dtnn predict --json` prints for the same arguments (a different path: the JSON printer against the store's
// columns read back with SQL), with the calibration run and its group; `dtnn query predictions` lists them;
// v_scaling shows them as model rows. Bad input is one line, exit 1, and writes nothing.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "results/store.h"
#include "stored_run.h"

using Catch::Matchers::Contains;

namespace {

std::string count_predictions(const std::string& db) {
  return dtnn::ResultStore::open_read_only(db).query("SELECT count(*) FROM predictions").rows.at(0).at(0).value();
}

}  // namespace

TEST_CASE("dtnn predict --store: the stored rows are --json's rows, with the calibration run", "[perfmodel]") {
  const std::string db = dtnn::test::temp_path("predict_store.db");
  std::filesystem::remove(db);
  const int64_t run = dtnn::test::store_trained_run(db, {{"model", "simplecnn"}, {"ranks", "1"}}, "model=simplecnn");
  const std::string args = "predict --from-run " + std::to_string(run) + " --db " + db +
                           " --ranks 1,2,...,64 --platform eth10g --mode blocking";
  const dtnn::test::Command printed = dtnn::test::run_dtnn(args + " --json");
  REQUIRE(printed.status == 0);
  const nlohmann::json doc = nlohmann::json::parse(printed.out);
  REQUIRE(doc["rows"].size() == 7);
  CHECK(count_predictions(db) == "0");  // --json alone stores nothing

  const dtnn::test::Command stored = dtnn::test::run_dtnn(args + " --store");
  REQUIRE(stored.status == 0);
  CHECK_THAT(stored.out, Contains("Every row is a prediction"));
  CHECK_THAT(stored.out, Contains("stored 7 predicted rows in " + db));
  const dtnn::ResultStore store = dtnn::ResultStore::open_read_only(db);
  const dtnn::QueryResult rows = store.query(
      "SELECT ranks, samples_per_rank, step_s, compute_s, exposed_s, comm_s, samples_per_s, efficiency, algorithms, "
      "speedup, global_batch, source, model_version, model_kind, model, platform, rules, mode, scaling, batch_size, "
      "environment_id, config_key, matrix_id, (SELECT group_concat(run_id) FROM prediction_runs WHERE prediction_id = "
      "p.id) FROM predictions p ORDER BY id");
  REQUIRE(rows.rows.size() == doc["rows"].size());
  const dtnn::QueryResult group =
      store.query("SELECT environment_id, config_key, matrix_id FROM runs WHERE id = " + std::to_string(run));
  for (size_t i = 0; i < rows.rows.size(); ++i) {
    const auto& r = rows.rows[i];
    const nlohmann::json& j = doc["rows"][i];
    INFO("row " << i);
    CHECK(std::stoi(*r[0]) == j["ranks"].get<int>());
    int c = 1;
    for (const char* key : {"samples_per_rank", "step_s", "compute_s", "exposed_s", "comm_s", "samples_per_s", "efficiency"})
      CHECK(std::stod(*r[c++]) == Approx(j[key].get<double>()).epsilon(1e-12));
    CHECK(*r[8] == j["allreduce"].get<std::string>());
    CHECK(std::stod(*r[9]) == Approx(j["efficiency"].get<double>() * j["ranks"].get<int>()).epsilon(1e-12));
    CHECK(std::stod(*r[10]) == Approx(j["samples_per_rank"].get<double>() * j["ranks"].get<int>()).epsilon(1e-12));
    CHECK(*r[11] == "model");
    CHECK(*r[12] == doc["model_version"].get<std::string>());
    CHECK(*r[13] == "dtnn");
    CHECK(*r[14] == "simplecnn");
    CHECK(*r[15] == "eth10g");
    CHECK(*r[16] == doc["rules"].get<std::string>());
    CHECK(*r[17] == "blocking");
    CHECK(*r[18] == "weak");
    CHECK(std::stoll(*r[19]) == doc["batch_size"].get<int64_t>());
    CHECK(r[20] == group.rows[0][0]);
    CHECK(*r[21] == "model=simplecnn");
    CHECK(r[22] == group.rows[0][2]);
    CHECK(*r[23] == std::to_string(run));
  }
  // v_scaling: the measured 1-rank run and the predicted curve beside it, labelled.
  const dtnn::QueryResult scaling = store.query("SELECT source, curve, count(*), max(runs) FROM v_scaling "
                                                "WHERE config_key = 'model=simplecnn' GROUP BY source ORDER BY source");
  REQUIRE(scaling.rows.size() == 2);
  CHECK(*scaling.rows[0][0] == "measured");
  CHECK(*scaling.rows[1][0] == "model");
  CHECK(*scaling.rows[1][1] == "model, eth10g, blocking");
  CHECK(*scaling.rows[1][2] == "7");
  CHECK(*scaling.rows[1][3] == "0");
  // dtnn query predictions lists them; --store --json prints what --json prints.
  const dtnn::test::Command listed = dtnn::test::run_dtnn("query predictions --format json --db " + db);
  REQUIRE(listed.status == 0);
  const nlohmann::json list = nlohmann::json::parse(listed.out);
  REQUIRE(list.size() == 7);
  CHECK(list[6]["ranks"] == 64);
  CHECK(list[6]["calibration_runs"].get<double>() == static_cast<double>(run));  // a number in JSON
  const dtnn::test::Command both = dtnn::test::run_dtnn(args + " --store --json");
  REQUIRE(both.status == 0);
  CHECK(nlohmann::json::parse(both.out)["rows"] == doc["rows"]);
  CHECK(count_predictions(db) == "14");
  // Other link rates are other curves (both named eth10g*), not the newest replacing the other.
  REQUIRE(dtnn::test::run_dtnn(args + " --inter_gbps 100 --store").status == 0);
  REQUIRE(dtnn::test::run_dtnn(args + " --inter_gbps 1 --store").status == 0);
  const dtnn::QueryResult curves = dtnn::ResultStore::open_read_only(db).query(
      "SELECT curve, count(*) FROM v_scaling WHERE source = 'model' GROUP BY curve ORDER BY curve");
  REQUIRE(curves.rows.size() == 3);
  CHECK(*curves.rows[0][0] == "model, eth10g*, blocking (inter 1 Gb/s)");
  CHECK(*curves.rows[1][0] == "model, eth10g*, blocking (inter 100 Gb/s)");
  CHECK(*curves.rows[2][0] == "model, eth10g, blocking");
  for (const auto& row : curves.rows) CHECK(*row[1] == "7");
  // PyDTNN's formulas: its batch per rank is stored too (it was NULL), and its options make its variant.
  REQUIRE(dtnn::test::run_dtnn("predict --model_kind pydtnn --model simplecnn --batch_size 32 --ranks 1,2 "
                               "--network_bw 1e9 --store --db " + db).status == 0);
  const dtnn::QueryResult py = dtnn::ResultStore::open_read_only(db).query(
      "SELECT DISTINCT batch_size, variant FROM predictions WHERE model_kind = 'pydtnn'");
  REQUIRE(py.rows.size() == 1);
  CHECK(*py.rows[0][0] == "32");
  CHECK(*py.rows[0][1] == "batch 32; network_bw 1e+09");
  std::filesystem::remove(db);
}

TEST_CASE("dtnn predict --store: bad input is one line, exit 1, and nothing stored", "[perfmodel]") {
  const std::string db = dtnn::test::temp_path("predict_store_bad.db");
  std::filesystem::remove(db);
  const int64_t run = dtnn::test::store_trained_run(db, {{"model", "simplecnn"}, {"ranks", "1"}});
  const std::string from = "predict --store --db " + db + " --from-run " + std::to_string(run);
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {from + " --ranks 0", "--ranks"},
           {from + " --mode async", "--mode must be blocking or non_blocking"},
           {from + " --platform moon", "moon"},
           {"predict --store --db " + db + " --from-run 999", "no such run"},
           {"predict --store --db " + db + " --model_kind pydtnn", "needs --model"}}) {
    INFO(args);
    const dtnn::test::Command c = dtnn::test::run_dtnn(args);
    CHECK(c.status == 1);
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Contains(says));
  }
  // --from-simgrid reads a file from elsewhere (suites/step_replay/simgrid_replay.sh's output): this run's own
  // prediction marked as SimGrid's, then broken one field at a time. A 1e30 rank count was cast to int
  // (undefined behaviour); a schema or source of another type escaped as nlohmann's type_error.
  const dtnn::test::Command good =
      dtnn::test::run_dtnn("predict --db " + db + " --from-run " + std::to_string(run) + " --json");
  REQUIRE(good.status == 0);
  nlohmann::json doc = nlohmann::json::parse(good.out);
  doc["source"] = "simgrid";
  doc.erase("source_run");
  using Edit = std::function<void(nlohmann::json&)>;
  for (const auto& [edit, says] : std::vector<std::pair<Edit, std::string>>{
           {[](nlohmann::json& d) { d["source"] = 5; }, "not a SimGrid prediction"},
           {[](nlohmann::json& d) { d["schema"] = 5; }, "not a dtnn.prediction/1 document"},
           {[](nlohmann::json& d) { d["rows"][0]["ranks"] = 1e30; }, "field 'ranks' holds 1e+30"},
           {[](nlohmann::json& d) { d["rows"][0]["ranks"] = 0; }, "field 'ranks' holds 0, not a rank count"},
           {[](nlohmann::json& d) { d["batch_size"] = "big"; }, "field 'batch_size' holds a string"}}) {
    INFO(says);
    nlohmann::json bad = doc;
    edit(bad);
    const std::string file = dtnn::test::temp_path("predict_store_bad.json");
    std::ofstream(file) << bad.dump();
    const dtnn::test::Command c = dtnn::test::run_dtnn("predict --from-simgrid " + file + " --store --db " + db);
    CHECK(c.status == 1);
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Contains(file) && Contains(says));
  }
  CHECK(count_predictions(db) == "0");
  // A database that does not exist is not created.
  const std::string missing = dtnn::test::temp_path("predict_store_missing.db");
  std::filesystem::remove(missing);
  const dtnn::test::Command c =
      dtnn::test::run_dtnn("predict --store --model_kind pydtnn --model simplecnn --db " + missing);
  CHECK(dtnn::test::one_line_error(c));
  CHECK_THAT(c.err, Contains("no such results database"));
  CHECK(!std::filesystem::exists(missing));
  std::filesystem::remove(db);
}
