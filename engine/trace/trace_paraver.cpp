#include "trace/trace_paraver.h"

#include "trace/op_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <tuple>

#include "core/file_io.h"

namespace dtnn {
namespace {

// Extrae's state numbers, labels and colours (its merger's labels.h), for the states this writer uses:
// Paraver configurations made on Extrae traces colour and name them the same.
struct StateDef {
  int value;
  const char* label;
  int r, g, b;
};
constexpr StateDef kStates[] = {{0, "Idle", 117, 195, 255},          {1, "Running", 0, 0, 255},
                                {5, "Synchronization", 179, 0, 0},  {6, "Test/Probe", 0, 255, 0},
                                {8, "Wait/WaitAll", 235, 0, 0},     {13, "Group Communication", 255, 144, 26}};
constexpr int kRunning = 1, kGroupCommunication = 13;

// The training thread's state while inside an event of this kind (-1: the surrounding state).
int state_of(TraceKind k) {
  switch (k) {
    case TraceKind::data_wait: return 5;
    case TraceKind::comm_calls: return 6;
    case TraceKind::wait: return 8;
    case TraceKind::allreduce: return kGroupCommunication;
    default: return -1;
  }
}

const char* event_type_name(int type) {
  switch (type) {
    case kPydtnnModelEvents: return "Model layers";  // PyDTNN's description of the type for Extrae
    case kPydtnnOpsEvent: return "Operations";       // PyDTNN's PYDTNN_OPS_EVENT: the algorithms' phases
    case kDtnnEvents: return "dtnn phases";
    case kDtnnOpsEvent: return "dtnn operations";    // phases PyDTNN has no code for
    default: return "dtnn events";
  }
}

// One line's worth of the body: a state interval, or an event value at a time. Sorted by (time, task,
// thread, kind, seq), seq keeping a thread's own order (stack order) among records of one time.
struct Record {
  int64_t time = 0;
  int task = 0, thread = 0;
  int kind = 0;  // 0 state (first at a time: the interval a thread's events at that time fall in), 1 event
  int64_t seq = 0;
  int64_t a = 0, b = 0;  // state: end, state; event: type, value
  bool operator<(const Record& o) const {
    return std::tie(time, task, thread, kind, seq) < std::tie(o.time, o.task, o.thread, o.kind, o.seq);
  }
};

struct Interval {
  int64_t begin = 0, end = 0;
  int value = 0;
};

// Begin and end values of one thread's events of one type, in stack order: sorted by begin, outer (longer)
// first, an event's end is written once every event it contains has ended, and before anything that begins
// at or after that time. An event reaching past the one containing it (lanes nest, so only a tracer bug
// would do it) is cut at that one's end: a stack cannot pair it otherwise.
void stack_order(std::vector<Interval>& iv, int type, std::vector<Record>& out) {
  std::sort(iv.begin(), iv.end(), [](const Interval& x, const Interval& y) {
    return x.begin != y.begin ? x.begin < y.begin : x.end > y.end;
  });
  std::vector<int64_t> open;  // ends of the events begun and not yet ended, innermost last
  const auto close_until = [&](int64_t t) {
    while (!open.empty() && open.back() <= t) {
      out.push_back({open.back(), 0, 0, 1, 0, type, 0});
      open.pop_back();
    }
  };
  for (const Interval& e : iv) {
    close_until(e.begin);
    out.push_back({e.begin, 0, 0, 1, 0, type, e.value});
    open.push_back(open.empty() ? e.end : std::min(e.end, open.back()));
  }
  close_until(INT64_MAX);
}

// States of one thread from intervals that do not overlap (a later one is cut to start where the previous
// ends), filling [span_begin, span_end) between them with `fill` (-1: leave the gaps without a state).
void states(std::vector<Interval>& iv, int64_t span_begin, int64_t span_end, int fill, std::vector<Record>& out) {
  std::sort(iv.begin(), iv.end(), [](const Interval& x, const Interval& y) { return x.begin < y.begin; });
  int64_t cursor = span_begin;
  const auto emit = [&](int64_t b, int64_t e, int state) {
    if (e > b) out.push_back({b, 0, 0, 0, 0, e, state});
  };
  for (const Interval& s : iv) {
    const int64_t b = std::max(s.begin, cursor);
    if (fill >= 0) emit(cursor, b, fill);
    emit(b, s.end, s.value);
    cursor = std::max(cursor, s.end);
  }
  if (fill >= 0) emit(cursor, span_end, fill);
}

struct Layout {
  std::vector<std::string> nodes;   // hosts, in order of first rank
  std::vector<int> node_of;         // rank -> node index
  std::vector<int> cpu_of;          // rank -> global CPU (1-based, node-major as the header counts them)
  std::vector<int> cpus_per_node;
  std::vector<int> threads;         // rank -> thread count (highest lane + 1)
};

Layout layout(const std::vector<RankTrace>& ranks) {
  Layout l;
  for (const RankTrace& r : ranks) {
    const auto it = std::find(l.nodes.begin(), l.nodes.end(), r.host);
    l.node_of.push_back(static_cast<int>(it - l.nodes.begin()));
    if (it == l.nodes.end()) {
      l.nodes.push_back(r.host);
      l.cpus_per_node.push_back(0);
    }
    ++l.cpus_per_node[l.node_of.back()];
    int lanes = 1;
    for (const TraceEvent& e : r.events) lanes = std::max(lanes, e.lane + 1);
    l.threads.push_back(lanes);
  }
  // CPU numbers run node by node, so a rank's CPU is its node's first CPU plus its place among the node's
  // ranks.
  std::vector<int> first(l.nodes.size(), 1), used(l.nodes.size(), 0);
  for (size_t n = 1; n < l.nodes.size(); ++n) first[n] = first[n - 1] + l.cpus_per_node[n - 1];
  for (int node : l.node_of) l.cpu_of.push_back(first[node] + used[node]++);
  return l;
}

std::string rank_name(const std::vector<RankTrace>& ranks, size_t r) {
  return "rank " + std::to_string(r) + " (" + ranks[r].host + ")";
}

std::string lane_name(size_t rank, int lane, bool gpu) {
  if (gpu) return "rank " + std::to_string(rank) + (lane == 0 ? " GPU stream" : " host");
  return "rank " + std::to_string(rank) + (lane == 0 ? std::string(" training") : " bucket " + std::to_string(lane - 1));
}

std::string row_text(const std::vector<RankTrace>& ranks, const Layout& l, bool gpu) {
  std::string cpus, tasks, threads;
  int total_threads = 0;
  for (size_t node = 0; node < l.nodes.size(); ++node)
    for (size_t r = 0; r < ranks.size(); ++r)
      if (l.node_of[r] == static_cast<int>(node)) cpus += rank_name(ranks, r) + "\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    tasks += rank_name(ranks, r) + "\n";
    for (int lane = 0; lane < l.threads[r]; ++lane) threads += lane_name(r, lane, gpu) + "\n";
    total_threads += l.threads[r];
  }
  std::string out = "LEVEL CPU SIZE " + std::to_string(ranks.size()) + "\n" + cpus;
  out += "\nLEVEL NODE SIZE " + std::to_string(l.nodes.size()) + "\n";
  for (const std::string& h : l.nodes) out += h + "\n";
  out += "\nLEVEL APPL SIZE 1\ndtnn\n";
  out += "\nLEVEL TASK SIZE " + std::to_string(ranks.size()) + "\n" + tasks;
  out += "\nLEVEL THREAD SIZE " + std::to_string(total_threads) + "\n" + threads;
  return out;
}

std::string pcf_text(const std::map<PydtnnEvent, int>& values_used) {
  std::string out =
      "DEFAULT_OPTIONS\n\n"
      "LEVEL               THREAD\n"
      "UNITS               NANOSEC\n"
      "LOOK_BACK           100\n"
      "SPEED               1\n"
      "FLAG_ICONS          ENABLED\n"
      "NUM_OF_STATE_COLORS 1000\n"
      "YMAX_SCALE          37\n\n\n"
      "DEFAULT_SEMANTIC\n\n"
      "THREAD_FUNC          State As Is\n\n\n"
      "STATES\n";
  char buf[512];
  for (const StateDef& s : kStates) {
    std::snprintf(buf, sizeof buf, "%d    %s\n", s.value, s.label);
    out += buf;
  }
  out += "\n\nSTATES_COLOR\n";
  for (const StateDef& s : kStates) {
    std::snprintf(buf, sizeof buf, "%d    {%d,%d,%d}\n", s.value, s.r, s.g, s.b);
    out += buf;
  }
  int type = 0;
  for (const auto& [key, count] : values_used) {  // ordered by (type, value): one block per type
    if (key.type != type) {
      type = key.type;
      std::snprintf(buf, sizeof buf, "\n\nEVENT_TYPE\n0    %d    %s\nVALUES\n0      End\n", type, event_type_name(type));
      out += buf;
    }
    std::snprintf(buf, sizeof buf, "%d      %s\n", key.value, key.name.c_str());
    out += buf;
  }
  return out + "\n\n";
}

}  // namespace

