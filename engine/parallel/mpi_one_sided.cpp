// The MPI one-sided communication of parallel/one_sided.h: windows on MPI_COMM_WORLD held by rank 0.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <exception>

#include "core/error.h"
#include "parallel/mpi_check.h"
#include "parallel/one_sided.h"

namespace dtnn {
namespace {

constexpr int64_t kChunk = INT_MAX;  // MPI counts are int

// The general weights in a window on rank 0 (MPI_Win_allocate; the other ranks expose 0 bytes), followed by
// one float counting the merges applied (exact to 2^24 merges, checked). A merge is one passive-target
// access epoch under MPI_Win_lock(EXCLUSIVE, 0): MPI_Get of the weights and the count, MPI_Win_flush (the
// get is complete: a get and a later accumulate in one epoch are otherwise unordered), the rule computes
// the delta here, MPI_Accumulate(MPI_SUM) of the delta and of 1 to the count, MPI_Win_unlock. The exclusive
// lock serialises whole merges, as dislib's COMMUTATIVE tasks on the shared weights run one at a time in
// any order: a merge reads a state made of whole merges, never half of another rank's. On one node Open MPI
// 4.1 uses osc/sm (shared memory): the origin does the reads and updates itself and rank 0 takes no part,
// even while it computes without calling MPI.
class MpiGeneralWindow final : public GeneralWindow {
 public:
  MpiGeneralWindow(Communicator& comm, const float* initial, int64_t count) : comm_(comm), count_(count) {
    const bool root = comm.rank() == 0;
    const MPI_Aint bytes = root ? static_cast<MPI_Aint>(count + 1) * static_cast<MPI_Aint>(sizeof(float)) : 0;
    DTNN_MPI_CHECK(MPI_Win_allocate(bytes, sizeof(float), MPI_INFO_NULL, MPI_COMM_WORLD, &general_, &win_));
    if (root) {  // local stores into the window: inside an access epoch on itself (separate memory model)
      DTNN_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win_));
      std::copy(initial, initial + count, general_);
      general_[count] = 0.0f;
      DTNN_MPI_CHECK(MPI_Win_unlock(0, win_));
    }
    DTNN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // no merge before the window holds the initial weights
  }
  // MPI_Win_free is collective: while an exception unwinds on this rank alone the others are elsewhere
  // (a test pass's allreduce, the next step), and it would wait for them for ever, so the job hung instead
  // of reaching cli.cpp's MPI_Abort. Then the window is left to the abort (or to the process's end).
  ~MpiGeneralWindow() override {
    if (win_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0) MPI_Win_free(&win_);
  }
  int64_t merge(Rule& rule, float* general, float* delta) override {
    DTNN_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win_));
    float merges = 0.0f;
    transfer(general, false);
    DTNN_MPI_CHECK(MPI_Get(&merges, 1, MPI_FLOAT, 0, static_cast<MPI_Aint>(count_), 1, MPI_FLOAT, win_));
    DTNN_MPI_CHECK(MPI_Win_flush(0, win_));
    if (merges >= 16777216.0f) {  // the float count is no longer exact
      DTNN_MPI_CHECK(MPI_Win_unlock(0, win_));
      fail("asynchronous averaging: more than 2^24 merges into one window");
    }
    const int64_t before = static_cast<int64_t>(merges);
    rule.delta(general, before, delta);
    transfer(delta, true);
    const float one = 1.0f;
    DTNN_MPI_CHECK(MPI_Accumulate(&one, 1, MPI_FLOAT, 0, static_cast<MPI_Aint>(count_), 1, MPI_FLOAT, MPI_SUM, win_));
    DTNN_MPI_CHECK(MPI_Win_unlock(0, win_));  // completes the accumulates (delta and `one` are read by now)
    for (int64_t i = 0; i < count_; ++i) general[i] += delta[i];
    return before;
  }
  void close(float* out) override {
    DTNN_ASSERT(win_ != MPI_WIN_NULL);
    DTNN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // every rank's last merge has been unlocked (completed)
    if (comm_.rank() == 0) {
      DTNN_MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win_));
      std::copy(general_, general_ + count_, out);
      DTNN_MPI_CHECK(MPI_Win_unlock(0, win_));
    }
    comm_.broadcast(out, count_, 0);
    DTNN_MPI_CHECK(MPI_Win_free(&win_));
  }

 private:
  // The weights [0, count): read into `buf`, or `buf` added to them (MPI counts are int: in chunks).
  void transfer(float* buf, bool add) {
    for (int64_t done = 0; done < count_; done += kChunk) {
      const int n = static_cast<int>(std::min<int64_t>(count_ - done, kChunk));
      const MPI_Aint at = static_cast<MPI_Aint>(done);
      if (add) DTNN_MPI_CHECK(MPI_Accumulate(buf + done, n, MPI_FLOAT, 0, at, n, MPI_FLOAT, MPI_SUM, win_));
      else DTNN_MPI_CHECK(MPI_Get(buf + done, n, MPI_FLOAT, 0, at, n, MPI_FLOAT, win_));
    }
  }

  Communicator& comm_;
  int64_t count_;
  float* general_ = nullptr;  // rank 0's window memory: count_ weights, then the merge count
  MPI_Win win_ = MPI_WIN_NULL;
};

