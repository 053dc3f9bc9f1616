// See memory_use.h.
#include "train/memory_use.h"

#include <sys/resource.h>

#include "backend/gpu_ops.h"

namespace dtnn {

int64_t peak_rss_bytes() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return -1;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
}

std::vector<RankMemory> gather_memory(Communicator& comm) {
  // Doubles carry the byte counts exactly up to 2^53 (8 PiB).
  const double mine[3] = {static_cast<double>(peak_rss_bytes()), static_cast<double>(gpu::device_peak_bytes()),
                          static_cast<double>(gpu::device_used_bytes())};
  std::vector<double> all(3 * static_cast<size_t>(comm.size()));
  comm.allgather(mine, 3, all.data());
  std::vector<RankMemory> ranks(static_cast<size_t>(comm.size()));
  for (size_t r = 0; r < ranks.size(); ++r)
    ranks[r] = {static_cast<int64_t>(all[3 * r]), static_cast<int64_t>(all[3 * r + 1]),
                static_cast<int64_t>(all[3 * r + 2])};
  return ranks;
}

}  // namespace dtnn
