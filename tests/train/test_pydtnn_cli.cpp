// `dtnn train` read as PyDTNN reads its command line: argparse's unambiguous prefixes, --evaluate's before-and-
// after meaning, --enable_gpudirect on the CPU.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "cli_helpers.h"
#include "helpers.h"

namespace fs = std::filesystem;
using dtnn::test::Command;
using dtnn::test::one_line_error;
using dtnn::test::run_dtnn;

namespace {
const std::string kSynth = "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=1 --num_epochs=1 "
                           "--threads=1 --progress=False ";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("cli: an unambiguous prefix names its option, as argparse, and an ambiguous one is refused with the candidates",
          "[cli]") {
  const std::string history = dtnn::test::temp_path("prefix_history.txt");
  fs::remove(history);
  const Command c = run_dtnn(kSynth + "--evaluate=False --histo=" + history + " --momen=0.5");  // run_benchmarks.sh's --history=
  INFO(c.err);
  REQUIRE(c.status == 0);
  CHECK(fs::exists(history));
  CHECK(c.out.find("momentum" + std::string(31 - 8, ' ') + ": 0.5") != std::string::npos);
  const Command ambiguous = run_dtnn(kSynth + "--enable_fused=True");
  CHECK(ambiguous.status == 2);
  CHECK(one_line_error(ambiguous));
  CHECK(ambiguous.err.find("ambiguous option: --enable_fused could match --enable_fused_bn_relu, --enable_fused_conv_relu, "
                           "--enable_fused_conv_bn, --enable_fused_conv_bn_relu, --enable_fused_add_relu") !=
        std::string::npos);
  // An exact name wins over the longer names it prefixes (--evaluate, --evaluate_only, --evaluate_on_test).
  CHECK(run_dtnn(kSynth + "--evaluate=False").status == 0);
  fs::remove(history);
}

TEST_CASE("cli: --evaluate is PyDTNN's: the test set before and after training, or never", "[cli]") {
  const std::string line = "**** Evaluating on test dataset...";
  const Command plain = run_dtnn(kSynth), on = run_dtnn(kSynth + "--evaluate=True"),
                off = run_dtnn(kSynth + "--evaluate=False"),
                mixed = run_dtnn(kSynth + "--evaluate=False --evaluate_on_test=True");
  for (const Command* c : {&plain, &on, &off, &mixed}) REQUIRE(c->status == 0);
  CHECK(count(plain.out, line) == 1);  // dtnn's default: after training
  CHECK(count(on.out, line) == 2);
  CHECK(count(off.out, line) == 0);
  CHECK(count(off.out, "Testing metrics") == 0);
  CHECK(count(mixed.out, line) == 1);  // dtnn's own option, given, still says after training
}

TEST_CASE("cli: --enable_gpudirect changes nothing on the CPU, as in PyDTNN", "[cli]") {
  const Command c = run_dtnn(kSynth + "--evaluate=False --enable_gpudirect=True");
  INFO(c.err);
  CHECK(c.status == 0);
}
