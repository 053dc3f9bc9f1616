// dtnn check and v_accuracy_vs_target judge a run by the batch it trained. A strong-scaling trial
// (scaling = "strong") gives batch_size as the global batch; its runs train ceil(global / ranks) per rank,
// and store the trial's number in runs.batch_size. Taking that column as the per-rank batch would judge a
// 2-rank strong-scaling run of global batch 64 against a 64-per-rank target (and a global-batch 128 one). The
// run here is a real `dtnn train` report restated as that 2-rank strong-scaling run. Also: the weak-scaling
// global batch (migration 18) and an SGD rate scaled by the ranks (migration 20).
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "core/file_io.h"
#include "results/store.h"
#include "store_value.h"
#include "stored_run.h"

using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// The recipe the runs here trained (simplemlp, 1 epoch of 2 steps, SGD at 0.01), as `dtnn run` stores a target;
// the tests set its batch.
dtnn::ResultStore::Target sgd_target(const std::string& dataset) {
  dtnn::ResultStore::Target t;
  t.model = "simplemlp";
  t.dataset = dataset;
  t.metric = "test_accuracy";
  t.target = t.tolerance = 1.0;
  t.num_epochs = 1;
  t.optimizer = "sgd";
  t.source = "x";
  t.learning_rate = 0.01;
  t.steps_per_epoch = 2;
  return t;
}

// A real `dtnn train` report of the recipe the runs here restate (simplemlp, synthetic data, 2 steps of batch 32,
// SGD at 0.01, plus `extra`), trained into `dir`, which is made empty first.
nlohmann::json trained_report(const fs::path& dir, const std::string& extra = "") {
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "report.json").string();
  REQUIRE(dtnn::test::run_dtnn("train --model=simplemlp --use_synthetic_data=True --steps_per_epoch=2 --batch_size=32 "
                               "--optimizer=sgd --learning_rate=0.01 --progress=False " + extra + " --report=" + path)
              .status == 0);
  return nlohmann::json::parse(dtnn::read_file(path));
}

}  // namespace

TEST_CASE("check: a strong-scaling run is judged by its batch per rank and its global batch", "[runner]") {
  const fs::path dir = dtnn::test::temp_path("check_batch");
  nlohmann::json report = trained_report(dir, "--momentum=0.9");
  const std::string db = (dir / "r.db").string();
  report["options"]["global_batch_size"] = "64";  // what `dtnn train --global_batch_size=64` on 2 ranks records (text)
  report["parallel"]["ranks"] = 2;
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    dtnn::test::store_report_run(store, "strong", "scaling=strong;ranks=2",
                                 {{"model", "simplemlp"}, {"use_synthetic_data", "True"}, {"ranks", "2"},
                                  {"batch_size", "64"}, {"scaling", "strong"}, {"num_epochs", "1"},
                                  {"optimizer", "sgd"}},
                                 report.dump());
  }
  REQUIRE(dtnn::test::one(db, "SELECT batch_size FROM runs") == "64");  // the trial's number, the global batch
  const std::string dataset = dtnn::test::one(db, "SELECT dataset FROM runs");
  const auto target = [&](const std::string& name, const std::string& batch) {
    const std::string file = (dir / (name + ".toml")).string();
    dtnn::write_file_atomically(file, "[[target]]\nmodel = \"simplemlp\"\ndataset = \"" + dataset +
                                          "\"\nmetric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\nsource = \"x\"\n"
                                          "num_epochs = 1\noptimizer = \"sgd\"\nlearning_rate = 0.01\nmomentum = 0.9\n"
                                          "steps_per_epoch = 2\n" + batch);
    return file;
  };
  const auto check = [&](const std::string& file) {
    const dtnn::test::Command c = dtnn::test::run_dtnn("check --db " + db + " --targets " + file);
    INFO(c.out << c.err);
    REQUIRE(c.status == 0);
    return c.out;
  };
  // 64 per rank on 2 ranks is another recipe: not judged, and the batch it did train is named.
  CHECK_THAT(check(target("per_rank_64", "batch_size = 64\nranks = [1, 2]\n")),
             Contains("0 pass, 0 fail, 1 without a target") && Contains("batch 32 per rank, target's 64"));
  CHECK_THAT(check(target("global_128", "global_batch_size = 128\n")),
             Contains("1 without a target") && Contains("global batch 64, target's 128"));
  // What it trained: 32 per rank on 2 ranks, a global batch of 64.
  CHECK_THAT(check(target("per_rank_32", "batch_size = 32\nranks = [2]\n")), Contains("1 pass, 0 fail"));
  CHECK_THAT(check(target("global_64", "global_batch_size = 64\n")), Contains("1 pass, 0 fail"));
  // The store's view matches alike (targets as `dtnn run` stores them).
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    dtnn::ResultStore::Target t = sgd_target(dataset);
    t.batch_size = 64;
    t.ranks = {1, 2};
    store.replace_targets({t});
    CHECK(dtnn::test::one(db, "SELECT count(*) FROM v_accuracy_vs_target") == "0");
    t.batch_size = 32;
    store.replace_targets({t});
    CHECK(dtnn::test::one(db, "SELECT count(*) FROM v_accuracy_vs_target") == "1");
    t.batch_size = 0;
    t.ranks = {};
    t.global_batch_size = 128;
    store.replace_targets({t});
    CHECK(dtnn::test::one(db, "SELECT count(*) FROM v_accuracy_vs_target") == "0");
    t.global_batch_size = 64;
    store.replace_targets({t});
    CHECK(dtnn::test::one(db, "SELECT count(*) FROM v_accuracy_vs_target") == "1");
  }
  fs::remove_all(dir);
}

