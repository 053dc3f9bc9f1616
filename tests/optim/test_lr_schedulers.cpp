// LR schedulers on scripted metric sequences (no training): the epochs at which they act, the learning
// rates they set, the messages they print, and the errors PyDTNN's silent fallbacks became.
#include <catch2/catch.hpp>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "models/model.h"
#include "optim/lr_scheduler.h"

using namespace dtnn;
using Catch::Matchers::Contains;

namespace {

const std::vector<std::string> kNames{"categorical_cross_entropy", "categorical_accuracy"};

struct Fixture {
  std::unique_ptr<Optimizer> optimizer;
  std::ostringstream out;
  std::vector<std::string> saved, removed;
  SchedulerSetup setup;

  explicit Fixture(double lr = 0.1, bool validation = true, Model* model = nullptr) {
    OptimizerOptions o;
    o.learning_rate = lr;
    optimizer = make_optimizer(o, 1);
    setup.value_names = kNames;
    setup.has_validation = validation;
    setup.steps_per_epoch = 2;
    setup.model_name = "simplemlp";
    setup.optimizer = optimizer.get();
    setup.model = model;
    setup.out = &out;
    setup.save_weights = [this](const std::string& p) { saved.push_back(p); };
    setup.remove_file = [this](const std::string& p) { removed.push_back(p); };
  }
  double lr() const { return optimizer->learning_rate(); }
};

// Feeds one epoch: train = (loss, acc), val = (val loss, val acc).
void epoch(LRSchedulers& s, double loss, double acc, double val_loss = 0.0, double val_acc = 0.0) {
  const std::vector<double> train{loss, acc}, val{val_loss, val_acc};
  s.on_epoch_end(train, &val);
}

std::unique_ptr<Model> small_model() {
  auto m = create_model("simplemlp");
  BuildContext ctx;
  ctx.max_batch = 1;
  m->build(ctx, 0);
  return m;
}

}  // namespace

TEST_CASE("lr_schedulers: empty and unknown lists", "[sched]") {
  Fixture f;
  LRSchedulerOptions o;
  CHECK(LRSchedulers(o, f.setup).empty());  // the dtnn default: none
  o.names = "";
  CHECK(LRSchedulers(o, f.setup).empty());  // PyDTNN crashed here
  o.names = " , ";
  CHECK(LRSchedulers(o, f.setup).empty());
  o.names = "none";  // how --help shows the default
  CHECK(LRSchedulers(o, f.setup).empty());
  o.names = "none,stop_at_loss";  // "none" only alone
  REQUIRE_THROWS_WITH(LRSchedulers(o, f.setup),
                      "--lr_schedulers: unknown scheduler 'none' (known: warm_up, early_stopping, reduce_lr_on_plateau, "
                      "reduce_lr_every_nepochs, stop_at_loss, model_checkpoint)");
  o.names = "reduce_lr_every_nepochs, stop_at_loss";
  LRSchedulers two(o, f.setup);
  REQUIRE(two.size() == 2);
  CHECK(std::string(two.at(0).name()) == "reduce_lr_every_nepochs");
  CHECK(std::string(two.at(1).name()) == "stop_at_loss");
  o.names = "early_stopping,cosine";
  REQUIRE_THROWS_WITH(LRSchedulers(o, f.setup),
                      "--lr_schedulers: unknown scheduler 'cosine' (known: warm_up, early_stopping, reduce_lr_on_plateau, "
                      "reduce_lr_every_nepochs, stop_at_loss, model_checkpoint)");
}

