// dtnn check and v_accuracy_vs_target judge only runs trained from scratch. A run that loaded trained weights
// (--weights_and_bias_filename naming a file that exists: PyDTNN loads it) or only evaluated them
// (--evaluate_only) is not judged as if its recipe alone had reached its accuracy. The report's "start"
// says where the weights came from, a checkpoint carries it to a resumed sitting, and reports without it
// (older dtnn, PyDTNN) are read from their options. Real `dtnn train` runs and reports throughout.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "core/file_io.h"
#include "io/npz.h"
#include "io/npz_values.h"
#include "results/store.h"
#include "store_value.h"
#include "stored_run.h"

using Catch::Contains;
namespace fs = std::filesystem;

namespace {

const char* const kRecipe =
    "train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --batch_size=32 --optimizer=sgd "
    "--learning_rate=0.01 --momentum=0.9 --progress=False ";

nlohmann::json train(const std::string& args, const std::string& report) {
  const dtnn::test::Command c = dtnn::test::run_dtnn(kRecipe + args + " --report=" + report);
  INFO(c.out << c.err);
  REQUIRE(c.status == 0);
  return nlohmann::json::parse(dtnn::read_file(report));
}

void store_run(dtnn::ResultStore& store, const std::string& key, const nlohmann::json& report) {
  const nlohmann::json& epochs = report["options"]["num_epochs"];
  dtnn::test::store_report_run(store, "scratch", key,
                               {{"model", "simplemlp"},
                                {"num_epochs", epochs.is_string() ? epochs.get<std::string>() : epochs.dump()},
                                {"optimizer", "sgd"}},
                               report.dump());
}

}  // namespace

