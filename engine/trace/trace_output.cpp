#include "trace/trace_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/median.h"
#include "trace/trace_events.h"
#include "trace/trace_paraver.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

std::string pack(const Tracer& t, const ClockSync& c, const std::string& host) {
  std::string out(sizeof(double) + 2 * sizeof(int64_t), '\0');
  const int64_t dropped = t.dropped(), host_len = static_cast<int64_t>(host.size());
  std::memcpy(&out[0], &c.offset_s, sizeof(double));
  std::memcpy(&out[sizeof(double)], &dropped, sizeof(int64_t));
  std::memcpy(&out[sizeof(double) + sizeof(int64_t)], &host_len, sizeof(int64_t));
  out += host;
  out.append(reinterpret_cast<const char*>(t.events()), t.size() * sizeof(TraceEvent));
  return out;
}

RankTrace unpack(const std::string& s) {
  RankTrace r;
  const size_t head = sizeof(double) + 2 * sizeof(int64_t);
  DTNN_ASSERT(s.size() >= head);
  int64_t host_len = 0;
  std::memcpy(&r.offset_s, s.data(), sizeof(double));
  std::memcpy(&r.dropped, s.data() + sizeof(double), sizeof(int64_t));
  std::memcpy(&host_len, s.data() + sizeof(double) + sizeof(int64_t), sizeof(int64_t));
  r.host = s.substr(head, static_cast<size_t>(host_len));
  const size_t at = head + static_cast<size_t>(host_len);
  DTNN_ASSERT((s.size() - at) % sizeof(TraceEvent) == 0);
  r.events.resize((s.size() - at) / sizeof(TraceEvent));
  if (!r.events.empty()) std::memcpy(r.events.data(), s.data() + at, s.size() - at);
  return r;
}

std::string csv_text(const RankTrace& r, const TraceNames& n) {
  std::map<PydtnnEvent, std::vector<double>> times;
  for (const TraceEvent& e : r.events) times[pydtnn_event(e, n)].push_back(e.end - e.begin);
  std::string out = "Event type;Event value;Event name;Calls;Total time;Median of times\n";
  char buf[512];
  for (auto& [key, t] : times) {
    double total = 0.0;
    for (double v : t) total += v;
    std::sort(t.begin(), t.end());
    std::snprintf(buf, sizeof buf, "%d;%d;%s;%zu;%.9f;%.9f\n", key.type, key.value, key.name.c_str(), t.size(), total,
                  t[t.size() / 2]);
    out += buf;
  }
  return out;
}

}  // namespace

std::string trace_lane_name(const TraceNames& n, int lane) {
  if (n.gpu) return lane == 0 ? "GPU stream (CUDA events)" : "host (data-loader wait)";
  return lane == 0 ? std::string("training") : "bucket " + std::to_string(lane - 1) + " in flight";
}

std::string trace_event_name(const TraceEvent& e, const TraceNames& n) {
  switch (e.kind) {
    case TraceKind::forward:
    case TraceKind::backward: return layer_label(n, e.id) + " " + trace_kind_name(e.kind);
    case TraceKind::in_flight: return "bucket " + std::to_string(e.id) + " allreduce";
    case TraceKind::wait: return "wait bucket " + std::to_string(e.id);
    case TraceKind::update: return "update bucket " + std::to_string(e.id);
    case TraceKind::op: return op_info(e.op).phase;
    default: return trace_kind_name(e.kind);
  }
}