TEST_CASE("lr_schedulers: metric names are checked at start-up", "[sched]") {
  Fixture f;
  LRSchedulerOptions o;
  o.names = "reduce_lr_on_plateau";
  o.reduce_lr_on_plateau_metric = "val_accuracy";  // PyDTNN silently watched the loss
  REQUIRE_THROWS_WITH(LRSchedulers(o, f.setup),
                      "--reduce_lr_on_plateau_metric: unknown metric 'val_accuracy' (valid: categorical_cross_entropy, "
                      "categorical_accuracy, val_categorical_cross_entropy, val_categorical_accuracy)");
  // A val_ name without a validation set is an error too (PyDTNN watched zeros).
  Fixture nv(0.1, false);
  o.reduce_lr_on_plateau_metric = "val_categorical_cross_entropy";
  REQUIRE_THROWS_WITH(LRSchedulers(o, nv.setup), Contains("needs a validation set") &&
                                                     Contains("valid names are: categorical_cross_entropy, categorical_accuracy"));
  // Every metric-watching scheduler checks its own option; unselected schedulers are not checked.
  for (const char* name : {"stop_at_loss", "model_checkpoint"}) {
    LRSchedulerOptions p;
    p.names = name;
    p.stop_at_loss_metric = "lossy";
    p.model_checkpoint_metric = "lossy";
    REQUIRE_THROWS_WITH(LRSchedulers(p, f.setup), Contains("unknown metric 'lossy'"));
  }
  auto model = small_model();
  Fixture fm(0.1, true, model.get());
  LRSchedulerOptions e;
  e.names = "early_stopping";
  e.early_stopping_metric = "acc";
  REQUIRE_THROWS_WITH(LRSchedulers(e, fm.setup), Contains("--early_stopping_metric: unknown metric 'acc'"));
  e.names = "stop_at_loss";
  CHECK_NOTHROW(LRSchedulers(e, fm.setup));
  // stop_at_loss's default metric is the training loss: valid without a validation set.
  Fixture nv2(0.1, false);
  CHECK_NOTHROW(LRSchedulers(e, nv2.setup));
  e.names = "reduce_lr_every_nepochs";
  e.reduce_lr_every_nepochs_nepochs = 0;
  CHECK_THROWS_AS(LRSchedulers(e, f.setup), Error);
}

TEST_CASE("lr_schedulers: warm_up ramps from lr/ranks to lr over W+1 steps", "[sched]") {
  Fixture f(0.1);
  f.setup.ranks = 4;
  f.setup.steps_per_epoch = 2;
  LRSchedulerOptions o;
  o.names = "warm_up";
  o.warm_up_epochs = 2;  // W = 4 steps
  LRSchedulers s(o, f.setup);
  const double expect[5] = {0.025, 0.04375, 0.0625, 0.08125, 0.1};
  for (double e : expect) {
    s.on_batch_begin();
    CHECK(f.lr() == Approx(e).epsilon(1e-15));
  }
  f.optimizer->set_learning_rate(0.5);  // warm-up is over: the rate is left alone
  s.on_batch_begin();
  CHECK(f.lr() == 0.5);
  CHECK(f.out.str().empty());

  // 0 warm-up epochs: W = 0 does nothing (PyDTNN divided by zero).
  Fixture z(0.1);
  z.setup.ranks = 4;
  o.warm_up_epochs = 0;
  LRSchedulers none(o, z.setup);
  for (int i = 0; i < 3; ++i) none.on_batch_begin();
  CHECK(z.lr() == 0.1);
  // One rank: base == init, a no-op as in PyDTNN.
  Fixture one(0.1);
  o.warm_up_epochs = 5;
  LRSchedulers single(o, one.setup);
  single.on_batch_begin();
  CHECK(one.lr() == 0.1);
}

TEST_CASE("lr_schedulers: early_stopping stops after patience and restores exactly the best snapshot", "[sched]") {
  auto model = small_model();
  Fixture f(0.1, true, model.get());
  LRSchedulerOptions o;
  o.names = "early_stopping";
  o.early_stopping_patience = 2;
  int restored = 0;  // the trainer's weight merger is told (parallel/model_averager.h), once, at the restore
  f.setup.weights_restored = [&restored] { ++restored; };
  LRSchedulers s(o, f.setup);
  const int64_t n = model->slab_size();
  const auto fill = [&](float base) {
    for (int64_t i = 0; i < n; ++i) model->param_slab()[i] = base + 1e-3f * static_cast<float>(i % 977);
  };
  const double val_loss[4] = {1.0, 0.8, 0.9, 0.85};  // best at epoch 2; epoch 4 is 2 epochs later
  std::vector<float> best;
  for (int e = 1; e <= 4; ++e) {
    fill(static_cast<float>(e));
    if (e == 2) best.assign(model->param_slab(), model->param_slab() + n);
    CHECK_FALSE(s.stop_training());
    CHECK(restored == 0);
    epoch(s, 5.0 - e, 0.0, val_loss[e - 1], 0.0);  // the train loss keeps falling: it is not watched
  }
  CHECK(s.stop_training());
  CHECK(restored == 1);
  CHECK(std::memcmp(model->param_slab(), best.data(), n * sizeof(float)) == 0);
  CHECK(f.out.str() == "LRScheduler EarlyStopping: metric val_categorical_cross_entropy did not improve for 2 epochs, stop training!\n");
  CHECK(f.saved.empty());  // memory only unless a file is asked for

  // An accuracy improves upwards, and the optional weights file is written on every improvement.
  Fixture g(0.1, true, model.get());
  o.early_stopping_metric = "val_categorical_accuracy";
  o.early_stopping_weights_filename = "best.npz";
  LRSchedulers acc(o, g.setup);
  const double val_acc[5] = {50, 60, 55, 58, 59};
  int stopped_at = 0;
  for (int e = 1; e <= 5 && !stopped_at; ++e) {
    epoch(acc, 1.0, 0.0, 1.0, val_acc[e - 1]);
    if (acc.stop_training()) stopped_at = e;
  }
  CHECK(stopped_at == 4);
  CHECK(g.saved == std::vector<std::string>{"best.npz", "best.npz"});
}

