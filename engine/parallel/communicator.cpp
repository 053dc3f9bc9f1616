// The device reduction every communicator has: gradients staged through pinned host memory.
#include "parallel/communicator.h"

#include <algorithm>

#include "backend/gpu_ops.h"
#include "core/error.h"

namespace dtnn {

Communicator::~Communicator() { gpu::pinned_free(staging_); }

void Communicator::reserve_device_staging(int64_t count) {
  if (size() == 1 || count <= staging_count_) return;
  gpu::pinned_free(staging_);
  staging_ = static_cast<float*>(gpu::pinned_alloc(static_cast<size_t>(count) * sizeof(float)));
  staging_count_ = count;
}

void Communicator::allreduce_sum_device(float* data, int64_t count) {
  if (size() == 1) return;
  reserve_device_staging(count);  // a no-op after the trainer's reservation
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  gpu::copy_to_host(staging_, data, bytes);  // waits for the gradients
  allreduce_sum(staging_, count);
  gpu::copy_to_device(data, staging_, bytes);  // the stream orders it before the optimizer's update
  gpu::synchronize();                          // staging_ is reused by the next call
}

void Communicator::allgather(const double* mine, int count, double* all) { std::copy(mine, mine + count, all); }

void Communicator::gather_bytes(const std::string& mine, std::vector<std::string>& all) { all = {mine}; }

void Communicator::allreduce_sum_device_on(float*, int64_t, void*) {
  fail("device reductions on a stream need NCCL (--enable_nccl); ", library_version(), " reduces host memory");
}

std::unique_ptr<GeneralWindow> Communicator::open_general_window(const float*, int64_t) {
  fail("one-sided general weights need MPI and more than one rank (", library_version(), ", ", size(), " rank(s))");
}

namespace {

class LocalBlockCounter final : public BlockCounter {
 public:
  explicit LocalBlockCounter(int64_t slots) : next_(static_cast<size_t>(slots), 0) {}
  int64_t claim(int64_t slot) override {
    DTNN_ASSERT(slot >= 0 && slot < static_cast<int64_t>(next_.size()));
    return next_[static_cast<size_t>(slot)]++;
  }
  void close() override {}

 private:
  std::vector<int64_t> next_;
};

}  // namespace

std::unique_ptr<BlockCounter> Communicator::open_block_counter(int64_t slots) {
  DTNN_CHECK(size() == 1, "shared block counters across ", size(), " ranks need MPI (", library_version(), ")");
  return std::make_unique<LocalBlockCounter>(slots);
}

}  // namespace dtnn
