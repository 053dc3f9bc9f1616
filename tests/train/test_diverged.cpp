// Runs whose numbers are not finite: a training loss that becomes NaN/Inf ends `dtnn train` with
// kDivergedExit, a report saying "diverged" and no weights, history or checkpoint from that state.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_helpers.h"
#include "core/error.h"
#include "helpers.h"

using namespace dtnn;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// simplemlp on synthetic data with a learning rate so large that the first epoch's loss is NaN.
const std::string kDiverging =
    "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=5 --threads=1 --learning_rate=3e38";

}  // namespace

TEST_CASE("cli: a diverged run exits kDivergedExit with a diverged report and writes nothing else", "[cli]") {
  const std::string report = test::temp_path("dv_report.json"), history = test::temp_path("dv_history.txt");
  const std::string weights = test::temp_path("dv_weights.npz"), ckpt = test::temp_path("dv_ckpt.npz");
  for (const auto& f : {report, history, weights, ckpt}) fs::remove(f);
  // Weights from a sane run: the diverged run starts from them and must leave them as they were.
  REQUIRE(test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --threads=1 "
                         "--weights_and_bias_filename=" + weights).status == 0);
  const std::string before = slurp(weights);

  const test::Command c = test::run_dtnn(kDiverging + " --num_epochs=3 --report=" + report + " --history_file=" +
                                         history + " --checkpoint_file=" + ckpt + " --weights_and_bias_filename=" + weights);
  INFO(c.err);
  CHECK(c.status == kDivergedExit);
  CHECK(test::one_line_error(c));
  CHECK(c.err.rfind("dtnn: diverged: the training loss (categorical_cross_entropy) is nan after epoch 1", 0) == 0);
  CHECK(slurp(weights) == before);
  CHECK_FALSE(fs::exists(history));
  CHECK_FALSE(fs::exists(ckpt));
  REQUIRE(fs::exists(report));
  const nlohmann::json j = nlohmann::json::parse(slurp(report));
  CHECK(j["status"] == "diverged");
  CHECK(j["error"].get<std::string>().rfind("diverged: ", 0) == 0);
  REQUIRE(j["epochs"].size() == 1);  // the epoch that diverged, its loss null (JSON has no NaN)
  CHECK(j["epochs"][0]["train"]["categorical_cross_entropy"].is_null());
  CHECK_FALSE(j.contains("test"));
  for (const auto& f : {report, history, weights, ckpt}) fs::remove(f);
}

TEST_CASE("cli: an ok run's report says status ok", "[cli]") {
  const std::string report = test::temp_path("ok_report.json");
  REQUIRE(test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --threads=1 --report=" +
                         report).status == 0);
  CHECK(nlohmann::json::parse(slurp(report))["status"] == "ok");
  fs::remove(report);
}