bool is_paraver_output(const std::string& path) {
  if (path.empty()) return false;
  if (path.back() == '/') return true;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".prv") == 0;
}

std::vector<std::string> paraver_files(const std::string& path) {
  std::error_code ec;
  std::string base;
  if (path.empty() || path.back() == '/' || std::filesystem::is_directory(path, ec))
    base = (path.empty() || path.back() == '/' ? path : path + "/") + "dtnn";
  else
    base = path.substr(0, path.size() - 4);  // X.prv
  return {base + ".prv", base + ".pcf", base + ".row"};
}

ParaverText paraver_text(const std::vector<RankTrace>& ranks, const TraceNames& names, const std::string& date) {
  // Time zero: the earliest event of any rank, on rank 0's clock.
  double origin = 0.0;
  bool any = false;
  for (const RankTrace& r : ranks)
    for (const TraceEvent& e : r.events) {
      origin = any ? std::min(origin, e.begin - r.offset_s) : e.begin - r.offset_s;
      any = true;
    }
  const Layout l = layout(ranks);
  std::vector<Record> records;
  std::map<PydtnnEvent, int> values_used;
  int64_t ftime = 0;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    const RankTrace& r = ranks[rank];
    // Rounding (t - offset - origin) * 1e9 is monotone in t, so nested or disjoint events stay so (ties
    // aside, which stack_order orders).
    const auto ns = [&](double t) { return static_cast<int64_t>(std::llround((t - r.offset_s - origin) * 1e9)); };
    std::vector<std::vector<const TraceEvent*>> by_lane(static_cast<size_t>(l.threads[rank]));
    for (const TraceEvent& e : r.events) by_lane[e.lane].push_back(&e);
    for (int lane = 0; lane < l.threads[rank]; ++lane) {
      std::map<int, std::vector<Interval>> by_type;
      std::vector<Interval> state_iv;
      int64_t span_begin = INT64_MAX, span_end = 0;
      for (const TraceEvent* ev : by_lane[static_cast<size_t>(lane)]) {
        const TraceEvent& e = *ev;
        const PydtnnEvent p = pydtnn_event(e, names);
        const Interval iv{ns(e.begin), ns(e.end), p.value};
        by_type[p.type].push_back(iv);
        ++values_used[p];
        span_begin = std::min(span_begin, iv.begin);
        span_end = std::max(span_end, iv.end);
        const int state = lane == 0 ? state_of(e.kind) : e.kind == TraceKind::in_flight ? kGroupCommunication : -1;
        if (state >= 0) state_iv.push_back({iv.begin, iv.end, state});
      }
      if (span_begin == INT64_MAX) continue;  // a lane without events: the thread exists, with no records
      ftime = std::max(ftime, span_end);
      std::vector<Record> thread;
      states(state_iv, span_begin, span_end, lane == 0 ? kRunning : -1, thread);
      for (auto& [type, iv] : by_type) stack_order(iv, type, thread);
      // Each type's records are in stack order; a stable sort by time keeps that order among equal times.
      std::stable_sort(thread.begin(), thread.end(), [](const Record& x, const Record& y) { return x.time < y.time; });
      for (size_t i = 0; i < thread.size(); ++i) {
        thread[i].task = static_cast<int>(rank) + 1;
        thread[i].thread = lane + 1;
        thread[i].seq = static_cast<int64_t>(i);
        records.push_back(thread[i]);
      }
    }
  }
  std::sort(records.begin(), records.end());

  ParaverText t;
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "#Paraver (%s):%lld_ns:%zu(", date.c_str(), static_cast<long long>(ftime), l.nodes.size());
  t.prv.append(buf, static_cast<size_t>(n));
  for (size_t node = 0; node < l.nodes.size(); ++node) t.prv += (node ? "," : "") + std::to_string(l.cpus_per_node[node]);
  t.prv += "):1:" + std::to_string(ranks.size()) + "(";
  for (size_t rank = 0; rank < ranks.size(); ++rank)
    t.prv += (rank ? "," : "") + std::to_string(l.threads[rank]) + ":" + std::to_string(l.node_of[rank] + 1);
  t.prv += ")\n";
  t.prv.reserve(t.prv.size() + records.size() * 40);
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& x = records[i];
    const int cpu = l.cpu_of[static_cast<size_t>(x.task - 1)];
    if (x.kind == 0) {
      n = std::snprintf(buf, sizeof buf, "1:%d:1:%d:%d:%lld:%lld:%lld\n", cpu, x.task, x.thread,
                        static_cast<long long>(x.time), static_cast<long long>(x.a), static_cast<long long>(x.b));
      t.prv.append(buf, static_cast<size_t>(n));
      continue;
    }
    n = std::snprintf(buf, sizeof buf, "2:%d:1:%d:%d:%lld", cpu, x.task, x.thread, static_cast<long long>(x.time));
    t.prv.append(buf, static_cast<size_t>(n));
    // The events of one thread at one time share the record, in order.
    for (;; ++i) {
      n = std::snprintf(buf, sizeof buf, ":%lld:%lld", static_cast<long long>(records[i].a), static_cast<long long>(records[i].b));
      t.prv.append(buf, static_cast<size_t>(n));
      if (i + 1 == records.size()) break;
      const Record& y = records[i + 1];
      if (y.kind != 1 || y.time != x.time || y.task != x.task || y.thread != x.thread) break;
    }
    t.prv += "\n";
  }
  t.pcf = pcf_text(values_used);
  t.row = row_text(ranks, l, names.gpu);
  return t;
}

void write_paraver(const std::string& path, const std::vector<RankTrace>& ranks, const TraceNames& names) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char date[32];
  std::strftime(date, sizeof date, "%d/%m/%y at %H:%M", &local);
  const ParaverText t = paraver_text(ranks, names, date);
  const std::vector<std::string> files = paraver_files(path);
  // The three replace the old ones as a set: all written and synced first (a full disk fails here, before
  // any file is replaced: an old .prv beside a new .row would describe other tasks), then renamed, the names
  // first and the records last, so a reader that finds the new .prv finds the files naming its rows.
  AtomicFile pcf(files[1]), row(files[2]), prv(files[0]);
  pcf.write(t.pcf);
  row.write(t.row);
  prv.write(t.prv);
  pcf.sync();
  row.sync();
  prv.sync();
  pcf.commit();
  row.commit();
  prv.commit();
}

}  // namespace dtnn
