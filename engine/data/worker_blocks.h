// WorkerBlocks: dislib's data per worker for model averaging (parallel/model_averager.h): each worker (rank)
// trains on its own disjoint blocks of the training list, not on a share of every global batch.
//
// The training list (Splits::train, in its stored order) is cut into B = ranks x blocks_per_worker
// contiguous blocks as evenly as possible (the first N % B blocks one sample longer). For epoch e, from two
// generators every rank derives alike (so every rank computes every rank's assignment, with no message):
//   shuffle_blocks      (dislib's name) the block order is a Fisher-Yates permutation drawn from
//                       `block_rng`; false: block b in position b. Worker r takes the blocks in positions
//                       [r * blocks_per_worker, (r + 1) * blocks_per_worker).
//   shuffle_block_data  (dislib's name) every block's samples are permuted with Dataset::shuffle, the blocks
//                       visited in block-id order, all drawing from the one stream `data_rng`; false: stored
//                       order.
// A worker's samples are its blocks' samples, block after block. With one rank, one block per worker and
// shuffle_block_data, they are exactly Dataset::shuffle(train, data_rng): plain training's epoch order when
// data_rng is its epoch generator, which is what makes 1-rank model averaging equal plain training.
//
// --dynamic_blocks (train/trainer.h) uses the same epoch's block order and block contents, but no fixed
// assignment: draw() prepares them and the ranks claim positions 0, 1, ... of the order at run time
// (position_samples()).
//
// Memory: the buffers are sized by the constructor; assign() and draw() never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "data/dataset.h"

namespace dtnn {

struct BlockOptions {
  int64_t blocks_per_worker = 1;
  bool shuffle_blocks = true;
  bool shuffle_block_data = true;
};

class WorkerBlocks {
 public:
  // Throws dtnn::Error when the list has fewer samples than blocks (a worker would have none).
  WorkerBlocks(int64_t train_count, int ranks, const BlockOptions& options);

  // This epoch's assignment: fills samples() with `rank`'s samples (indices from `train`, of train_count
  // entries) and largest() with the most any worker got (every worker runs the same number of steps).
  void assign(const Dataset& data, const std::vector<int64_t>& train, int rank, Rng block_rng, Rng data_rng);
  // The epoch's block order and every block's samples only (what assign() does before picking a rank's).
  void draw(const Dataset& data, const std::vector<int64_t>& train, Rng block_rng, Rng data_rng);
  // The samples of the block in position p of the epoch's order (after draw() or assign()): n of them,
  // valid until the next draw()/assign().
  const int64_t* position_samples(int64_t p, int64_t* n) const;
  int64_t largest_block() const { return (count_ + blocks_ - 1) / blocks_; }
  const std::vector<int64_t>& samples() const { return mine_; }
  int64_t largest() const { return largest_; }
  int64_t blocks() const { return blocks_; }
  int64_t train_count() const { return count_; }
  // Block b's range [begin, end) of the training list.
  void block_range(int64_t b, int64_t* begin, int64_t* end) const;
  // The block in position p of the epoch's order (after assign()).
  int64_t block_at(int64_t p) const { return order_[p]; }

 private:
  int64_t count_, blocks_, per_worker_;
  int ranks_;
  BlockOptions options_;
  std::vector<int64_t> order_;     // block ids, by position
  std::vector<int64_t> shuffled_;  // the training list with every block's samples in the epoch's order
  std::vector<int64_t> scratch_;   // one block, for Dataset::shuffle
  std::vector<int64_t> mine_;
  int64_t largest_ = 0;
};

}  // namespace dtnn
