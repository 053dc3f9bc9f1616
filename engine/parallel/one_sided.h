// One-sided communication over a Communicator's ranks: no rank waits for another but inside the call, and
// rank 0, which holds the memory, takes no part. Used by the strategies and schedules that need it (the
// asynchronous merges of parallel/async_merger.h, the dynamic blocks of parallel/sample_schedule.h), not by
// the transport's collectives. Over MPI (several ranks): windows on MPI_COMM_WORLD (mpi_one_sided.cpp); one
// process: local, or refused where there is nothing to share.
#pragma once

#include <cstdint>
#include <memory>

#include "parallel/communicator.h"

namespace dtnn {

// One-sided "general weights" (the asynchronous model-averaging modes, parallel/async_merger.h): `count`
// floats held by rank 0 that any rank merges into and reads back with no other rank taking part (MPI RMA
// with a passive target: no barrier, no matching call on rank 0). Opened and closed collectively.
class GeneralWindow {
 public:
  // How one merge changes the general weights: given them as they are (`general`, the window's count
  // floats) and how many merges every rank has applied before this one, fills delta[0, count).
  class Rule {
   public:
    virtual void delta(const float* general, int64_t merges_before, float* delta) = 0;

   protected:
    ~Rule() = default;
  };
  virtual ~GeneralWindow() = default;
  // One whole merge, atomic with respect to every other rank's (none is lost or interleaved, whatever the
  // timing): reads the general weights into `general`, asks `rule` for the delta (into `delta`), adds it
  // and counts the merge. On return `general` holds the general weights right after this merge (read +
  // delta, element by element in float, as the window adds). Returns merges_before. Waits only for the
  // window's lock; not collective.
  virtual int64_t merge(Rule& rule, float* general, float* delta) = 0;
  // Collective, once: after every rank's last merge (the only meeting point), copies the general weights to
  // `out` on every rank and frees the window.
  virtual void close(float* out) = 0;
};

// Shared claim counters (--dynamic_blocks, parallel/sample_schedule.h): `slots` int64 counters, all 0 at the start,
// held by rank 0; claim(slot) atomically adds 1 to one and returns its value before the add, so every value
// 0, 1, 2, ... of a slot goes to exactly one claim over all ranks (a block of work handed to whichever rank
// asks first, as PyCOMPSs hands dislib's tasks to free workers). Over MPI: MPI_Fetch_and_op(1, MPI_SUM) in a
// passive-target access epoch on rank 0 (a shared lock: the operation itself is atomic), so a claim waits
// for no other rank and rank 0 takes no part. Opened and closed collectively.
class BlockCounter {
 public:
  virtual ~BlockCounter() = default;
  virtual int64_t claim(int64_t slot) = 0;  // not collective
  virtual void close() = 0;                 // collective, once, after every rank's last claim
};

// Collective: a GeneralWindow of `count` floats starting as rank 0's `initial` (the window lives on rank 0;
// the other ranks expose nothing). One process, or a build without MPI: fails (a single rank has nothing to
// merge with; the merger does not open one).
std::unique_ptr<GeneralWindow> open_general_window(Communicator& comm, const float* initial, int64_t count);
// Collective: a BlockCounter of `slots` counters. One process: counted locally; several: a window on rank 0.
std::unique_ptr<BlockCounter> open_block_counter(Communicator& comm, int64_t slots);

// The MPI versions of the two above, for more than one rank (mpi_one_sided.cpp; failing in builds without MPI).
std::unique_ptr<GeneralWindow> open_mpi_general_window(Communicator& comm, const float* initial, int64_t count);
std::unique_ptr<BlockCounter> open_mpi_block_counter(Communicator& comm, int64_t slots);

}  // namespace dtnn
