// SampleSchedule: which training samples this rank walks in an epoch, and in what order.
//
// Three schedules, chosen when the trainer is built:
//   even split     data parallelism: every rank walks the same permutation of the training split (the dataset's
//                  shuffle from the epoch's shared generator) and takes its share of each global batch;
//   worker blocks  model averaging (dislib's data per worker, data/worker_blocks.h): this rank's own blocks,
//                  every rank running as many steps as the largest worker's;
//   dynamic blocks asynchronous averaging with --dynamic_blocks: blocks claimed one at a time from a counter
//                  the ranks share, until none is left.
// An epoch is one or more walks: `steps` global batches over order[0, count), cycled, `total` samples (one walk
// for the first two; one per claimed block for the third). Epoch lengths follow --steps_per_epoch, or
// --num_batches_per_worker under model averaging (per block with dynamic blocks).
//
// Memory: the even split's permutation is reserved at construction; the worker blocks are built on the first
// epoch (and again only if the training split changes size). Nothing is allocated per step.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "data/dataset.h"
#include "data/worker_blocks.h"
#include "parallel/communicator.h"
#include "parallel/one_sided.h"

namespace dtnn {

struct SampleWalk {
  const int64_t* order = nullptr;
  int64_t count = 0;  // samples in order (cycled when steps x batch exceeds them)
  int64_t steps = 0;  // global batches
  int64_t total = 0;  // samples of the walk over every rank: steps x batch, or count for a whole epoch
};

struct ScheduleOptions {
  bool worker_blocks = false;  // model averaging
  bool dynamic = false;        // --dynamic_blocks (worker blocks claimed at run time)
  BlockOptions blocks;
  int64_t fixed_steps = 0;     // > 0: steps per walk (--steps_per_epoch, or --num_batches_per_worker)
  uint64_t seed = 0;
};

class SampleSchedule {
 public:
  SampleSchedule(const Dataset& data, Communicator& comm, int64_t global_batch, const ScheduleOptions& options);

  // Prepares epoch `epoch` of `num_epochs` over `train`, drawing from shuffle_rng (the epoch's generator, the
  // same on every rank). With dynamic blocks the first call opens the shared counter: collective.
  void begin_epoch(int epoch, int num_epochs, const std::vector<int64_t>& train, Rng& shuffle_rng);
  // The epoch's next walk into *walk; false when the epoch has none left. Dynamic blocks: claims the next
  // block (recording the one walked before).
  bool next(int epoch, SampleWalk* walk);
  // Samples the progress line counts over the whole epoch, and the planned walk's total (even split, worker
  // blocks: the one walk; dynamic blocks: a whole epoch's blocks before any is claimed).
  int64_t shown() const { return shown_; }
  int64_t planned_total() const { return planned_.total; }
  bool dynamic() const { return options_.dynamic; }

  // After the last epoch, with dynamic blocks: closes the counter (collective) and returns how many blocks
  // each rank claimed; empty otherwise.
  std::vector<int64_t> finish();
  // The blocks this rank claimed, (epoch, block id), in order (dynamic blocks).
  const std::vector<std::pair<int, int64_t>>& claimed() const { return claimed_; }

 private:
  SampleWalk walk_over(const int64_t* order, int64_t count, int64_t span) const;

  const Dataset& data_;
  Communicator& comm_;
  int64_t global_batch_;
  ScheduleOptions options_;
  std::vector<int64_t> permutation_;
  std::unique_ptr<WorkerBlocks> blocks_;
  std::unique_ptr<BlockCounter> counter_;
  int64_t counter_slots_ = 0;
  std::vector<std::pair<int, int64_t>> claimed_;
  SampleWalk planned_;
  int64_t shown_ = 0;
  bool walked_ = false;       // even split / worker blocks: the epoch's walk was handed out
  int64_t position_ = -1;     // dynamic blocks: the position of the block being walked (-1: none yet)
};

}  // namespace dtnn