TEST_CASE("lr_schedulers: reduce_lr_on_plateau restarts its patience and respects min_lr", "[sched]") {
  Fixture f(0.1);
  LRSchedulerOptions o;
  o.names = "reduce_lr_on_plateau";
  o.reduce_lr_on_plateau_metric = "categorical_accuracy";  // train accuracy: greater is better
  o.reduce_lr_on_plateau_patience = 2;
  o.reduce_lr_on_plateau_factor = 0.5;
  o.reduce_lr_on_plateau_min_lr = 0.02;
  LRSchedulers s(o, f.setup);
  const double acc[11] = {10, 20, 20, 15, 19, 25, 24, 23, 22, 21, 20};
  const double lr[11] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025};
  for (int e = 0; e < 11; ++e) {
    epoch(s, 1.0, acc[e], 9.0, 0.0);
    CHECK(f.lr() == lr[e]);
  }
  CHECK(f.out.str() ==
        "LRScheduler ReduceLROnPlateau: metric categorical_accuracy did not improve for 2 epochs, setting learning rate to 0.05000000\n"
        "LRScheduler ReduceLROnPlateau: metric categorical_accuracy did not improve for 2 epochs, setting learning rate to 0.02500000\n");
  CHECK_FALSE(s.stop_training());
}

TEST_CASE("lr_schedulers: reduce_lr_every_nepochs", "[sched]") {
  Fixture f(0.1);
  LRSchedulerOptions o;
  o.names = "reduce_lr_every_nepochs";
  o.reduce_lr_every_nepochs_nepochs = 3;
  o.reduce_lr_every_nepochs_factor = 0.1;
  o.reduce_lr_every_nepochs_min_lr = 0.0005;
  LRSchedulers s(o, f.setup);
  std::vector<double> lrs;
  for (int e = 1; e <= 10; ++e) {
    epoch(s, 1.0, 0.0);
    lrs.push_back(f.lr());
  }
  const double a = 0.1 * 0.1, b = a * 0.1;  // the third reduction would go below min_lr
  CHECK(lrs == std::vector<double>{0.1, 0.1, a, a, a, b, b, b, b, b});
  CHECK(f.out.str() == "LRScheduler ReduceLREveryNEpochs: setting learning rate to 0.01000000\n"
                       "LRScheduler ReduceLREveryNEpochs: setting learning rate to 0.00100000\n");
}

