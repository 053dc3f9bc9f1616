#include "parallel/one_sided.h"

#include <vector>

#include "core/error.h"

namespace dtnn {

std::unique_ptr<GeneralWindow> open_general_window(Communicator& comm, const float* initial, int64_t count) {
  if (comm.size() > 1) return open_mpi_general_window(comm, initial, count);
  fail("one-sided general weights need MPI and more than one rank (", comm.library_version(), ", 1 rank)");
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

std::unique_ptr<BlockCounter> open_block_counter(Communicator& comm, int64_t slots) {
  if (comm.size() > 1) return open_mpi_block_counter(comm, slots);
  return std::make_unique<LocalBlockCounter>(slots);
}

}  // namespace dtnn
