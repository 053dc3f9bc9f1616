// One-process training runs for the model-averaging tests (test_model_averaging.cpp,
// test_dynamic_blocks.cpp): run_training's stages (train/run.h), `epochs` epochs, then finish_training(),
// keeping what the tests compare.
#pragma once

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "parallel/communicator.h"
#include "train/option_table.h"
#include "train/run.h"
#include "train/trainer.h"

namespace dtnn::test {

struct AveragingRun {
  std::vector<float> params, state;
  std::vector<double> losses;
  std::vector<int64_t> samples;
  std::optional<AveragingStats> totals;
  std::vector<std::pair<int, int64_t>> claimed;  // --dynamic_blocks: (epoch, block) in claim order
};

inline AveragingRun train_one_process(TrainOptions o, const Dataset& data, int epochs) {
  validate_options(o);
  auto comm = make_local_communicator();
  auto model = build_training_model(o, *comm);
  TrainerSetup setup = build_trainer(o, *model, data, *comm);
  AveragingRun r;
  for (int e = 1; e <= epochs; ++e) {
    const EpochRecord rec = setup.trainer->run_epoch(e, epochs, setup.splits);
    r.losses.push_back(rec.train.values[0]);
    r.samples.push_back(rec.train.samples);
  }
  r.totals = setup.trainer->finish_training();
  r.claimed = setup.trainer->claimed_blocks();
  r.params.assign(model->param_slab(), model->param_slab() + model->slab_size());
  r.state.assign(model->state_slab(), model->state_slab() + model->state_size());
  return r;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace dtnn::test
