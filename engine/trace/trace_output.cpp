#include "trace/trace_output.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/median.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

constexpr int kModelEvents = 60000001;  // PyDTNN's PYDTNN_MDL_EVENT
constexpr int kDtnnEvents = 60000003;

// One rank's part of the gathered trace.
struct RankTrace {
  double offset_s = 0.0;
  int64_t dropped = 0;
  std::string host;
  std::vector<TraceEvent> events;
};

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

const TraceNames::Layer* find_layer(const TraceNames& n, int id) {
  for (const auto& l : n.layers)
    if (l.id == id) return &l;
  return nullptr;
}

std::string layer_label(const TraceNames& n, int id) {
  const TraceNames::Layer* l = find_layer(n, id);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%03d_%s", id, l ? l->type.c_str() : "Layer");
  return buf;
}

// PyDTNN's (type, value, name) of an event.
struct CsvKey {
  int type = 0, value = 0;
  std::string name;
  bool operator<(const CsvKey& o) const { return type != o.type ? type < o.type : value < o.value; }
};

CsvKey csv_key(const TraceEvent& e, const TraceNames& n) {
  const auto model = [&](int layer_id, int code, const char* what) {
    return CsvKey{kModelEvents, layer_id * 5 + code, layer_label(n, layer_id) + "_" + what};
  };
  const auto bucket_layer = [&](int b) { return b >= 0 && b < static_cast<int>(n.bucket_layer.size()) ? n.bucket_layer[b] : n.top_layer; };
  switch (e.kind) {
    case TraceKind::forward: return model(e.id, 1, "forward");
    case TraceKind::backward: return model(e.id, 2, "backward");
    case TraceKind::allreduce: return model(n.top_layer, 3, "allreduce_dw");
    case TraceKind::in_flight: return model(bucket_layer(e.id), 3, "allreduce_dw");
    case TraceKind::wait: return model(bucket_layer(e.id), 4, "wait_dw");
    case TraceKind::update: return model(n.per_bucket ? bucket_layer(e.id) : n.top_layer, 5, "update_dw");
    case TraceKind::step: return {kDtnnEvents, 1, "dtnn_step"};
    case TraceKind::data_wait: return {kDtnnEvents, 2, "dtnn_data_wait"};
    case TraceKind::loss: return {kDtnnEvents, 3, "dtnn_loss"};
    case TraceKind::comm_calls: return {kDtnnEvents, 4, "dtnn_comm_calls"};
    case TraceKind::evaluate: return {kDtnnEvents, 5, "dtnn_evaluate"};
    case TraceKind::op: {
      const OpInfo& op = op_info(e.op);
      return {op.type, e.id * op_events_of(op.type) + op.code, layer_label(n, e.id) + "_" + op.op};
    }
  }
  return {};
}

std::string csv_text(const RankTrace& r, const TraceNames& n) {
  std::map<CsvKey, std::vector<double>> times;
  for (const TraceEvent& e : r.events) times[csv_key(e, n)].push_back(e.end - e.begin);
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

std::string event_name(const TraceEvent& e, const TraceNames& n) {
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

std::string json_text(const std::vector<RankTrace>& ranks, const TraceNames& n, const ClockSync& clocks) {
  // Time zero: the earliest event of any rank, on rank 0's clock.
  double origin = 0.0;
  bool any = false;
  for (const RankTrace& r : ranks)
    for (const TraceEvent& e : r.events) {
      const double t = e.begin - r.offset_s;
      origin = any ? std::min(origin, t) : t;
      any = true;
    }
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json dropped = nlohmann::json::array();
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const RankTrace& r = ranks[rank];
    dropped.push_back(r.dropped);
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", rank}, {"tid", 0},
                      {"args", {{"name", "rank " + std::to_string(rank) + " (" + r.host + ")"}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", rank}, {"tid", 0}, {"args", {{"sort_index", rank}}}});
    int max_lane = 0;
    for (const TraceEvent& e : r.events) max_lane = std::max<int>(max_lane, e.lane);
    for (int lane = 0; lane <= max_lane; ++lane)
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", rank}, {"tid", lane},
                        {"args", {{"name", lane == 0 ? std::string("training") : "bucket " + std::to_string(lane - 1) + " in flight"}}}});
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
      events.push_back({{"ph", "X"}, {"name", event_name(e, n)}, {"cat", category(e.kind)}, {"pid", rank},
                        {"tid", e.lane}, {"ts", 1e6 * (e.begin - r.offset_s - origin)},
                        {"dur", 1e6 * (e.end - e.begin)}, {"args", args}});
    }
  }
  nlohmann::json j = {{"traceEvents", events},
                      {"displayTimeUnit", "ms"},
                      {"otherData",
                       {{"producer", "dtnn"},
                        {"ranks", ranks.size()},
                        {"clock_residual_skew_us", 1e6 * clocks.residual_s},
                        {"dropped_events", dropped}}}};
  return j.dump() + "\n";
}

}  // namespace

std::string trace_format(const std::string& path) {
  const auto ends = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return path.size() > n && path.compare(path.size() - n, n, ext) == 0;
  };
  if (ends(".csv")) return "csv";
  if (ends(".json")) return "json";
  fail("--tracer_output=", path, ": expected a .csv file (PyDTNN's simple tracer) or a .json file (Chrome trace "
       "events, for Perfetto); Paraver output is not implemented yet");
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

void write_trace(const std::string& path, const Tracer& tracer, const TraceNames& names, const ClockSync& clocks,
                 Communicator& comm) {
  const std::string format = trace_format(path);
  std::vector<std::string> parts;
  comm.gather_bytes(pack(tracer, clocks, names.host), parts);
  if (comm.rank() != 0) return;
  std::vector<RankTrace> ranks;
  for (const std::string& p : parts) ranks.push_back(unpack(p));
  write_file_atomically(path, format == "csv" ? csv_text(ranks[0], names) : json_text(ranks, names, clocks));
}

}  // namespace dtnn