// The claim counters of --dynamic_blocks (BlockCounter): int64 slots in a window on rank 0. A claim is
// MPI_Win_lock(SHARED, 0), MPI_Fetch_and_op(1, MPI_SUM), MPI_Win_unlock: accumulate operations on the same
// location are atomic with respect to each other, so concurrent claims under shared locks each get a
// distinct value; the unlock completes the operation before the value is read.
class MpiBlockCounter final : public BlockCounter {
 public:
  MpiBlockCounter(int rank, int64_t slots) : slots_(slots) {
    const bool root = rank == 0;
    const MPI_Aint bytes = root ? static_cast<MPI_Aint>(slots) * static_cast<MPI_Aint>(sizeof(int64_t)) : 0;
    DTNN_MPI_CHECK(MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &counts_, &win_));
    if (root) {
      DTNN_MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win_));
      std::fill(counts_, counts_ + slots, int64_t{0});
      DTNN_MPI_CHECK(MPI_Win_unlock(0, win_));
    }
    DTNN_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));  // no claim before the counters are zero
  }
  ~MpiBlockCounter() override {  // not while unwinding, as ~MpiGeneralWindow
    if (win_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0) MPI_Win_free(&win_);
  }
  int64_t claim(int64_t slot) override {
    DTNN_ASSERT(slot >= 0 && slot < slots_);
    const int64_t one = 1;
    int64_t before = -1;
    DTNN_MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win_));
    DTNN_MPI_CHECK(MPI_Fetch_and_op(&one, &before, MPI_INT64_T, 0, static_cast<MPI_Aint>(slot), MPI_SUM, win_));
    DTNN_MPI_CHECK(MPI_Win_unlock(0, win_));
    return before;
  }
  void close() override {
    DTNN_ASSERT(win_ != MPI_WIN_NULL);
    DTNN_MPI_CHECK(MPI_Win_free(&win_));  // collective: waits for every rank's last claim
  }

 private:
  int64_t slots_;
  int64_t* counts_ = nullptr;  // rank 0's window memory
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace

std::unique_ptr<GeneralWindow> open_mpi_general_window(Communicator& comm, const float* initial, int64_t count) {
  return std::make_unique<MpiGeneralWindow>(comm, initial, count);
}

std::unique_ptr<BlockCounter> open_mpi_block_counter(Communicator& comm, int64_t slots) {
  return std::make_unique<MpiBlockCounter>(comm.rank(), slots);
}

}  // namespace dtnn
