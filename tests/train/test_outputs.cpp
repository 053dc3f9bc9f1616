// `dtnn train`'s output files (--report, --history_file, ...): refused before training when they are not
// regular files (or symlinks to them), or when one is an input or another output (every command that writes
// files: train, check, compare, history, predict, run, ingest), and a write past `ulimit -f` reported as one
// error line, not SIGXFSZ.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "cli_helpers.h"
#include "core/file_io.h"
#include "data/data_helpers.h"

namespace fs = std::filesystem;
using dtnn::test::Command;

namespace {
const std::string kShortRun = "train --model=simplecnn --use_synthetic_data=True --steps_per_epoch=1 --num_epochs=1 "
                              "--threads=1 --progress=False";
}

TEST_CASE("cli: an output path that is a FIFO is refused before training", "[cli]") {
  const dtnn::test::ScratchDir dir("outputs_kinds");
  const std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string option = GENERATE(std::string("--report="), std::string("--history_file="),
                                      std::string("--checkpoint_file="));
  const Command c = dtnn::test::run_dtnn(kShortRun + " " + option + fifo);
  INFO(c.err);
  CHECK(dtnn::test::one_line_error(c));
  CHECK(c.err.find("a FIFO") != std::string::npos);
  CHECK(c.out.find("Total parameters") == std::string::npos);  // refused before the model was built
  CHECK(fs::is_fifo(fifo));
}

TEST_CASE("cli: a report past `ulimit -f` fails with one error line, not SIGXFSZ", "[cli]") {
  const dtnn::test::ScratchDir dir("outputs_fsize");
  const std::string report = dir / "report.json", err = dir / "err.txt";
  // ulimit -f counts 1024-byte blocks: the report (several KiB) cannot fit in one.
  const std::string cmd = "bash -c 'ulimit -f 1; exec " + std::string(DTNN_BINARY) + " " + kShortRun +
                          " --report=" + report + " > /dev/null 2> " + err + "'";
  const int rc = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(rc));
  const int status = WEXITSTATUS(rc);
  CHECK(status != 0);
  CHECK(status != 128 + SIGXFSZ);  // bash's status for a child killed by SIGXFSZ (153)
  const std::string text = dtnn::read_file(err);
  INFO(text);
  CHECK(text.rfind("dtnn: ", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(!fs::exists(report));
}

TEST_CASE("cli: an output that is one of the command's inputs, or another output, is refused and left as it was",
          "[cli]") {
  const dtnn::test::ScratchDir dir("outputs_clash");
  const std::string keep = dir / "keep.bin";
  dtnn::write_file_atomically(keep, "precious bytes");
  const std::string other = dir / "other.txt";
  const auto refused = [&](const std::string& args, const std::string& names) {
    const Command c = dtnn::test::run_dtnn(args);
    INFO(args << "\n" << c.err);
    CHECK(c.status != 0);
    CHECK(dtnn::test::one_line_error(c));
    CHECK(c.err.find(names) != std::string::npos);
    CHECK(dtnn::read_file(keep) == "precious bytes");
  };
  // train: the report over the weights it would load, two outputs on one file, a relative spelling.
  refused(kShortRun + " --weights_and_bias_filename=" + keep + " --report=" + keep,
          "is also --weights_and_bias_filename");
  refused(kShortRun + " --history_file=" + keep + " --report=" + dir.path + "/./keep.bin", "two outputs");
  refused(kShortRun + " --resume_from=" + keep + " --report=" + keep, "--report " + keep + " is also --resume_from");
  // check, compare, history: their CI files over the database or the targets (nothing is read first).
  refused("check --db " + keep + " --junit " + keep, "--junit " + keep + " is also --db");
  refused("check --db " + other + " --targets " + keep + " --markdown " + keep, "is also --targets");
  refused("history --db " + keep + " --markdown " + keep, "is also --db");
  // predict: the profile it restates, written over the measured one.
  refused("predict --profile=" + keep + " --batch_size=7 --write-profile=" + keep, "is also --profile");
  // run and ingest: the database over the matrix or the file to ingest.
  refused("run " + keep + " --db " + keep, "--db " + keep + " is also the matrix");
  refused("ingest " + keep + " --db " + keep, "is also the input file");
  CHECK_FALSE(fs::exists(other));
}
