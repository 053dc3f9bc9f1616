// The two readers of dtnn.step_profile/1 (analysis/perfmodel/STEP_PROFILE.md): dtnn predict's
// (parse_step_profile) and the SimGrid replay proxy's header-only one (step_replay::parse_profile). Both read
// files a user may edit; on numbers out of range they must refuse with one line naming the field rather
// than cast or overflow (each case below was undefined behaviour, or an unnamed nlohmann exception, before:
// found by tests/fuzz/fuzz_step_profile's properties and by hand). The profiles are edits of a real one.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "analysis/perfmodel/step_profile.h"
#include "core/error.h"
#include "suites/step_replay/profile.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// A valid non_blocking profile: input + two layers, two buckets covering 300 floats.
json valid() {
  return json::parse(R"({"schema": "dtnn.step_profile/1", "model": "m", "batch_size": 8, "mode": "non_blocking",
    "layers": [{"id": 0, "type": "Input", "params": 0, "forward_s": 0, "backward_s": 0},
               {"id": 1, "type": "FC", "params": 200, "forward_s": 1e-4, "backward_s": 2e-4},
               {"id": 2, "type": "FC", "params": 100, "forward_s": 1e-4, "backward_s": 2e-4}],
    "loss_s": 1e-5, "update_s_per_float": 1e-9, "other_s": 0,
    "buckets": [{"floats": 100, "ready_after": 2}, {"floats": 200, "ready_after": 1}], "total_floats": 300,
    "provenance": {"notes": ["hand"], "ranks": 2, "threads": 1, "mode": "blocking", "bucket_mb": 25}})");
}

std::string dtnn_refusal(const json& j) {
  try {
    dtnn::perf::parse_step_profile(j.dump(), "p.json");
  } catch (const dtnn::Error& e) {
    return e.what();
  }
  return "accepted";
}

std::string replay_refusal(const json& j) {
  try {
    step_replay::parse_profile(j);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("step profile readers: both accept a valid profile alike", "[perfmodel]") {
  const dtnn::perf::StepProfile p = dtnn::perf::parse_step_profile(valid().dump(), "p.json");
  const step_replay::Profile r = step_replay::parse_profile(valid());
  CHECK(p.total_floats == 300);
  CHECK(r.total_floats == 300);
  REQUIRE(r.buckets.size() == 2);
  CHECK(r.buckets[1].begin == 100);
  CHECK(p.provenance.ranks == 2);
  CHECK(p.provenance.bucket_mb == 25.0);
  CHECK(dtnn::perf::profile_compute_s(p) == Approx(r.compute_s()));
}

TEST_CASE("step profile readers: buckets whose sum overflows are refused, not summed", "[perfmodel]") {
  json j = valid();
  j["buckets"] = json::array({{{"floats", INT64_MAX - 10}, {"ready_after", 2}}, {{"floats", INT64_MAX - 10}, {"ready_after", 1}}});
  CHECK_THAT(dtnn_refusal(j), Contains("p.json: the buckets hold more than total_floats (300)"));
  CHECK_THAT(replay_refusal(j), Contains("the buckets hold more than total_floats (300)"));
  // Fewer than total_floats: dtnn names both sums.
  j["buckets"] = json::array({{{"floats", 100}, {"ready_after", 2}}});
  CHECK_THAT(dtnn_refusal(j), Contains("the buckets hold 100 floats but total_floats is 300"));
  CHECK_THAT(replay_refusal(j), Contains("the buckets hold 100 floats, total_floats is 300"));
}

TEST_CASE("step profile readers: integers out of range are refused, not cast", "[perfmodel]") {
  for (const json& big : {json(1e30), json(18446744073709551615ull), json(2.5)}) {
    INFO(big.dump());
    json j = valid();
    j["total_floats"] = big;
    CHECK_THAT(dtnn_refusal(j), Contains("\"total_floats\" must be an integer") || Contains("\"total_floats\" is too large"));
    CHECK_THAT(replay_refusal(j), Contains("\"total_floats\" must be an integer that fits 64 bits"));
    j = valid();
    j["layers"][1]["id"] = big;
    CHECK_THAT(dtnn_refusal(j), Contains("layers[1]"));
    CHECK_THAT(replay_refusal(j), Contains("layers[1].id must be an integer"));
  }
  json j = valid();
  j["layers"][1]["id"] = int64_t{1} << 40;
  CHECK_THAT(dtnn_refusal(j), Contains("p.json: layers[1].id does not fit an int"));
}

TEST_CASE("step profile readers: dtnn's reader checks the provenance's types", "[perfmodel]") {
  const std::vector<std::pair<std::string, json>> cases = {
      {"ranks", "two"}, {"ranks", 1e30}, {"threads", -1}, {"nodes", 2.5}, {"bucket_mb", "25"}, {"mode", 3},
      {"measured_step_s", "fast"}};
  for (const auto& [key, value] : cases) {
    INFO(key << " = " << value.dump());
    json j = valid();
    j["provenance"][key] = value;
    const std::string why = dtnn_refusal(j);
    CHECK_THAT(why, Contains("p.json: provenance: ") && Contains(key));
    CHECK(why.find('\n') == std::string::npos);
  }
}
