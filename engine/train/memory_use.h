// Memory a run measured, per rank, beside what the model planned (Model::memory(): its buffers' bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "parallel/communicator.h"

namespace dtnn {

struct RankMemory {
  int64_t peak_rss = -1;     // the process's resident high-water mark (getrusage ru_maxrss): data pools, MPI and
                             // library buffers included
  int64_t device_peak = -1;  // the most bytes dtnn held on its GPU at once (device_alloc); -1: no GPU
  int64_t device_used = -1;  // the GPU's memory in use at the end (cudaMemGetInfo); -1: no GPU
};

// This process's peak resident memory in bytes; -1 where the system cannot say.
int64_t peak_rss_bytes();

// Every rank's figures, in rank order (collective: every rank of comm calls it).
std::vector<RankMemory> gather_memory(Communicator& comm);

}  // namespace dtnn
