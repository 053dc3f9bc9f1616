// Model averaging: dislib.eddl's distributed training modes, in which every rank trains a local copy of the
// model on its own data (data/worker_blocks.h) with no per-step gradient sum, and the copies are merged now
// and then. ModelAveraging (parallel/model_averaging.h, these modes' distribution strategy) drives a
// WeightMerger through three calls; a mode is one implementation:
//   after_step()       after every local optimizer step (all ranks run the same number of steps);
//   end_epoch(e, last) after epoch e's training loop, before its validation pass; `last`: the run's last;
//   finish()           once after training (also after a scheduler stopped it early), before the model is
//                      evaluated and saved: merges what is still unmerged, so the final model is the merged
//                      one on every rank, and returns the run's totals (collective).
// The asynchronous modes (parallel/async_merger.h: MPI one-sided merges into general weights) plug in behind
// the same calls; there end_epoch() is not collective and asynchronous() says so, so an epoch's figures stay
// rank-local (no rank waits for another between merges).
//
// Synchronous (ModelAverager): every average_every_epochs epochs (dislib's n_epocs_sync) or, when
// average_every_steps > 0, every that many steps counted over the run (local SGD), and always at the end,
// one in-place MPI_Allreduce of the parameter slab, scaled by 1/ranks, so every rank continues from the
// mean. What else is averaged:
//   - BatchNormalization running statistics: with the weights (average_bn_statistics, the default), or kept
//     local between averages and averaged only by the final one (the evaluated model must be one model);
//   - the optimizer state (momentum, Adam's moments): kept local by default, as dislib (Keras optimizers on
//     the workers) and PyTorch's PostLocalSGD do; average_optimizer_state averages its slabs too. The step
//     counter needs nothing: every rank ran the same steps.
// Each rank's slabs are reduced in place (no staging buffer, nothing allocated after construction). On one
// rank an average changes nothing (no arithmetic is done), so training is bit-identical to plain training.
//
// Cost, per epoch and per run: averages done, bytes each rank contributed (floats x 4 per average) and the
// seconds spent inside the averages' allreduces (which include waiting for the slowest rank: with a
// straggler, the fast ranks' time here is the straggler's lag).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/model.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "parallel/distribution.h"
#include "train/options.h"

namespace dtnn {

class WeightMerger {
 public:
  virtual ~WeightMerger() = default;
  virtual void after_step() = 0;
  // --dynamic_blocks: after each block a rank claimed and trained (dislib's piece of work).
  virtual void end_block() {}
  // Returns this epoch's figures (collective: every rank calls it).
  virtual AveragingStats end_epoch(int epoch, bool last) = 0;
  virtual AveragingStats finish() = 0;
  // Something other than a training step replaced this rank's weights (early stopping restored its best
  // epoch's snapshot). The synchronous averager then averages in finish(): each rank's snapshot is its own
  // when that epoch ended without an average. The asynchronous modes' finish() hands every rank the
  // general weights whatever the ranks hold, so they ignore it.
  virtual void weights_replaced() {}
  // Whether every rank holds the same model now (weights and BatchNormalization statistics): after an
  // average with nothing trained since. The trainer validates rank 0's model alone when they differ.
  virtual bool ranks_agree() const { return false; }
  // True when end_epoch() is rank-local (the asynchronous modes): the trainer must not make the ranks meet
  // between epochs either.
  virtual bool asynchronous() const { return false; }
};

// The merger of options.model_averaging; null for "none". Collective (every rank builds one).
std::unique_ptr<WeightMerger> make_weight_merger(const TrainOptions& options, Communicator& comm, Model& model,
                                                 Optimizer& optimizer);

class ModelAverager final : public WeightMerger {
 public:
  ModelAverager(const TrainOptions& options, Communicator& comm, Model& model, Optimizer& optimizer);
  void after_step() override;
  AveragingStats end_epoch(int epoch, bool last) override;
  AveragingStats finish() override;
  void weights_replaced() override;
  bool ranks_agree() const override { return !dirty_ && !state_local_; }
  // Averages now (collective); `final`: BN statistics included whatever average_bn_statistics says.
  void average(bool final);

 private:
  void average_slab(float* data, int64_t count);
  AveragingStats gather(const AveragingStats& mine);

  Communicator& comm_;
  Model& model_;
  Optimizer& optimizer_;
  int64_t every_epochs_, every_steps_;
  bool optimizer_state_, bn_statistics_;
  std::vector<std::pair<std::string, Tensor*>> state_slabs_;  // the optimizer's, named once (state() allocates)
  int64_t steps_ = 0;              // steps over the run
  bool dirty_ = false;             // a local step since the last average
  bool state_local_ = false;       // BN statistics kept local have changed since they were last averaged
  AveragingStats epoch_, run_;     // this rank's, before gather()
};

}  // namespace dtnn
