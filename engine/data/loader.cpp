#include "data/loader.h"

#include <algorithm>

#include "backend/gpu_ops.h"
#include "core/error.h"

namespace dtnn {

BatchLoader::BatchLoader(const Dataset& data, Layout layout, int64_t max_batch, const Augmentation& augmentation,
                         bool threaded)
    : data_(data), layout_(layout), max_batch_(max_batch), augmentation_(augmentation) {
  DTNN_ASSERT(max_batch > 0);
  const DatasetShape& s = data.shape();
  for (Slot& slot : slots_) {
    slot.indices.resize(max_batch);
    slot.x = Tensor::zeros(Shape{max_batch, s.h * s.w * s.c});
    slot.y = Tensor::zeros(Shape{max_batch, s.classes});
  }
  if (threaded) thread_ = std::thread([this] { worker(); });
}

BatchLoader::~BatchLoader() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  if (pinned_)
    for (Slot& slot : slots_) {
      gpu::host_unregister(slot.x.data());
      gpu::host_unregister(slot.y.data());
    }
}

void BatchLoader::pin_host_memory() {
  if (pinned_) return;
  for (Slot& slot : slots_) {
    gpu::host_register(slot.x.data(), static_cast<size_t>(slot.x.numel()) * sizeof(float));
    gpu::host_register(slot.y.data(), static_cast<size_t>(slot.y.numel()) * sizeof(float));
  }
  pinned_ = true;
}

void BatchLoader::load(Slot& slot) const {
  data_.load_batch(slot.pool, slot.indices.data(), slot.count, layout_, slot.x.data(), slot.y.data());
  if (slot.augment) {
    const DatasetShape& s = data_.shape();
    augment_batch(augmentation_, slot.epoch, slot.indices.data(), slot.count, layout_, s.h, s.w, s.c, slot.x.data());
  }
}

void BatchLoader::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || completed_ < submitted_; });
    if (stop_) return;
    Slot& slot = slots_[completed_ % 2];
    lock.unlock();
    try {
      load(slot);
    } catch (...) {
      slot.error = std::current_exception();
    }
    lock.lock();
    ++completed_;
    cv_.notify_all();
  }
}

void BatchLoader::submit(Pool pool, const int64_t* indices, int64_t count, bool augment, int64_t epoch) {
  DTNN_ASSERT(count >= 0 && count <= max_batch_);
  // The slot written here is free: the consumer holds the other one, and nothing is in flight.
  DTNN_ASSERT(submitted_ == waited_);
  Slot& slot = slots_[submitted_ % 2];
  slot.pool = pool;
  std::copy(indices, indices + count, slot.indices.begin());
  slot.count = count;
  slot.augment = augment;
  slot.epoch = epoch;
  slot.error = nullptr;
  if (!thread_.joinable()) {
    try {
      load(slot);
    } catch (...) {
      slot.error = std::current_exception();
    }
    ++submitted_;
    ++completed_;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++submitted_;
  }
  cv_.notify_all();
}

Batch BatchLoader::wait() {
  DTNN_ASSERT(waited_ < submitted_);
  Slot* slot;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return completed_ > waited_; });
    slot = &slots_[waited_ % 2];
    ++waited_;
  }
  if (slot->error) {
    std::exception_ptr error = slot->error;
    slot->error = nullptr;
    std::rethrow_exception(error);
  }
  return Batch{slot->x.data(), slot->y.data(), slot->count};
}

void BatchLoader::reset() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return completed_ == submitted_; });
  for (Slot& slot : slots_) slot.error = nullptr;
  waited_ = submitted_;
}

}  // namespace dtnn
