// v_time_to_target against times and epochs worked out here by hand: a validation target is reached at the
// first epoch whose accuracy meets target - tolerance (the time is the training loops' sum up to it), a test
// target that passes is reached at the end, and a target never met has no time.
#include <catch2/catch.hpp>

#include "results/store_test_helpers.h"

using dtnn::test::one;
using dtnn::test::RunFixture;

namespace {

// A finished run of simplemlp on mnist (adam, 3 epochs) with per-epoch training times and validation accuracies.
int64_t run_with_epochs(RunFixture& f, const std::string& key, double test_accuracy, const double (&val)[3]) {
  const int64_t id = f.begin(key, 1, {{"dataset", "mnist"}, {"optimizer", "adam"}, {"num_epochs", "3"}});
  const double times[3] = {1.5, 2.0, 2.5};
  for (int e = 0; e < 3; ++e)
    f.store.exec("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, val_accuracy, metrics) VALUES (" +
                 std::to_string(id) + ", " + std::to_string(e + 1) + ", 100, " + std::to_string(times[e]) +
                 ", 50.0, " + std::to_string(val[e]) + ", '{}')");
  f.store.exec("UPDATE runs SET status = 'ok', samples_per_s = 50.0, test_accuracy = " + std::to_string(test_accuracy) +
               ", val_accuracy = " + std::to_string(val[2]) + " WHERE id = " + std::to_string(id));
  return id;
}

dtnn::ResultStore::Target target(const char* metric, double value, double tolerance) {
  dtnn::ResultStore::Target t;
  t.model = "simplemlp", t.dataset = "mnist", t.metric = metric, t.target = value, t.tolerance = tolerance;
  t.num_epochs = 3, t.optimizer = "adam", t.recipe = "r", t.source = "s";
  return t;
}

}  // namespace

TEST_CASE("store: time to target from the epochs, per metric", "[store]") {
  RunFixture f("time_to_target");
  const int64_t fast = run_with_epochs(f, "fast", 90.0, {84.0, 86.0, 88.0});
  const int64_t slow = run_with_epochs(f, "slow", 80.0, {70.0, 75.0, 84.5});
  f.store.replace_targets({target("val_accuracy", 85.0, 0.5), target("test_accuracy", 85.0, 0.0)});
  auto at = [&](int64_t run, const char* metric) {
    return one(f.store, "SELECT coalesce(epochs_to_target, 'none') || ' ' || coalesce(time_to_target_s, 'none') || ' ' || "
                        "evaluated FROM v_time_to_target WHERE run_id = " + std::to_string(run) + " AND metric = '" +
                        metric + "'");
  };
  // 84.0 misses 85 - 0.5; 86.0 at epoch 2 meets it after 1.5 + 2.0 s.
  CHECK(at(fast, "val_accuracy") == "2 3.5 every epoch");
  // 84.5 at epoch 3 is exactly 85 - 0.5: met, after all three epochs.
  CHECK(at(slow, "val_accuracy") == "3 6.0 every epoch");
  // The test set is evaluated once: a pass is reached at the end, a fail never.
  CHECK(at(fast, "test_accuracy") == "3 6.0 after training");
  CHECK(at(slow, "test_accuracy") == "none none after training");
}