namespace {

const char* category(TraceKind k) {
  switch (k) {
    case TraceKind::forward:
    case TraceKind::backward:
    case TraceKind::loss:
    case TraceKind::op:
    case TraceKind::update: return "compute";
    case TraceKind::comm_calls:
    case TraceKind::in_flight:
    case TraceKind::wait:
    case TraceKind::allreduce: return "communication";
    case TraceKind::data_wait: return "data";
    default: return "training";
  }
}

// Streamed into the file a chunk at a time: a DOM of the whole trace took ~3.6 KB an event (7.5 GB for one
// rank's full buffer), undoing the bound the buffer size sets. Times are whole nanoseconds first, ts and dur
// (microseconds, three decimals) both derived from them, so ts + dur of one event is exactly the next one's ts
// when they touch, to the nanosecond (independent doubles left 1e-10 us overlaps between adjacent slices).
void write_json(AtomicFile& file, const std::vector<RankTrace>& ranks, const TraceNames& n, const ClockSync& clocks) {
  // Time zero: the earliest event of any rank, on rank 0's clock.
  double origin = 0.0;
  bool any = false;
  for (const RankTrace& r : ranks)
    for (const TraceEvent& e : r.events) {
      const double t = e.begin - r.offset_s;
      origin = any ? std::min(origin, t) : t;
      any = true;
    }
  std::string buf;
  buf.reserve(1 << 20);
  bool first = true;
  const auto emit = [&](const nlohmann::json& event) {
    buf += first ? "\n" : ",\n";
    first = false;
    buf += event.dump();
    if (buf.size() >= (1 << 20) - 4096) {
      file.write(buf);
      buf.clear();
    }
  };
  // The double nearest ns / 1000: printed (shortest round trip) as those three decimals.
  const auto micros = [](long long ns) { return static_cast<double>(ns) / 1000.0; };
  buf += "{\"traceEvents\": [";
  nlohmann::json dropped = nlohmann::json::array();
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const RankTrace& r = ranks[rank];
    dropped.push_back(r.dropped);
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"tid", 0},
          {"args", {{"name", "rank " + std::to_string(rank) + " (" + r.host + ")"}}}});
    emit({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"tid", 0}, {"args", {{"sort_index", rank}}}});
    int max_lane = 0;
    for (const TraceEvent& e : r.events) max_lane = std::max<int>(max_lane, e.lane);
    for (int lane = 0; lane <= max_lane; ++lane)
      emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", lane}, {"args", {{"name", trace_lane_name(n, lane)}}}});
    for (const TraceEvent& e : r.events) {
      nlohmann::json args = {{"step", e.step}};
      if (e.kind == TraceKind::op) args["op"] = op_info(e.op).op;
      if (e.kind == TraceKind::forward || e.kind == TraceKind::backward || e.kind == TraceKind::op) {
        args["layer"] = e.id;
        if (const TraceNames::Layer* l = find_layer(n, e.id)) {
          args["type"] = l->type;
          if (!l->algorithm.empty()) args["algorithm"] = l->algorithm;
        }
      }
      if (e.kind == TraceKind::in_flight || e.kind == TraceKind::wait || e.kind == TraceKind::update) args["bucket"] = e.id;
      if (e.bytes) args["bytes"] = e.bytes;
      const long long begin_ns = std::llround(1e9 * (e.begin - r.offset_s - origin));
      const long long end_ns = std::max(begin_ns, std::llround(1e9 * (e.end - r.offset_s - origin)));
      emit({{"ph", "X"}, {"name", trace_event_name(e, n)}, {"cat", category(e.kind)}, {"pid", rank}, {"tid", e.lane},
            {"ts", micros(begin_ns)}, {"dur", micros(end_ns - begin_ns)}, {"args", args}});
    }
  }
  const nlohmann::json other = {{"producer", "dtnn"},
                                {"ranks", ranks.size()},
                                {"clock_residual_skew_us", 1e6 * clocks.residual_s},
                                {"dropped_events", dropped}};
  buf += "\n], \"displayTimeUnit\": \"ms\", \"otherData\": " + other.dump() + "}\n";
  file.write(buf);
}

}  // namespace

std::string trace_format(const std::string& path) {
  const auto ends = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return path.size() > n && path.compare(path.size() - n, n, ext) == 0;
  };
  if (ends(".csv")) return "csv";
  if (ends(".json")) return "json";
  if (is_paraver_output(path)) return "paraver";
  fail("--tracer_output=", path, ": expected a .csv file (PyDTNN's simple tracer), a .json file (Chrome trace "
       "events, for Perfetto), or a .prv file or a directory (Paraver: .prv, .pcf and .row)");
}

std::vector<std::string> trace_files(const std::string& path) {
  return trace_format(path) == "paraver" ? paraver_files(path) : std::vector<std::string>{path};
}

std::vector<std::string> trace_outputs(const std::string& option) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= option.size()) {
    const size_t comma = std::min(option.find(',', start), option.size());
    out.push_back(option.substr(start, comma - start));
    trace_format(out.back());
    start = comma + 1;
  }
  return out;
}

ClockSync sync_clocks(Communicator& comm) {
  constexpr int kRounds = 9;
  double mine[kRounds];
  for (int k = 0; k < kRounds; ++k) {
    comm.barrier();
    mine[k] = now_s();
  }
  std::vector<double> all(static_cast<size_t>(kRounds) * comm.size());
  comm.allgather(mine, kRounds, all.data());
  std::vector<double> diff(kRounds);
  for (int k = 0; k < kRounds; ++k) diff[k] = mine[k] - all[k];  // rank 0's readings come first
  ClockSync c;
  c.offset_s = median(diff);
  const auto [lo, hi] = std::minmax_element(diff.begin(), diff.end());
  c.residual_s = comm.max((*hi - *lo) / 2);
  return c;
}

std::vector<RankTrace> gather_traces(const Tracer& tracer, const ClockSync& clocks, const std::string& host,
                                     Communicator& comm) {
  std::vector<std::string> parts;
  comm.gather_bytes(pack(tracer, clocks, host), parts);
  std::vector<RankTrace> ranks;
  if (comm.rank() == 0)
    for (const std::string& p : parts) ranks.push_back(unpack(p));
  return ranks;
}

void write_trace(const std::string& path, const std::vector<RankTrace>& ranks, const TraceNames& names,
                 const ClockSync& clocks) {
  const std::string format = trace_format(path);
  DTNN_ASSERT(!ranks.empty());
  if (format == "paraver") return write_paraver(path, ranks, names);
  if (format == "csv") return write_file_atomically(path, csv_text(ranks[0], names));
  AtomicFile file(path);
  write_json(file, ranks, names, clocks);
  file.commit();
}

}  // namespace dtnn
