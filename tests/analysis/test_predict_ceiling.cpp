// The contention ceiling stored per machine and model (experiments/contention_ceiling.sh's file, `dtnn ingest`)
// and applied by `dtnn predict` (analysis/perfmodel/predict_ceiling.h): on a localhost platform for a profile
// of that machine and model, the newest row per rank count, with its step jitter; not on another platform,
// another machine or model, or with --ceiling none; a given --ceiling or --step_jitter wins. Bad files are one
// line, a non-zero exit and nothing stored. The jitter's E[max of n normals] against published values.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/perfmodel/step_model.h"
#include "cli_helpers.h"
#include "core/file_io.h"
#include "results/store.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json ceiling_doc(const std::string& machine, double alone, double independent, const std::string& when) {
  return {{"schema", "dtnn.contention_ceiling/1"}, {"machine_key", machine}, {"model", "simplecnn"},
          {"dataset", "mnist"}, {"ranks", 2}, {"ceiling", independent / alone}, {"alone_samples_per_s", alone},
          {"independent_samples_per_s", independent}, {"data_parallel_samples_per_s", 0.9 * independent},
          {"step_jitter", 0.05},
          {"rounds", 3}, {"epochs", 3}, {"dtnn_commit", "abc"}, {"measured_at", when}};
}

std::string write_doc(const std::string& name, const json& doc) {
  const std::string path = dtnn::test::temp_path(name);
  std::ofstream(path) << doc.dump();
  return path;
}

// The 2-rank row's compute over the 1-rank row's, the notes and the variant of a --json prediction.
struct Predicted {
  double compute_ratio = 0;
  double compute2 = 0, exposed2 = 0;  // the 2-rank row's seconds
  std::string notes, variant;
};

Predicted predict(const std::string& report, const std::string& db, const std::string& more) {
  const dtnn::test::Command c = dtnn::test::run_dtnn("predict --from-report " + report + " --db " + db +
                                                     " --ranks 1,2 --mode blocking --json " + more);
  INFO(c.err);
  REQUIRE(c.status == 0);
  const json j = json::parse(c.out);
  Predicted p;
  p.compute_ratio = j["rows"][1]["compute_s"].get<double>() / j["rows"][0]["compute_s"].get<double>();
  p.compute2 = j["rows"][1]["compute_s"].get<double>();
  p.exposed2 = j["rows"][1]["exposed_s"].get<double>();
  p.notes = j["notes"].dump();
  p.variant = j["variant"].get<std::string>();
  return p;
}

int64_t stored_rows(const std::string& db) {
  return std::stoll(*dtnn::ResultStore::open_read_only(db).query("SELECT count(*) FROM contention_ceilings").rows[0][0]);
}

}  // namespace

TEST_CASE("dtnn predict: a stored contention ceiling applies to its machine and model on localhost platforms",
          "[perfmodel]") {
  const std::string report = dtnn::test::temp_path("ceiling_report.json"), db = dtnn::test::temp_path("ceiling.db");
  std::filesystem::remove(db);
  REQUIRE(dtnn::test::run_dtnn("train --model=simplecnn --use_synthetic_data=True --steps_per_epoch=3 "
                               "--evaluate_on_test=False --progress=False --report=" + report).status == 0);
  const std::string machine = json::parse(dtnn::read_file(report))["environment"]["machine"]["key"];
  REQUIRE(!machine.empty());
  // No store yet: no ceiling.
  CHECK(predict(report, db, "--platform localhost2").compute_ratio == Approx(1.0));

  const std::string first = write_doc("ceiling1.json", ceiling_doc(machine, 1000, 1600, "2026-01-01T00:00:00Z"));
  const dtnn::test::Command in = dtnn::test::run_dtnn("ingest " + first + " --db " + db);
  REQUIRE(in.status == 0);
  CHECK_THAT(in.out, Contains("1 row(s) from contention_ceiling"));
  CHECK_THAT(dtnn::test::run_dtnn("ingest " + first + " --db " + db).out, Contains("1 of them already stored"));
  CHECK(stored_rows(db) == 1);

  const Predicted stored = predict(report, db, "--platform localhost2");
  CHECK(stored.compute_ratio == Approx(2.0 / 1.6).epsilon(1e-6));  // ranks sharing the node compute 2/1.6 slower
  CHECK_THAT(stored.notes, Contains("stored for this machine and simplecnn"));
  CHECK_THAT(stored.variant, Contains("ceiling 2:1.600"));
  CHECK_THAT(stored.variant, Contains("step jitter 0.0500"));
  // The slowest of 2 ranks ends its backward pass 0.05 * compute * E[max of 2 normals] after the mean one.
  const Predicted steady = predict(report, db, "--platform localhost2 --step_jitter 0");
  CHECK(steady.compute2 == Approx(stored.compute2));
  CHECK(stored.exposed2 - steady.exposed2 == Approx(0.05 * stored.compute2 / std::sqrt(M_PI)).epsilon(1e-6));
  CHECK(predict(report, db, "--platform localhost2_tcp").compute_ratio == Approx(2.0 / 1.6).epsilon(1e-6));
  CHECK(predict(report, db, "--platform localhost2 --ceiling none").compute_ratio == Approx(1.0));
  const Predicted given = predict(report, db, "--platform localhost2 --ceiling 2:1.8");
  CHECK(given.compute_ratio == Approx(2.0 / 1.8).epsilon(1e-6));
  CHECK_THAT(given.notes, Contains("(given)"));
  CHECK(given.exposed2 == Approx(steady.exposed2).epsilon(1e-9));  // a given ceiling brings no stored jitter
  // Another platform's nodes are other machines: not applied, and said.
  const Predicted other = predict(report, db, "--platform ib100");
  CHECK(other.compute_ratio == Approx(1.0));
  CHECK_THAT(other.notes, Contains("other machines"));

  // The newest measurement wins; another machine's is never used.
  const std::string newer = write_doc("ceiling2.json", ceiling_doc(machine, 1000, 1900, "2026-02-01T00:00:00Z"));
  const std::string elsewhere = write_doc("ceiling3.json", ceiling_doc("AuthenticAMD 25/1/1 'other'", 1000, 1200,
                                                                       "2026-03-01T00:00:00Z"));
  REQUIRE(dtnn::test::run_dtnn("ingest " + newer + " " + elsewhere + " --db " + db).status == 0);
  CHECK(predict(report, db, "--platform localhost2").compute_ratio == Approx(2.0 / 1.9).epsilon(1e-6));
  for (const std::string& f : {first, newer, elsewhere}) std::filesystem::remove(f);
  std::filesystem::remove(report);
  std::filesystem::remove(db);
}