// A report writes its options as text: a weak-scaling run says "global_batch_size": "0", and nullif('0', 0)
// kept the text, so its global batch came out 0 and no target stated as a global batch (the CIFAR ResNets,
// VGG, ImageNet in analysis/targets.toml) ever judged a weak-scaling dtnn run (migration 18).
TEST_CASE("check: a weak-scaling run's global batch is its batch per rank times its ranks", "[runner]") {
  const fs::path dir = dtnn::test::temp_path("check_weak_batch");
  const nlohmann::json trained = trained_report(dir);
  const std::string db = (dir / "r.db").string(), report = trained.dump();
  REQUIRE(trained["options"]["global_batch_size"] == "0");  // as dtnn writes it
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    dtnn::test::store_report_run(store, "weak", "ranks=1",
                                 {{"model", "simplemlp"}, {"use_synthetic_data", "True"}, {"ranks", "1"},
                                  {"batch_size", "32"}, {"num_epochs", "1"}, {"optimizer", "sgd"}},
                                 report);
  }
  const std::string dataset = dtnn::test::one(db, "SELECT dataset FROM runs");
  const std::string targets = (dir / "t.toml").string();
  dtnn::write_file_atomically(targets, "[[target]]\nmodel = \"simplemlp\"\ndataset = \"" + dataset +
                                           "\"\nmetric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\nsource = \"x\"\n"
                                           "num_epochs = 1\noptimizer = \"sgd\"\nlearning_rate = 0.01\n"
                                           "steps_per_epoch = 2\nglobal_batch_size = 32\n");
  const dtnn::test::Command c = dtnn::test::run_dtnn("check --db " + db + " --targets " + targets);
  INFO(c.out << c.err);
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Contains("1 pass, 0 fail"));  // was "global batch 0, target's 32"
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    dtnn::ResultStore::Target t = sgd_target(dataset);
    t.global_batch_size = 32;
    store.replace_targets({t});
  }
  CHECK(dtnn::test::one(db, "SELECT count(*) FROM v_accuracy_vs_target") == "1");
  fs::remove_all(dir);
}

// A report's options.learning_rate is the rate as run: SGD on 2 ranks with PyDTNN's --learning_rate_scaling ran
// at twice the rate given. A recipe states the rate as given for every rank count, so an SGD target for
// ranks = [1, 2] never judged a 2-rank run ("learning rate 0.02, target's 0.01"). Reports keep the given rate
// under options_given (what `mpirun -np 2 dtnn train` writes is checked by mpi.train_cli); dtnn check and
// v_accuracy_vs_target (migration 20) match on it. The run is a real 1-rank report restated as that 2-rank run.
TEST_CASE("check: an SGD run scaled by its ranks is judged by the learning rate it was given", "[runner]") {
  const fs::path dir = dtnn::test::temp_path("check_given_rate");
  nlohmann::json report = trained_report(dir);
  const std::string db = (dir / "r.db").string();
  const nlohmann::json given_rate = report["options"]["learning_rate"];
  REQUIRE(std::stod(given_rate.get<std::string>()) == Approx(0.01));
  REQUIRE_FALSE((report.contains("options_given") && report["options_given"].contains("learning_rate")));
  report["options"]["learning_rate"] = "0.02";  // as run on 2 ranks
  report["parallel"]["ranks"] = 2;
  const auto store_run = [&](const std::string& key, const nlohmann::json& r) {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    dtnn::test::store_report_run(store, "weak", key,
                                 {{"model", "simplemlp"}, {"use_synthetic_data", "True"}, {"ranks", "2"},
                                  {"batch_size", "32"}, {"num_epochs", "1"}, {"optimizer", "sgd"}},
                                 r.dump());
  };
  store_run("before", report);  // a report without options_given (an older dtnn): judged by the rate it ran
  report["options_given"]["learning_rate"] = given_rate;
  store_run("given", report);
  const std::string dataset = dtnn::test::one(db, "SELECT dataset FROM runs LIMIT 1");
  const std::string targets = (dir / "t.toml").string();
  dtnn::write_file_atomically(targets, "[[target]]\nmodel = \"simplemlp\"\ndataset = \"" + dataset +
                                           "\"\nmetric = \"test_accuracy\"\ntarget = 1.0\ntolerance = 1.0\nsource = \"x\"\n"
                                           "num_epochs = 1\noptimizer = \"sgd\"\nlearning_rate = 0.01\n"
                                           "steps_per_epoch = 2\nbatch_size = 32\nranks = [1, 2]\n");
  const dtnn::test::Command c = dtnn::test::run_dtnn("check --db " + db + " --targets " + targets);
  INFO(c.out << c.err);
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Contains("1 pass, 0 fail, 1 without a target") && Contains("learning rate 0.02, target's 0.01"));
  {
    dtnn::ResultStore store = dtnn::ResultStore::open(db);
    dtnn::ResultStore::Target t = sgd_target(dataset);
    t.batch_size = 32;
    t.ranks = {1, 2};
    store.replace_targets({t});
  }
  CHECK(dtnn::test::one(db, "SELECT group_concat(r.trial_key) FROM v_accuracy_vs_target v JOIN runs r ON r.id = "
                            "v.run_id") == "given");
  fs::remove_all(dir);
}
