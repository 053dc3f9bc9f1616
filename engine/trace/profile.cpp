#include "trace/profile.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/median.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

// The table's rows: every TraceKind but op, then one row per operation name (OpInfo::op: phases that share
// PyDTNN's code, as im2row and im2col, share a row, as they share the CSV's row). Rows are the same on
// every rank (the totals are gathered row by row).
struct Rows {
  std::vector<std::string> names;
  std::vector<int> of_op;  // OpCode -> row
  int of(const TraceEvent& e) const {
    return e.kind == TraceKind::op ? of_op[e.op < of_op.size() ? e.op : 0] : static_cast<int>(e.kind);
  }
};

Rows profile_rows() {
  Rows r;
  const int kinds = static_cast<int>(TraceKind::op);  // op is the last kind; its events get op rows
  for (int k = 0; k < kinds; ++k) r.names.push_back(trace_kind_name(static_cast<TraceKind>(k)));
  for (int op = 0; op < static_cast<int>(OpCode::count); ++op) {
    const std::string name = op_info(static_cast<uint8_t>(op)).op;
    const auto at = std::find(r.names.begin() + kinds, r.names.end(), name);
    r.of_op.push_back(static_cast<int>(at - r.names.begin()));
    if (at == r.names.end()) r.names.push_back(name);
  }
  return r;
}

}  // namespace

void print_profile(std::ostream& out, const Tracer& tracer, Communicator& comm) {
  const Rows rows = profile_rows();
  const int n = static_cast<int>(rows.names.size());
  // Per row: calls, total, median per call (this rank).
  std::vector<std::vector<double>> times(n);
  for (size_t i = 0; i < tracer.size(); ++i) {
    const TraceEvent& e = tracer.events()[i];
    times[rows.of(e)].push_back(e.end - e.begin);
  }
  std::vector<double> mine(3 * n, 0.0);
  for (int k = 0; k < n; ++k) {
    double total = 0.0;
    for (double t : times[k]) total += t;
    mine[3 * k] = static_cast<double>(times[k].size());
    mine[3 * k + 1] = total;
    mine[3 * k + 2] = times[k].empty() ? 0.0 : median(times[k]);
  }
  std::vector<double> all(mine.size() * comm.size());
  comm.allgather(mine.data(), static_cast<int>(mine.size()), all.data());
  if (comm.rank() != 0) return;
  // A phase is listed when any rank has calls of it (rank 0 may have none: dynamic blocks give it fewer steps).
  const auto any_calls = [&](int k) {
    for (int r = 0; r < comm.size(); ++r)
      if (all[static_cast<size_t>(r) * mine.size() + 3 * k] > 0) return true;
    return false;
  };
  int width = 12;  // the phase column: as wide as the longest name printed
  for (int k = 0; k < n; ++k)
    if (any_calls(k)) width = std::max(width, static_cast<int>(rows.names[k].size()));
  char buf[256];
  out << "**** Profile (seconds; the layers of a phase summed; the algorithms' operations, inside forward and "
         "backward, after the phases"
      << (tracer.dropped() ? "; events past the buffer dropped" : "") << "):\n";
  std::snprintf(buf, sizeof buf, "  %-*s %10s %12s %12s   %12s %12s %12s\n", width, "phase", "calls", "total r0", "median r0",
                "total min", "total median", "total max");
  out << buf;
  std::vector<double> totals(static_cast<size_t>(comm.size()));
  for (int k = 0; k < n; ++k) {
    if (!any_calls(k)) continue;
    for (int r = 0; r < comm.size(); ++r) totals[r] = all[static_cast<size_t>(r) * mine.size() + 3 * k + 1];
    std::snprintf(buf, sizeof buf, "  %-*s %10.0f %12.6f %12.6f   %12.6f %12.6f %12.6f\n", width, rows.names[k].c_str(),
                  mine[3 * k], mine[3 * k + 1], mine[3 * k + 2], *std::min_element(totals.begin(), totals.end()),
                  median(totals), *std::max_element(totals.begin(), totals.end()));
    out << buf;
  }
}

}  // namespace dtnn