TEST_CASE("step model: E[max of n standard normals] as tabulated", "[perfmodel]") {
  CHECK(dtnn::perf::expected_max_normal(1) == 0.0);
  CHECK(dtnn::perf::expected_max_normal(2) == Approx(1 / std::sqrt(M_PI)).epsilon(1e-9));  // exact
  CHECK(dtnn::perf::expected_max_normal(3) == Approx(1.5 / std::sqrt(M_PI)).epsilon(1e-9));  // exact
  CHECK(dtnn::perf::expected_max_normal(4) == Approx(1.029375).epsilon(1e-5));  // Tippett (1925)
  CHECK(dtnn::perf::expected_max_normal(16) == Approx(1.765991).epsilon(1e-5));
  CHECK(dtnn::perf::expected_max_normal(100) == Approx(2.507594).epsilon(1e-5));
}

TEST_CASE("dtnn ingest: a bad contention ceiling file is one line, a non-zero exit and nothing stored",
          "[perfmodel]") {
  const std::string db = dtnn::test::temp_path("ceiling_bad.db");
  std::filesystem::remove(db);
  const json good = ceiling_doc("GenuineIntel 6/1/1 'x'", 1000, 1600, "2026-01-01T00:00:00Z");
  json above = good, inconsistent = good, no_machine = good, one_rank = good, bad_rate = good, jitter = good;
  above["ceiling"] = 2.2, above["independent_samples_per_s"] = 2200;
  inconsistent["ceiling"] = 1.7;
  no_machine.erase("machine_key");
  one_rank["ranks"] = 1;
  bad_rate["alone_samples_per_s"] = -5;
  jitter["step_jitter"] = "high";
  const std::pair<json, const char*> cases[] = {{above, "is not a contention ceiling"},
                                                {inconsistent, "is not independent_samples_per_s / alone"},
                                                {no_machine, "no 'machine_key' field"},
                                                {one_rank, "'ranks' is not an integer from 2"},
                                                {bad_rate, "'alone_samples_per_s' is not a positive number"},
                                                {jitter, "'step_jitter' is not a number from 0 to 1"}};
  const std::string ok = write_doc("ceiling_ok.json", good);
  for (const auto& [doc, why] : cases) {
    INFO(why);
    const std::string bad = write_doc("ceiling_bad.json", doc);
    const dtnn::test::Command c = dtnn::test::run_dtnn("ingest " + ok + " " + bad + " --db " + db);
    CHECK(c.status != 0);
    CHECK_THAT(c.err, Contains(why));
    CHECK(std::count(c.err.begin(), c.err.end(), '\n') == 1);
    std::filesystem::remove(bad);
  }
  CHECK(!std::filesystem::exists(db));  // every file is read before the store is opened
  std::filesystem::remove(ok);
}
