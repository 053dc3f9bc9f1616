#include "parallel/sample_schedule.h"

#include "core/error.h"

namespace dtnn {

SampleSchedule::SampleSchedule(const Dataset& data, Communicator& comm, int64_t global_batch,
                               const ScheduleOptions& options)
    : data_(data), comm_(comm), global_batch_(global_batch), options_(options) {
  permutation_.reserve(static_cast<size_t>(data.count(Pool::train)));
}

SampleWalk SampleSchedule::walk_over(const int64_t* order, int64_t count, int64_t span) const {
  SampleWalk w;
  w.order = order;
  w.count = count;
  w.steps = options_.fixed_steps > 0 ? options_.fixed_steps : (span + global_batch_ - 1) / global_batch_;
  w.total = options_.fixed_steps > 0 ? w.steps * global_batch_ : span;
  return w;
}

void SampleSchedule::begin_epoch(int epoch, int num_epochs, const std::vector<int64_t>& train, Rng& shuffle_rng) {
  const int64_t ntrain = static_cast<int64_t>(train.size());
  walked_ = false;
  position_ = -1;
  if (!options_.worker_blocks) {  // the same permutation on every rank
    permutation_.assign(train.begin(), train.end());
    data_.shuffle(permutation_, shuffle_rng);
    planned_ = walk_over(permutation_.data(), ntrain, ntrain);
    shown_ = planned_.total;
    return;
  }
  // Every rank derives every rank's assignment from the seed.
  if (!blocks_ || blocks_->train_count() != ntrain)
    blocks_ = std::make_unique<WorkerBlocks>(ntrain, comm_.size(), options_.blocks);
  const Rng block_rng = Rng(options_.seed ^ 0xB10C5EEDull).fork(epoch);
  if (!options_.dynamic) {
    blocks_->assign(data_, train, comm_.rank(), block_rng, shuffle_rng);
    planned_ = walk_over(blocks_->samples().data(), static_cast<int64_t>(blocks_->samples().size()),
                         blocks_->largest());
    shown_ = planned_.total;
    return;
  }
  blocks_->draw(data_, train, block_rng, shuffle_rng);
  if (!counter_) {  // the first epoch, which every rank starts together: collective
    counter_ = open_block_counter(comm_, num_epochs + 1);
    counter_slots_ = num_epochs + 1;
    claimed_.reserve(static_cast<size_t>(num_epochs * blocks_->blocks()));
  }
  DTNN_CHECK(epoch >= 1 && epoch < counter_slots_, "--dynamic_blocks: epoch ", epoch, " beyond the ",
             counter_slots_ - 1, " the claim counters were opened for");
  planned_ = walk_over(permutation_.data(), ntrain, ntrain);
  shown_ = options_.fixed_steps > 0 ? options_.fixed_steps * global_batch_ * blocks_->blocks() : ntrain;
}

bool SampleSchedule::next(int epoch, SampleWalk* walk) {
  if (!options_.dynamic) {
    if (walked_) return false;
    walked_ = true;
    *walk = planned_;
    return true;
  }
  if (position_ >= 0) claimed_.push_back({epoch, blocks_->block_at(position_)});
  position_ = counter_->claim(epoch);
  if (position_ >= blocks_->blocks()) {
    position_ = -1;
    return false;
  }
  int64_t count = 0;
  const int64_t* order = blocks_->position_samples(position_, &count);
  *walk = walk_over(order, count, count);
  return true;
}

std::vector<int64_t> SampleSchedule::finish() {
  std::vector<int64_t> out;
  if (!counter_) return out;
  counter_->close();  // every rank has claimed its last block (each is inside this collective call)
  counter_.reset();
  std::vector<double> every(static_cast<size_t>(comm_.size()));
  const double mine = static_cast<double>(claimed_.size());
  comm_.allgather(&mine, 1, every.data());
  for (double b : every) out.push_back(static_cast<int64_t>(b));
  return out;
}

}  // namespace dtnn
