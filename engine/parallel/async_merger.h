// Model averaging's asynchronous modes (dislib.eddl's asynchronous and partially asynchronous training): each
// rank trains its own copy on its own blocks and, now and then, merges what it learnt into the general
// weights and continues from the general weights, without waiting for the other ranks. The general weights
// live in an MPI window on rank 0 (parallel/communicator.h, GeneralWindow); a merge is one passive-target
// access (exclusive lock, MPI_Get_accumulate(MPI_SUM), unlock) that rank 0 takes no part in.
//
// A merge, on rank r with local weights w (the window's exclusive lock held throughout, GeneralWindow::merge):
//   G       = the general weights as they are; k = 1 + the merges every rank applied before this one
//   alpha   = 1 / min(k, ranks)
//   G      += alpha * (w - G)                   in float, element by element (the delta that is sent)
//   w       = G                                 this rank continues from the general weights
// So the general weights are a running mean of the merged models, never an extrapolation: the first merge
// of the run takes the merging rank's model whole, the first `ranks` merges average their models exactly
// (ranks that all merge once from the same start produce the synchronous mode's average, whatever their
// order), and afterwards each merge moves the general weights 1/ranks of the way to the merging rank's
// model (an exponential moving average that weighs the most recent models of every rank about equally
// when they take turns). With 2 ranks, every merge after the first is dislib.eddl's own rule,
// general = (general + worker) / 2.
// Why not merge deltas against the rank's last take-back (downpour/EASGD-style `G += (w - base)/ranks`,
// this merger's first rule): the first rank to merge then took back base + (w - base)/ranks, a model
// pulled toward the initial weights, and later merges added stale progress on top of newer models; with
// BatchNormalization statistics merged alike, resnet20's asynchronous runs collapsed far below synchronous
// averaging's accuracy (results/baselines/averaging_2core.md).
// No merge is lost: the general weights end as the initial weights plus the sum of every delta merged,
// and replaying the merges in the window's order reproduces them (tests/parallel/test_mpi_async.cpp).
//
// When a rank merges (periods counted on its own, never agreed with the others):
//   asynchronous            every average_every_epochs epochs (dislib's n_epocs_sync), at the epoch's end;
//   partially_asynchronous  every average_every_steps steps (each "piece of work"; 0 means every step),
//                           counted over the run; with --dynamic_blocks after each claimed block instead
//                           (the piece of work is a block);
// and both once more in finish() if the rank trained since its last merge. finish() is the one collective:
// every rank waits there for the others' last merges, then the general weights are copied to every rank, so
// the final model is the general one, identical everywhere.
// BatchNormalization running statistics are merged with the weights (the same window, after them) unless
// average_bn_statistics is false; then they stay local and finish() averages them (allreduce). The
// optimizer state stays local (average_optimizer_state is refused for these modes).
// One rank: nothing to merge with, so no window and no arithmetic (a merge is counted and changes nothing):
// training is bit-identical to plain training.
//
// Nothing is allocated after construction (delta and general are sized once). Figures (rank-local per
// epoch; finish() gathers every rank's): merges, bytes (general read + delta sent = 8 bytes per float per
// merge), seconds inside the window's lock..unlock (waiting for another rank's merge included).
#pragma once

#include <memory>
#include <vector>

#include "parallel/model_averager.h"
#include "parallel/one_sided.h"

namespace dtnn {

class AsyncMerger final : public WeightMerger, private GeneralWindow::Rule {
 public:
  // partial: partially_asynchronous (by steps), else asynchronous (by epochs). Collective (opens the window).
  AsyncMerger(const TrainOptions& options, Communicator& comm, Model& model, bool partial);
  void after_step() override;
  void end_block() override;  // --dynamic_blocks: partially_asynchronous merges here
  AveragingStats end_epoch(int epoch, bool last) override;  // not collective: this rank's figures
  AveragingStats finish() override;                          // collective
  bool asynchronous() const override { return true; }
  // Merges now (what after_step/end_epoch do when the period says so); a no-op on the window when this rank
  // has not trained since its last merge.
  void merge();
  int64_t merged_floats() const { return count_; }  // per merge: the parameters (+ BN statistics)
  // The window's index of this rank's latest merge (0 = the run's first merge; -1 before any, or 1 rank).
  int64_t last_merge_index() const { return last_index_; }

 private:
  AveragingStats take_epoch();
  void delta(const float* general, int64_t merges_before, float* delta) override;  // the rule above

  Communicator& comm_;
  Model& model_;
  bool partial_, merge_state_, dynamic_;
  int64_t every_epochs_, every_steps_;
  int64_t params_, state_, count_;
  int64_t steps_ = 0, last_index_ = -1;
  bool dirty_ = false;
  std::unique_ptr<GeneralWindow> window_;
  std::vector<float> general_, delta_;
  AveragingStats epoch_, run_;
};

}  // namespace dtnn
