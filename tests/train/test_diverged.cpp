// Runs whose numbers are not finite: a training loss that becomes NaN/Inf ends `dtnn train` with
// kDivergedExit, a report saying "diverged" and no weights, history or checkpoint from that state; weights
// files and checkpoints holding NaN/Inf (or a negative step count) are refused with one line.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_helpers.h"
#include "core/error.h"
#include "helpers.h"
#include "io/npz.h"
#include "io/npz_values.h"

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

// A copy of the NPZ at `from` with array `key`'s element 0 set to `value` (float32, float64 or int64 arrays).
std::string tampered(const std::string& from, const std::string& key, double value) {
  std::vector<io::NpyArray> arrays = io::read_npz(from);
  bool found = false;
  for (io::NpyArray& a : arrays) {
    if (a.name != key) continue;
    found = true;
    if (a.dtype == io::NpyDType::f32) reinterpret_cast<float*>(a.bytes.data())[0] = static_cast<float>(value);
    else if (a.dtype == io::NpyDType::f64) reinterpret_cast<double*>(a.bytes.data())[0] = value;
    else reinterpret_cast<int64_t*>(a.bytes.data())[0] = static_cast<int64_t>(value);
  }
  REQUIRE(found);
  const std::string to = test::temp_path("tampered_" + key + ".npz");
  io::write_npz(to, arrays, false);
  return to;
}

}  // namespace

TEST_CASE("cli: weights files and checkpoints holding NaN, infinities or negative step counts are refused",
          "[cli][checkpoint]") {
  const std::string ckpt = test::temp_path("finite_ckpt.npz");
  const std::string sane = "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --threads=1 "
                           "--optimizer=adam --num_epochs=2";
  REQUIRE(test::run_dtnn(sane + " --num_epochs=1 --checkpoint_file=" + ckpt).status == 0);
  REQUIRE(test::run_dtnn(sane + " --resume_from=" + ckpt).status == 0);  // the untouched file resumes
  const double nan = std::nan(""), inf = HUGE_VAL;
  const struct {
    const char* key;
    double value;
    const char* says;
  } cases[] = {{"2_FC_weights", nan, "array '2_FC_weights' holds NaN"},
               {"2_FC_biases", inf, "array '2_FC_biases' holds an infinity"},
               {"dtnn_epochs", nan, "array 'dtnn_epochs' holds NaN"},
               {"dtnn_optimizer_m", inf, "array 'dtnn_optimizer_m' holds an infinity"},
               {"dtnn_learning_rate", inf, "positive finite rate"},
               {"dtnn_optimizer_steps", -3, "negative step count (-3)"},
               {"dtnn_optimizer_steps", 4611686018427387904.0, "4611686018427387904 steps, more than the"}};
  for (const auto& c : cases) {
    const std::string bad = tampered(ckpt, c.key, c.value);
    const test::Command r = test::run_dtnn(sane + " --resume_from=" + bad);
    INFO(c.key << ": " << r.err);
    CHECK(test::one_line_error(r));
    CHECK(r.err.find(c.says) != std::string::npos);
    if (std::string(c.key).rfind("dtnn_", 0) != 0) {  // the same arrays as a weights file
      const test::Command w = test::run_dtnn(sane + " --weights_and_bias_filename=" + bad);
      INFO(w.err);
      CHECK(test::one_line_error(w));
      CHECK(w.err.find(c.says) != std::string::npos);
    }
    fs::remove(bad);
  }
  // An options record naming the seed twice (the first value would pass the check, the second be ignored).
  std::vector<io::NpyArray> arrays = io::read_npz(ckpt);
  for (io::NpyArray& a : arrays)
    if (a.name == "dtnn_options")
      a = io::make_text("dtnn_options", std::string(a.bytes.begin(), a.bytes.end()) + "seed=7\n");
  const std::string twice = test::temp_path("seed_twice.npz");
  io::write_npz(twice, arrays, false);
  const test::Command r = test::run_dtnn(sane + " --resume_from=" + twice);
  INFO(r.err);
  CHECK(test::one_line_error(r));
  CHECK(r.err.find("names seed twice") != std::string::npos);
  fs::remove(twice);
  fs::remove(ckpt);
}

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