TEST_CASE("lr_schedulers: stop_at_loss", "[sched]") {
  Fixture f(0.1, false);
  LRSchedulerOptions o;
  o.names = "stop_at_loss";
  o.stop_at_loss_threshold = 0.5;  // default metric: the training loss
  LRSchedulers s(o, f.setup);
  const double loss[4] = {0.9, 0.6, 0.5, 0.4};
  int stopped_at = 0;
  for (int e = 1; e <= 4 && !stopped_at; ++e) {
    const std::vector<double> train{loss[e - 1], 0.0};
    s.on_epoch_end(train, nullptr);
    if (s.stop_training()) stopped_at = e;
  }
  CHECK(stopped_at == 4);  // 0.5 is not below 0.5
  CHECK(f.out.str() == "LRScheduler StopAtLoss: metric categorical_cross_entropy reached threshold value 0.500000, stop training!\n");

  Fixture g(0.1);
  o.stop_at_loss_metric = "val_categorical_accuracy";
  o.stop_at_loss_threshold = 90;
  LRSchedulers acc(o, g.setup);
  epoch(acc, 0.0, 99.0, 0.0, 80.0);
  epoch(acc, 0.0, 99.0, 0.0, 90.0);
  CHECK_FALSE(acc.stop_training());
  epoch(acc, 0.0, 99.0, 0.0, 91.0);
  CHECK(acc.stop_training());
}

TEST_CASE("lr_schedulers: model_checkpoint saves on improving epochs divisible by save_freq", "[sched]") {
  Fixture f(0.1);
  LRSchedulerOptions o;
  o.names = "model_checkpoint";
  o.model_checkpoint_metric = "val_categorical_accuracy";  // PyDTNN looked up "val_..." and watched the loss
  o.model_checkpoint_save_freq = 2;
  LRSchedulers s(o, f.setup);
  const double val_acc[6] = {50, 60, 70, 65, 80, 90};  // improves at 1, 2, 3, 5, 6; even ones: 2 and 6
  for (int e = 0; e < 6; ++e) epoch(s, 0.1 * e, 0.0, 1.0, val_acc[e]);  // a rising train loss would never save
  REQUIRE(f.saved.size() == 2);
  const auto is_file = [](const std::string& p, int epoch) {
    const std::string prefix = "./model-simplemlp-epoch-" + std::to_string(epoch) + "-";
    return p.rfind(prefix, 0) == 0 && p.size() == prefix.size() + 8 + 4 && p.substr(p.size() - 4) == ".npz";
  };
  CHECK(is_file(f.saved[0], 2));
  CHECK(is_file(f.saved[1], 6));
  CHECK(f.removed == std::vector<std::string>{f.saved[0]});
  CHECK(f.out.str() == "LRScheduler ModelCheckpoint: saving model weights and bias in " + f.saved[0] + "\n" +
                           "LRScheduler ModelCheckpoint: saving model weights and bias in " + f.saved[1] + "\n");
}

TEST_CASE("lr_schedulers: state saved mid-run continues identically", "[sched]") {
  auto model = small_model();
  LRSchedulerOptions o;
  o.names = "warm_up,reduce_lr_on_plateau,early_stopping,model_checkpoint";
  o.reduce_lr_on_plateau_patience = 1;
  o.early_stopping_patience = 3;
  const double val_loss[8] = {1.0, 0.9, 0.95, 0.97, 0.85, 0.9, 0.91, 0.92};
  Fixture a(0.1, true, model.get());
  a.setup.ranks = 2;
  LRSchedulers sa(o, a.setup);
  std::vector<io::NpyArray> arrays;
  Fixture b(0.1, true, model.get());
  b.setup.ranks = 2;
  LRSchedulers sb(o, b.setup);
  for (int e = 0; e < 8; ++e) {
    if (e == 4) {  // b takes a's state (and a's rate, as a checkpoint does) after 4 epochs
      sa.save_state(arrays);
      io::NpyArrayMap map;
      for (auto& x : arrays) map.emplace(x.name, x);
      sb.load_state(map, "mem");
      b.optimizer->set_learning_rate(a.lr());
    }
    for (int step = 0; step < 2; ++step) {
      sa.on_batch_begin();
      if (e >= 4) sb.on_batch_begin();
    }
    epoch(sa, 1.0, 0.0, val_loss[e], 0.0);
    if (e >= 4) {
      epoch(sb, 1.0, 0.0, val_loss[e], 0.0);
      CHECK(b.lr() == a.lr());
      CHECK(sb.stop_training() == sa.stop_training());
    }
  }
  CHECK(sa.stop_training());
  CHECK(arrays.size() == 6);  // 4 schedulers, early stopping's snapshot, model_checkpoint's last file
  io::NpyArrayMap missing;
  CHECK_THROWS_WITH(sb.load_state(missing, "ck.npz"), "ck.npz: no array 'dtnn_scheduler_0_warm_up'");
}
