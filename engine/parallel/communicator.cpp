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

}  // namespace dtnn
