// PyDTNN's model-time line for `dtnn train`. See train_model_time.h.
#include "experiments/train_model_time.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "analysis/perfmodel/pydtnn_model.h"

namespace dtnn::cli {

bool names_pydtnn_model_options(const std::vector<std::string>& given) {
  for (const char* name : {"cpu_speed", "memory_bw", "network_bw", "network_lat", "network_alg"})
    if (std::find(given.begin(), given.end(), name) != given.end()) return true;
  return false;
}

void print_pydtnn_model_time(const TrainOptions& o, int ranks, std::ostream& out) {
  perf::PydtnnParams params;
  params.cpu_speed = o.cpu_speed;
  params.memory_bw = o.memory_bw;
  params.network_bw = o.network_bw;
  params.network_lat = o.network_lat;
  params.network_alg = o.network_alg;
  const int64_t batch = o.global_batch_size > 0 ? (o.global_batch_size + ranks - 1) / ranks : o.batch_size;
  const bool blocking = !o.non_blocking_mpi;
  const perf::PTime t = perf::pydtnn_calculate_time(perf::pydtnn_layers(o.model_name, static_cast<double>(batch), params),
                                                    ranks, blocking, params);
  char line[512];
  std::snprintf(line, sizeof line,
                "**** Model time:  [%.6e %.6e %.6e %.6e] (PyDTNN's performance model: total, compute, memory, network "
                "seconds per step of %lld samples per rank on %d rank(s), %s)\n",
                t.total, t.comp, t.mem, t.net, static_cast<long long>(batch), ranks,
                blocking ? "blocking" : "non-blocking");
  out << line;
}

}  // namespace dtnn::cli
