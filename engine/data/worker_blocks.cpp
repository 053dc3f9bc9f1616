#include "data/worker_blocks.h"

#include <algorithm>

#include "core/error.h"

namespace dtnn {

WorkerBlocks::WorkerBlocks(int64_t train_count, int ranks, const BlockOptions& options)
    : count_(train_count), blocks_(ranks * options.blocks_per_worker), per_worker_(options.blocks_per_worker),
      ranks_(ranks), options_(options) {
  DTNN_CHECK(options.blocks_per_worker >= 1, "--blocks_per_worker must be at least 1");
  DTNN_CHECK(count_ >= blocks_, "model averaging cuts the ", count_, " training samples into ", ranks, " workers x ",
             options.blocks_per_worker, " blocks: every block needs a sample (fewer --blocks_per_worker or ranks)");
  order_.resize(blocks_);
  shuffled_.resize(count_);
  scratch_.reserve(count_ / blocks_ + 1);
  mine_.reserve((count_ / blocks_ + 1) * per_worker_);
}

void WorkerBlocks::block_range(int64_t b, int64_t* begin, int64_t* end) const {
  const int64_t base = count_ / blocks_, extra = count_ % blocks_;
  *begin = b * base + std::min(b, extra);
  *end = *begin + base + (b < extra ? 1 : 0);
}

const int64_t* WorkerBlocks::position_samples(int64_t p, int64_t* n) const {
  DTNN_ASSERT(p >= 0 && p < blocks_);
  int64_t begin, end;
  block_range(order_[p], &begin, &end);
  *n = end - begin;
  return shuffled_.data() + begin;
}

void WorkerBlocks::draw(const Dataset& data, const std::vector<int64_t>& train, Rng block_rng, Rng data_rng) {
  DTNN_ASSERT(static_cast<int64_t>(train.size()) == count_);
  for (int64_t b = 0; b < blocks_; ++b) order_[b] = b;
  if (options_.shuffle_blocks) fisher_yates(order_, block_rng);
  for (int64_t b = 0; b < blocks_; ++b) {
    int64_t begin, end;
    block_range(b, &begin, &end);
    if (!options_.shuffle_block_data) {
      std::copy(train.begin() + begin, train.begin() + end, shuffled_.begin() + begin);
      continue;
    }
    scratch_.assign(train.begin() + begin, train.begin() + end);
    data.shuffle(scratch_, data_rng);
    std::copy(scratch_.begin(), scratch_.end(), shuffled_.begin() + begin);
  }
}

void WorkerBlocks::assign(const Dataset& data, const std::vector<int64_t>& train, int rank, Rng block_rng,
                          Rng data_rng) {
  DTNN_ASSERT(rank >= 0 && rank < ranks_);
  draw(data, train, block_rng, data_rng);
  mine_.clear();
  largest_ = 0;
  for (int w = 0; w < ranks_; ++w) {
    int64_t total = 0;
    for (int64_t p = w * per_worker_; p < (w + 1) * per_worker_; ++p) {
      int64_t begin, end;
      block_range(order_[p], &begin, &end);
      total += end - begin;
      if (w == rank) mine_.insert(mine_.end(), shuffled_.begin() + begin, shuffled_.begin() + end);
    }
    largest_ = std::max(largest_, total);
  }
}

}  // namespace dtnn