TEST_CASE("cli: weights the last update left non-finite, or a non-finite test loss, are a divergence", "[cli]") {
  // One step: the epoch's loss is computed before its update, so it is finite. RMSprop's first step is
  // lr * g / sqrt(0.1 g^2) = 3.16 lr: inf at 3e38. SGD's leaves finite weights of ~1e35 whose test pass
  // overflows to nan. Both ran "ok", the first writing inf/NaN weights (which dtnn then refuses to load).
  const std::string report = test::temp_path("last_update_report.json"), weights = test::temp_path("last_update.npz");
  const std::string one_step = "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=1 --num_epochs=1 "
                               "--batch_size=8 --threads=1 --learning_rate=3e38 --report=" + report +
                               " --weights_and_bias_filename=" + weights;
  for (const auto& [optimizer, says] :
       {std::pair<std::string, std::string>{"rmsprop", "dtnn: diverged: the weights are not finite after epoch 1 (learning rate"},
        {"sgd", "dtnn: diverged: the test loss (categorical_cross_entropy) is nan with finite weights"}}) {
    INFO(optimizer);
    fs::remove(weights);
    fs::remove(report);
    const test::Command c = test::run_dtnn(one_step + " --optimizer=" + optimizer);
    INFO(c.out << c.err);
    CHECK(c.status == kDivergedExit);
    CHECK(test::one_line_error(c));
    CHECK(c.err.rfind(says, 0) == 0);
    CHECK_FALSE(fs::exists(weights));
    const nlohmann::json j = nlohmann::json::parse(slurp(report));
    CHECK(j["status"] == "diverged");
    CHECK(j.contains("test") == (optimizer == "sgd"));
  }
  // A rate float32 cannot hold is refused before anything runs.
  const test::Command big = test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --learning_rate=1e300");
  CHECK(test::one_line_error(big));
  CHECK(big.err.find("--learning_rate: expected a finite number in (0, 3.4028234663852886e+38], got '1e300'") != std::string::npos);
  fs::remove(report);
}

TEST_CASE("cli: an ok run's report says status ok", "[cli]") {
  const std::string report = test::temp_path("ok_report.json");
  REQUIRE(test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --threads=1 --report=" +
                         report).status == 0);
  CHECK(nlohmann::json::parse(slurp(report))["status"] == "ok");
  fs::remove(report);
}

TEST_CASE("cli: a checkpoint's scheduler state names no file to remove and holds whole counts", "[cli][checkpoint]") {
  // model_checkpoint removes its previous weights file when it saves the next; that name came from the
  // checkpoint unchecked, so a crafted checkpoint removed any file it named. Counts of 1e300 were cast to
  // integers (undefined behaviour).
  const fs::path dir = test::temp_path("ckpt_sched"), was = fs::current_path();
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::current_path(dir);  // model_checkpoint writes ./model-...npz
  const std::string ckpt = (dir / "ck.npz").string(), victim = (dir / "victim.txt").string();
  std::ofstream(victim) << "keep\n";
  const std::string run = "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --threads=1 "
                          "--validation_split=0.2 --lr_schedulers=model_checkpoint --model_checkpoint_save_freq=1 "
                          "--num_epochs=2";
  REQUIRE(test::run_dtnn(run + " --num_epochs=1 --checkpoint_file=" + ckpt).status == 0);
  const std::string key = "dtnn_scheduler_0_model_checkpoint";
  std::vector<io::NpyArray> arrays = io::read_npz(ckpt);
  for (io::NpyArray& a : arrays)
    if (a.name == key + "_last_file") a = io::make_text(a.name, victim);
  const std::string hostile = (dir / "hostile.npz").string();
  io::write_npz(hostile, arrays, false);
  const test::Command r = test::run_dtnn(run + " --resume_from=" + hostile);
  INFO(r.out << r.err);
  CHECK(test::one_line_error(r));
  CHECK(r.err.find("not a weights file model_checkpoint writes for simplemlp") != std::string::npos);
  CHECK(fs::exists(victim));
  for (const auto& [array, says] : {std::pair<std::string, std::string>{key, "holds 1e+300 where a count"},
                                    {"dtnn_epochs", "holds 1e+300 where a count"}}) {
    const std::string bad = tampered(ckpt, array, 1e300);
    const test::Command c = test::run_dtnn(run + " --resume_from=" + bad);
    INFO(array << ": " << c.err);
    CHECK(test::one_line_error(c));
    CHECK(c.err.find(says) != std::string::npos);
  }
  CHECK(test::run_dtnn(run + " --resume_from=" + ckpt).status == 0);  // the untouched file resumes
  fs::current_path(was);
  fs::remove_all(dir);
}
