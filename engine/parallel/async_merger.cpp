#include "parallel/async_merger.h"

#include <algorithm>

#include "core/clock.h"
#include "core/error.h"

namespace dtnn {

AsyncMerger::AsyncMerger(const TrainOptions& options, Communicator& comm, Model& model, bool partial)
    : comm_(comm), model_(model), partial_(partial), merge_state_(options.average_bn_statistics),
      dynamic_(options.dynamic_blocks),
      every_epochs_(options.average_every_epochs), every_steps_(std::max<int64_t>(1, options.average_every_steps)),
      params_(model.slab_size()), state_(model.state_size()), count_(params_ + (merge_state_ ? state_ : 0)) {
  DTNN_CHECK(model.device() == Device::cpu, "model averaging runs on CPU models only");
  DTNN_CHECK(every_epochs_ >= 1, "model averaging: bad period");
  if (comm.size() == 1) return;  // nothing to merge with (see the header)
  general_.resize(static_cast<size_t>(count_));
  delta_.resize(static_cast<size_t>(count_));
  // Every rank starts from rank 0's weights (the trainer broadcast them): the general weights start there.
  std::copy(model.param_slab(), model.param_slab() + params_, general_.begin());
  if (merge_state_) std::copy(model.state_slab(), model.state_slab() + state_, general_.begin() + params_);
  window_ = open_general_window(comm, general_.data(), count_);
}

void AsyncMerger::delta(const float* general, int64_t merges_before, float* delta) {
  const int64_t k = std::min<int64_t>(merges_before + 1, comm_.size());
  const float alpha = 1.0f / static_cast<float>(k);
  const float* w = model_.param_slab();
  for (int64_t i = 0; i < params_; ++i) delta[i] = alpha * (w[i] - general[i]);
  if (merge_state_) {
    const float* s = model_.state_slab();
    for (int64_t i = 0; i < state_; ++i) delta[params_ + i] = alpha * (s[i] - general[params_ + i]);
  }
}

void AsyncMerger::merge() {
  if (!dirty_) return;
  dirty_ = false;
  ++epoch_.averages;
  if (!window_) return;  // one rank: the general weights are its weights
  const double t0 = now_s();
  last_index_ = window_->merge(*this, general_.data(), delta_.data());
  epoch_.wait_s += now_s() - t0;
  epoch_.bytes += 8.0 * static_cast<double>(count_);
  std::copy(general_.begin(), general_.begin() + params_, model_.param_slab());
  if (merge_state_) std::copy(general_.begin() + params_, general_.end(), model_.state_slab());
}

void AsyncMerger::after_step() {
  ++steps_;
  dirty_ = true;
  if (partial_ && !dynamic_ && steps_ % every_steps_ == 0) merge();
}

void AsyncMerger::end_block() {
  if (partial_ && dynamic_) merge();
}

AveragingStats AsyncMerger::take_epoch() {
  const AveragingStats mine = epoch_;
  run_.averages += mine.averages;
  run_.bytes += mine.bytes;
  run_.wait_s += mine.wait_s;
  epoch_ = AveragingStats{};
  return mine;
}

AveragingStats AsyncMerger::end_epoch(int epoch, bool last) {
  if (last || (!partial_ && epoch % every_epochs_ == 0)) merge();
  AveragingStats mine = take_epoch();
  mine.max_wait_s = mine.wait_s;  // this rank's only: asking the others would make the ranks meet
  return mine;
}

AveragingStats AsyncMerger::finish() {
  merge();
  take_epoch();
  AveragingStats all = run_;
  if (window_) {  // the meeting point: every rank's merges are in; everyone takes the general weights
    std::vector<float>& general = general_;
    window_->close(general.data());
    window_.reset();
    std::copy(general.begin(), general.begin() + params_, model_.param_slab());
    if (merge_state_) std::copy(general.begin() + params_, general.end(), model_.state_slab());
  }
  if (!merge_state_ && state_ > 0 && comm_.size() > 1) {  // local BN statistics: their mean, once
    float* s = model_.state_slab();
    comm_.allreduce_sum(s, state_);
    const float scale = 1.0f / static_cast<float>(comm_.size());
    for (int64_t i = 0; i < state_; ++i) s[i] *= scale;
  }
  const double mine[3] = {static_cast<double>(run_.averages), run_.bytes, run_.wait_s};
  std::vector<double> every(static_cast<size_t>(3 * comm_.size()));
  comm_.allgather(mine, 3, every.data());
  all.max_wait_s = 0.0;
  for (int r = 0; r < comm_.size(); ++r) {
    all.merges_per_rank.push_back(static_cast<int64_t>(every[3 * r]));
    all.max_wait_s = std::max(all.max_wait_s, every[3 * r + 2]);
  }
  return all;
}

}  // namespace dtnn
