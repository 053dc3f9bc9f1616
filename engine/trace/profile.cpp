#include "trace/profile.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/median.h"

namespace dtnn {

void print_profile(std::ostream& out, const Tracer& tracer, Communicator& comm) {
  constexpr int kKinds = static_cast<int>(TraceKind::evaluate) + 1;
  // Per kind: calls, total, median per call (this rank).
  std::vector<std::vector<double>> times(kKinds);
  for (size_t i = 0; i < tracer.size(); ++i) {
    const TraceEvent& e = tracer.events()[i];
    times[static_cast<int>(e.kind)].push_back(e.end - e.begin);
  }
  std::vector<double> mine(3 * kKinds, 0.0);
  for (int k = 0; k < kKinds; ++k) {
    double total = 0.0;
    for (double t : times[k]) total += t;
    mine[3 * k] = static_cast<double>(times[k].size());
    mine[3 * k + 1] = total;
    mine[3 * k + 2] = times[k].empty() ? 0.0 : median(times[k]);
  }
  std::vector<double> all(mine.size() * comm.size());
  comm.allgather(mine.data(), static_cast<int>(mine.size()), all.data());
  if (comm.rank() != 0) return;
  char buf[256];
  out << "**** Profile (seconds; the layers of a phase summed" << (tracer.dropped() ? "; events past the buffer dropped" : "")
      << "):\n";
  std::snprintf(buf, sizeof buf, "  %-12s %10s %12s %12s   %12s %12s %12s\n", "phase", "calls", "total r0", "median r0",
                "total min", "total median", "total max");
  out << buf;
  std::vector<double> totals(static_cast<size_t>(comm.size()));
  for (int k = 0; k < kKinds; ++k) {
    if (mine[3 * k] == 0) continue;
    for (int r = 0; r < comm.size(); ++r) totals[r] = all[static_cast<size_t>(r) * mine.size() + 3 * k + 1];
    std::snprintf(buf, sizeof buf, "  %-12s %10.0f %12.6f %12.6f   %12.6f %12.6f %12.6f\n",
                  trace_kind_name(static_cast<TraceKind>(k)), mine[3 * k], mine[3 * k + 1], mine[3 * k + 2],
                  *std::min_element(totals.begin(), totals.end()), median(totals),
                  *std::max_element(totals.begin(), totals.end()));
    out << buf;
  }
}

}  // namespace dtnn
