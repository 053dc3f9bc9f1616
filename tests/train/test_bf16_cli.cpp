// `dtnn train --dtype`: bfloat16 trains (to float32's accuracy on real digits, its choice recorded in the run
// report), and every refusal is one line with its exit status: float16 and float64 (3), a CPU whose oneDNN
// has no bf16 kernels (3; ONEDNN_MAX_CPU_ISA caps it here), a float32 algorithm beside bf16 and the bf16
// algorithm without it (2).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"
#include "helpers.h"
#include "skip.h"

using dtnn::test::Command;
using dtnn::test::run_dtnn;

namespace {

const std::string kDigits = "train --model=simplecnn --dataset=mnist --dataset_train_path=" +
                            std::string(DTNN_SOURCE_DIR) + "/experiments/datasets/mnist-10k --num_epochs=1 " +
                            "--optimizer=adam --learning_rate=0.001 --batch_size=64 --threads=1 --seed=0 --progress=False ";

double test_accuracy(const std::string& report) {
  std::ifstream f(report);
  const nlohmann::json j = nlohmann::json::parse(f);
  return j.at("test").at("categorical_accuracy").get<double>();
}

}  // namespace

TEST_CASE("dtype: refusals are one line with their exit status", "[train][bf16]") {
  const std::string synth = "train --model=simplecnn --use_synthetic_data=True --steps_per_epoch=1 --progress=False ";
  for (const char* refused : {"--dtype=float16", "--dtype=float64", "--dtype=bfloat16 --enable_gpu=True"}) {
    INFO(refused);
    const Command c = run_dtnn(synth + refused);
    CHECK(c.status == dtnn::kUnsupportedExit);
    CHECK(dtnn::test::one_line_error(c));
  }
  for (const char* wrong : {"--dtype=bfloat16 --conv_algo=im2row_gemm", "--conv_algo=onednn_bf16"}) {
    INFO(wrong);
    const Command c = run_dtnn(synth + wrong);
    CHECK(c.status == 2);
    CHECK(dtnn::test::one_line_error(c));
  }
  if (dtnn::onednn_version() == "not built") return;  // no ISA to cap: the refusal above is the build's
  setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE", 1);  // oneDNN without its bf16 kernels, as on a CPU lacking them
  const Command capped = run_dtnn(synth + "--dtype=bfloat16");
  unsetenv("ONEDNN_MAX_CPU_ISA");
  CHECK(capped.status == dtnn::kUnsupportedExit);
  CHECK(dtnn::test::one_line_error(capped));
  CHECK(capped.err.find("neither AVX512-BF16 nor AMX-BF16") != std::string::npos);
}

TEST_CASE("dtype: bfloat16 trains simplecnn on digits to float32's accuracy and says so in its report", "[train][bf16]") {
  if (const std::string why = dtnn::cpu_bf16_support(); !why.empty()) DTNN_SKIP(why);
  double acc[2];
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    const std::string report = dtnn::test::temp_path(bf16 ? "bf16.json" : "f32.json");
    const Command c = run_dtnn(kDigits + "--report=" + report + (bf16 ? " --dtype=bfloat16" : ""));
    REQUIRE(c.status == 0);
    acc[bf16] = test_accuracy(report);
    std::ifstream f(report);
    const nlohmann::json j = nlohmann::json::parse(f);
    CHECK(j.at("options").at("dtype") == (bf16 ? "bfloat16" : "float32"));
    for (const auto& layer : j.at("model").at("layers"))
      if (layer.contains("conv_algo")) CHECK((layer.at("conv_algo") == "cpu.onednn_bf16") == (bf16 == 1));
    std::filesystem::remove(report);
  }
  // One epoch, same seed and order: the roundings move a few test digits either way (measured 0.05 points here).
  INFO("float32 " << acc[0] << " %, bfloat16 " << acc[1] << " %");
  CHECK(acc[0] > 85.0);  // measured 89.7 %
  CHECK(std::abs(acc[1] - acc[0]) < 1.5);
}
