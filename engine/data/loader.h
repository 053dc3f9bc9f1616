// BatchLoader: prepares the next batch on a worker thread while the current one computes.
//
// The trainer submits the indices of step k + 1, then waits for step k's batch and computes it, so the
// decoding, preprocessing, augmentation and layout of one batch overlap the forward/backward pass of the
// previous one (PyDTNN also produced batches on a background thread, with a prefetch of 1).
//
// Memory: two buffer sets (x: max_batch x h*w*c floats in the requested layout; y: max_batch x classes
// one-hot floats) and two index lists, allocated at construction; submit() and wait() never allocate.
// Protocol: at most one batch in flight. submit() fills the slot the consumer is not holding; wait()
// returns the oldest submitted batch, whose buffers stay valid until the second submit() after it (the
// one that reuses its slot). With threaded = false, submit() loads synchronously on the caller's thread;
// the results are bit-identical either way, since the same code fills the same buffers.
//
// Errors: an exception thrown while loading on the worker (a corrupt shard, a bad label) is captured and
// re-thrown, unchanged, by the wait() that asks for that batch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "data/augment.h"
#include "data/dataset.h"
#include "tensor/tensor.h"

namespace dtnn {

struct Batch {
  const float* x = nullptr;  // count x h*w*c, in the loader's layout
  const float* y = nullptr;  // count x classes, one-hot
  int64_t count = 0;
};

class BatchLoader {
 public:
  BatchLoader(const Dataset& data, Layout layout, int64_t max_batch, const Augmentation& augmentation,
              bool threaded);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts loading count <= max_batch samples of a pool (the indices are copied). augment: apply the
  // augmentation with this epoch's decisions (training batches only; the trainer decides).
  void submit(Pool pool, const int64_t* indices, int64_t count, bool augment, int64_t epoch);
  // The oldest submitted batch, once ready; re-throws the exception its loading raised.
  Batch wait();
  // Waits for any batch in flight and drops it (and its error): call before a new pass in case the
  // previous one ended by an exception between submit() and wait().
  void reset();

  int64_t max_batch() const { return max_batch_; }
  // Page-locks both buffer sets (GPU training: asynchronous host-to-device copies straight from them).
  void pin_host_memory();

 private:
  struct Slot {
    Pool pool = Pool::train;
    std::vector<int64_t> indices;
    int64_t count = 0;
    bool augment = false;
    int64_t epoch = 0;
    Tensor x, y;
    std::exception_ptr error;
  };
  void load(Slot& slot) const;
  void worker();

  const Dataset& data_;
  const Layout layout_;
  const int64_t max_batch_;
  const Augmentation augmentation_;
  Slot slots_[2];
  int64_t submitted_ = 0, completed_ = 0, waited_ = 0;  // batch counters; slot = counter % 2
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, pinned_ = false;
  std::thread thread_;  // not started when threaded is false
};

}  // namespace dtnn