TEST_CASE("check: runs that began from trained weights or only evaluated them are not judged", "[runner]") {
  const fs::path dir = dtnn::test::temp_path("check_scratch");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string w = (dir / "w.npz").string(), ckpt = (dir / "c.npz").string(), db = (dir / "r.db").string();
  auto path = [&](const char* name) { return (dir / name).string(); };

  // The weights file does not exist yet: seeded initialization, the file is written at the end.
  const nlohmann::json scratch = train("--num_epochs=1 --weights_and_bias_filename=" + w, path("a.json"));
  CHECK(scratch["start"]["trained_from_scratch"] == true);
  CHECK(scratch["start"]["initial_weights"] == "");
  REQUIRE(fs::exists(w));
  // Now it exists: loaded, and the report says so.
  const nlohmann::json loaded = train("--num_epochs=1 --weights_and_bias_filename=" + w, path("b.json"));
  CHECK(loaded["start"]["trained_from_scratch"] == false);
  CHECK(loaded["start"]["initial_weights"] == w);
  const nlohmann::json evaluated = train("--num_epochs=1 --evaluate_only=True --weights_and_bias_filename=" + w,
                                         path("e.json"));
  CHECK(evaluated["start"]["evaluate_only"] == true);
  CHECK(evaluated["start"]["trained_from_scratch"] == false);

  // A checkpoint carries where its run began to the resumed sitting.
  train("--num_epochs=1 --weights_and_bias_filename=" + w + " --checkpoint_file=" + ckpt, path("c1.json"));
  const nlohmann::json resumed = train("--num_epochs=2 --resume_from=" + ckpt, path("c2.json"));
  CHECK(resumed["start"]["initial_weights"] == w);
  CHECK(resumed["start"]["resumed_from"] == ckpt);
  CHECK(resumed["start"]["resumed_after_epoch"] == 1);
  CHECK(resumed["start"]["trained_from_scratch"] == false);
  const nlohmann::json fresh_ckpt = [&] {
    train("--num_epochs=1 --checkpoint_file=" + path("s.npz"), path("s1.json"));
    return train("--num_epochs=2 --resume_from=" + path("s.npz") + " --checkpoint_file=" + path("s2.npz"),
                 path("s2.json"));
  }();
  CHECK(fresh_ckpt["start"]["trained_from_scratch"] == true);
  // A checkpoint of an older dtnn lacks the record: the resumed run cannot say, and is not judged.
  {
    std::vector<dtnn::io::NpyArray> arrays = dtnn::io::read_npz(path("s.npz"));
    for (dtnn::io::NpyArray& a : arrays)
      if (a.name == "dtnn_options") {
        dtnn::io::NpyArrayMap one;
        one.emplace(a.name, a);
        std::string text = dtnn::io::read_text(one, "dtnn_options", "s.npz");
        const size_t at = text.find("~initial_weights=");
        REQUIRE(at != std::string::npos);
        text.erase(at, text.find('\n', at) + 1 - at);
        a = dtnn::io::make_text("dtnn_options", text);
      }
    dtnn::io::write_npz(path("old.npz"), arrays, false);
  }
  const nlohmann::json old_ckpt = train("--num_epochs=2 --resume_from=" + path("old.npz"), path("o2.json"));
  CHECK(old_ckpt["start"]["initial_weights"].is_null());
  CHECK(old_ckpt["start"]["trained_from_scratch"] == false);
  // A checkpoint past --num_epochs is refused: the run would be stored as a shorter recipe than it trained.
  {
    const dtnn::test::Command c =
        dtnn::test::run_dtnn(std::string(kRecipe) + "--num_epochs=1 --resume_from=" + path("s2.npz"));
    CHECK(c.status != 0);
    CHECK_THAT(c.err, Contains("checkpoint holds 2 epochs, more than --num_epochs=1"));
  }

  // Reports of an older dtnn (no "start") are read from their options.
  nlohmann::json old_loaded = loaded, old_scratch = scratch;
  old_loaded.erase("start");
  old_scratch.erase("start");
  old_scratch["options"]["weights_and_bias_filename"] = "";
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    store_run(store, "scratch", scratch);
    store_run(store, "loaded", loaded);
    store_run(store, "evaluated", evaluated);
    store_run(store, "resumed", resumed);
    store_run(store, "fresh_ckpt", fresh_ckpt);
    store_run(store, "old_ckpt", old_ckpt);
    store_run(store, "old_loaded", old_loaded);
    store_run(store, "old_scratch", old_scratch);
  }
  const std::string dataset = dtnn::test::one(db, "SELECT dataset FROM runs LIMIT 1");
  const std::string targets = path("t.toml");
  dtnn::write_file_atomically(targets, "[[target]]\nmodel = \"simplemlp\"\ndataset = \"" + dataset +
                                           "\"\nmetric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\n"
                                           "source = \"x\"\nnum_epochs = 0\noptimizer = \"sgd\"\n"
                                           "learning_rate = 0.01\nmomentum = 0.9\nsteps_per_epoch = 2\n"
                                           "batch_size = 32\nranks = [1]\n");
  const dtnn::test::Command c = dtnn::test::run_dtnn("check --db " + db + " --targets " + targets);
  INFO(c.out << c.err);
  REQUIRE(c.status == 0);
  // scratch, fresh_ckpt and old_scratch are judged; the other five are named with their reason.
  CHECK_THAT(c.out, Contains("3 pass, 0 fail, 5 without a target"));
  CHECK_THAT(c.out, Contains("began from the trained weights in " + w + "; targets judge training from scratch"));
  CHECK_THAT(c.out, Contains("evaluation only (--evaluate_only)"));
  CHECK_THAT(c.out, Contains("resumed from a checkpoint that does not record the weights its run began from"));
  CHECK_THAT(c.out, Contains("may have begun from the weights in " + w + " (its report predates the start record)"));
  // The store's view judges the same three (targets as `dtnn run` stores them).
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    dtnn::ResultStore::Target t;
    t.model = "simplemlp";
    t.dataset = dataset;
    t.metric = "test_accuracy";
    t.target = t.tolerance = 1.0;
    t.optimizer = "sgd";
    t.source = "x";
    t.learning_rate = 0.01;
    t.steps_per_epoch = 2;
    t.batch_size = 32;
    t.ranks = {1};
    store.replace_targets({t});
  }
  CHECK(dtnn::test::one(db, "SELECT group_concat(label, ',') FROM (SELECT r.label FROM v_accuracy_vs_target v "
                            "JOIN runs r ON r.id = v.run_id ORDER BY r.id)") == "scratch,fresh_ckpt,old_scratch");
  fs::remove_all(dir);
}
