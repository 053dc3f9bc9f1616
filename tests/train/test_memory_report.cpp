// The run report's measured memory against what the run must at least have held: the model's planned buffers
// (its own "buffer_bytes" record, summed here) are part of the peak resident memory, and a batch 64 times
// larger grows the peak by at least half of what its plan grows (the buffers are zero-filled, so resident). On a
// GPU (skipped without one), the device peak holds the planned buffers.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "cli_helpers.h"
#include "gpu/gpu_ready.h"
#include "helpers.h"

namespace {

nlohmann::json train_report(int batch) {
  const std::string path = dtnn::test::temp_path("memory_" + std::to_string(batch) + ".json");
  const dtnn::test::Command c = dtnn::test::run_dtnn(
      "train --model=simplecnn --use_synthetic_data --num_epochs=1 --steps_per_epoch=2 --threads=1 --progress=False "
      "--batch_size=" + std::to_string(batch) + " --report=" + path);
  REQUIRE(c.status == 0);
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

int64_t planned(const nlohmann::json& report) {
  int64_t sum = 0;
  for (const auto& [name, bytes] : report["model"]["buffer_bytes"].items()) sum += bytes.get<int64_t>();
  return sum;
}

}  // namespace

TEST_CASE("report: measured memory holds the planned buffers and grows with them", "[train]") {
  const nlohmann::json small = train_report(16), large = train_report(1024);
  for (const nlohmann::json* r : {&small, &large}) {
    const nlohmann::json& m = (*r)["memory"];
    CHECK(m["planned_bytes"].get<int64_t>() == planned(*r));
    REQUIRE(m["peak_rss_bytes"].size() == 1);  // one rank
    CHECK(m["peak_rss_bytes_max"] == m["peak_rss_bytes"][0]);
    CHECK(m["peak_rss_bytes_max"].get<int64_t>() >= planned(*r));
    CHECK_FALSE(m.contains("device_peak_bytes"));  // a CPU run
  }
  const int64_t plan_growth = planned(large) - planned(small);
  const int64_t rss_growth = large["memory"]["peak_rss_bytes_max"].get<int64_t>() -
                             small["memory"]["peak_rss_bytes_max"].get<int64_t>();
  CHECK(plan_growth > 0);
  CHECK(rss_growth >= plan_growth / 2);
}

TEST_CASE("gpu: the run report's device peak holds the model's planned buffers", "[gpu]") {
  if (!dtnn::test::gpu_ready()) return;
  const std::string path = dtnn::test::temp_path("memory_gpu.json");
  const dtnn::test::Command c = dtnn::test::run_dtnn(
      "train --model=simplecnn --use_synthetic_data --num_epochs=1 --steps_per_epoch=2 --enable_gpu=True "
      "--progress=False --batch_size=256 --report=" + path);
  REQUIRE(c.status == 0);
  std::ifstream f(path);
  const nlohmann::json report = nlohmann::json::parse(f);
  const nlohmann::json& m = report["memory"];
  REQUIRE(m.contains("device_peak_bytes"));
  // Every planned buffer lives on the device; the device in use holds dtnn's bytes and the CUDA context's.
  CHECK(m["device_peak_bytes_max"].get<int64_t>() >= planned(report));
  CHECK(m["device_used_bytes"][0].get<int64_t>() >= m["device_peak_bytes"][0].get<int64_t>());
}
