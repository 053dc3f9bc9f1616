// The files a trial's own options name (weights, history, checkpoint) are each attempt's own: a matrix that
// sets --weights_and_bias_filename once, with repeats = 2, must give two independent runs, not a second run
// that starts from the first one's trained weights (stored as if independent), and must never write the
// named file. A weights file that exists is the starting point of every run (PyDTNN's meaning), copied.
#include <catch2/catch.hpp>
#include <filesystem>

#include "core/file_io.h"
#include "experiments/runner_helpers.h"
#include "results/store.h"

using Catch::Contains;
using namespace dtnn::test::runner;
namespace fs = std::filesystem;

namespace {

// Each run's first-epoch training loss, in run order.
std::vector<std::string> first_losses(const std::string& db) {
  std::vector<std::string> out;
  const dtnn::QueryResult r = dtnn::ResultStore::open_read_only(db).query(
      "SELECT printf('%.9g', e.train_loss) FROM runs r JOIN epochs e ON e.run_id = r.id AND e.epoch = 1 "
      "WHERE r.status = 'ok' ORDER BY r.id");
  for (const auto& row : r.rows) out.push_back(row.at(0).value_or("NULL"));
  return out;
}

// The files under the database's log folder whose names end in `suffix`.
int files_ending(const fs::path& dir, const std::string& suffix) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string p = e.path().string();
    n += p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return n;
}

}  // namespace

TEST_CASE("runner: repeats of a trial that names a weights file each train from the same start, in files of their own",
          "[runner]") {
  Workspace ws("own_files");
  const std::string matrix = ws.file("w.toml", std::string("name = \"own_files\"\nrepeats = 2\n") + kQuickBase +
                                                   "model = \"simplemlp\"\nevaluate_on_test = false\n"
                                                   "weights_and_bias_filename = \"w.npz\"\nhistory_file = \"h.txt\"\n");
  const std::string weights = (ws.dir / "w.npz").string(), history = (ws.dir / "h.txt").string();
  const std::string log = (ws.dir / "run.log").string();

  // No weights file: both repeats start from the initial weights (the same seed): the same first loss.
  REQUIRE(dtnn_cli("run " + matrix + " --db " + ws.db(), log) == 0);
  const std::vector<std::string> fresh = first_losses(ws.db());
  INFO(read_text(log));
  REQUIRE(fresh.size() == 2);
  CHECK(fresh[0] == fresh[1]);
  CHECK_FALSE(fs::exists(weights));  // the named files are never written
  CHECK_FALSE(fs::exists(history));
  CHECK(files_ending(ws.dir / "logs", ".weights_and_bias_filename.npz") == 2);
  CHECK(files_ending(ws.dir / "logs", ".history_file.txt") == 2);

  // A weights file that exists: every repeat starts from it (a lower first loss than from scratch, the same
  // in both), and it is left as it was.
  REQUIRE(dtnn_cli("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=20 --threads=1 "
                   "--evaluate_on_test=False --weights_and_bias_filename=" + weights) == 0);
  const std::string before = dtnn::read_file(weights);
  fs::remove(ws.db());
  fs::remove_all(ws.dir / "logs");
  REQUIRE(dtnn_cli("run " + matrix + " --db " + ws.db(), log) == 0);
  const std::vector<std::string> trained = first_losses(ws.db());
  REQUIRE(trained.size() == 2);
  CHECK(trained[0] == trained[1]);
  CHECK(std::stod(trained[0]) < std::stod(fresh[0]));
  CHECK(dtnn::read_file(weights) == before);
  int told = 0;  // each run's log says where its weights came from and where they went
  for (const auto& e : fs::recursive_directory_iterator(ws.dir / "logs"))
    if (e.path().extension() == ".log")
      told += read_text(e.path().string()).find("# --weights_and_bias_filename: starts from a copy of " + weights) !=
              std::string::npos;
  CHECK(told == 2);
}
