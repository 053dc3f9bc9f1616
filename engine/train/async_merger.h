// Model averaging's asynchronous modes (dislib.eddl's asynchronous and partially asynchronous training): each
// rank trains its own copy on its own blocks and, now and then, merges what it learnt into the general
// weights and continues from the general weights, without waiting for the other ranks. The general weights
// live in an MPI window on rank 0 (parallel/communicator.h, GeneralWindow); a merge is one passive-target
// access (exclusive lock, MPI_Get_accumulate(MPI_SUM), unlock) that rank 0 takes no part in.
//
// A merge, on rank r with local weights w and `base` (the general weights it last took back):
//   delta   = (w - base) * (1 / ranks)         in float, element by element
//   before  = the general weights, delta added to them atomically (GeneralWindow::merge)
//   w = base = before + delta                   the general weights right after this merge
// The 1/ranks weight makes the merges commutative steps toward the mean: ranks that all merge from the same
// base produce exactly the synchronous mode's average, whatever their order; ranks out of step each move
// the general weights by their share of their own progress (a slow rank's stale delta counts 1/ranks, as
// in downpour/EASGD-style merging). No merge is lost: the general weights end as the initial weights plus
// the sum of every delta merged (tests/parallel/test_mpi_async.cpp checks it).
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
// Nothing is allocated after construction (delta and base are sized once). Figures (rank-local per epoch;
// finish() gathers every rank's): merges, bytes (delta out + general back = 8 bytes per float per merge),
// seconds inside the window's lock..unlock (waiting for another rank's merge included).
#pragma once

#include <memory>
#include <vector>

#include "train/model_averager.h"

namespace dtnn {

class AsyncMerger final : public WeightMerger {
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

 private:
  AveragingStats take_epoch();

  Communicator& comm_;
  Model& model_;
  bool partial_, merge_state_, dynamic_;
  int64_t every_epochs_, every_steps_;
  int64_t params_, state_, count_;
  int64_t steps_ = 0;
  bool dirty_ = false;
  std::unique_ptr<GeneralWindow> window_;
  std::vector<float> base_, delta_;
  AveragingStats epoch_, run_;
};

}  // namespace dtnn
