// The run that the weights and checkpoint targets load files into: a model of a few hundred parameters
// (so its files are a few KB: the zoo's smallest, simplecnn, writes 800 KB), adam (two state slabs), a
// BatchNormalization (buffers and a state slab) and three LR schedulers with state. Built once per process.
// DTNN_FUZZ_WRITE_SEED=<file> makes a target write its seed with the engine's own writer and exit
// (tests/fuzz/README.md): the seeds then match this run exactly, so the fuzzer starts past every check.
#pragma once

#include <cstdlib>
#include <memory>

#include "layers/layers.h"
#include "models/model.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "train/options.h"
#include "train/trainer.h"

namespace dtnn::fuzz {

struct TinyRun {
  TrainOptions options;
  std::unique_ptr<Model> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<LRSchedulers> schedulers;
};

inline TrainOptions tiny_options() {
  TrainOptions o;
  o.model_name = "fuzz_tiny";
  o.batch_size = 2;
  o.conv_algo = "reference";  // no best_of cache or heuristic involved
  o.optimizer.name = "adam";
  o.optimizer.learning_rate = 0.001;
  o.lr_schedulers.names = "warm_up,reduce_lr_on_plateau,early_stopping";
  o.lr_schedulers.reduce_lr_on_plateau_metric = "categorical_cross_entropy";  // no validation set here
  o.lr_schedulers.early_stopping_metric = "categorical_cross_entropy";
  return o;
}

// Input 4x4x2 -> Conv2D 3x3x3 -> BatchNormalization -> Relu -> Flatten -> FC 3 -> Softmax.
inline std::unique_ptr<Model> tiny_model(const TrainOptions& o) {
  auto m = std::make_unique<Model>(o.model_name);
  m->add(make_input(4, 4, 2));
  Conv2DSpec conv;
  conv.nfilters = 3;
  conv.filter_shape = {3, 3};
  conv.padding = 1;
  m->add(make_conv2d(conv));
  m->add(make_batchnorm(), "relu");
  m->add(make_flatten());
  m->add(make_fc(3), "softmax");
  BuildContext ctx;
  ctx.max_batch = o.batch_size;
  ctx.conv_algo = o.conv_algo;
  m->build(ctx, o.seed);
  return m;
}

inline TinyRun& tiny_run() {
  static TinyRun run = [] {
    TinyRun r;
    r.options = tiny_options();
    r.model = tiny_model(r.options);
    r.optimizer = make_optimizer(r.options.optimizer, r.model->slab_size());
    SchedulerSetup setup;
    setup.value_names = {"categorical_cross_entropy", "categorical_accuracy"};
    setup.steps_per_epoch = 4;
    setup.model_name = r.options.model_name;
    setup.optimizer = r.optimizer.get();
    setup.model = r.model.get();
    setup.save_weights = [](const std::string&) {};
    r.schedulers = std::make_unique<LRSchedulers>(r.options.lr_schedulers, setup);
    return r;
  }();
  return run;
}

// The seed file to write instead of fuzzing, or null.
inline const char* seed_to_write() {
  const char* path = std::getenv("DTNN_FUZZ_WRITE_SEED");
  return path && *path ? path : nullptr;
}

}  // namespace dtnn::fuzz
