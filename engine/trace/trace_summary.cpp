#include "trace/trace_summary.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "core/median.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

bool per_layer(TraceKind k) { return k == TraceKind::forward || k == TraceKind::backward; }
bool exposed(TraceKind k) { return k == TraceKind::wait || k == TraceKind::allreduce; }

// The phase an event counts in: (kind, layer id) for forward/backward, (kind, -1) otherwise.
std::pair<int, int> phase_key(const TraceEvent& e) {
  return {static_cast<int>(e.kind), per_layer(e.kind) ? e.id : -1};
}

std::string phase_label(std::pair<int, int> key, const TraceNames& names) {
  const TraceKind kind = static_cast<TraceKind>(key.first);
  if (!per_layer(kind)) return trace_kind_name(kind);
  TraceEvent e;
  e.kind = kind;
  e.id = key.second;
  const std::string name = trace_event_name(e, names);  // "012_Conv2D backward"
  return std::string(trace_kind_name(kind)) + " " + name.substr(0, name.find(' '));
}

std::vector<PhaseRow> phase_rows(const std::vector<RankTrace>& ranks) {
  std::vector<PhaseRow> rows;
  for (size_t r = 0; r < ranks.size(); ++r) {
    // (kind, layer id or -1, op code): a conv algorithm's phases per layer and operation (op_trace.h)
    std::map<std::tuple<int, int, int>, std::vector<double>> times;
    for (const TraceEvent& e : ranks[r].events) {
      const bool op = e.kind == TraceKind::op;
      times[{static_cast<int>(e.kind), op ? e.id : phase_key(e).second, op ? e.op : 0}].push_back(e.end - e.begin);
    }
    for (auto& [key, t] : times) {
      PhaseRow row;
      row.rank = static_cast<int>(r);
      const TraceKind kind = static_cast<TraceKind>(std::get<0>(key));
      row.phase = kind == TraceKind::op ? std::string("op ") + op_info(static_cast<uint8_t>(std::get<2>(key))).op
                                        : trace_kind_name(kind);
      row.layer = std::get<1>(key);
      row.calls = static_cast<int64_t>(t.size());
      for (double v : t) row.total_s += v;
      std::sort(t.begin(), t.end());
      row.median_s = t[t.size() / 2];
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// One rank's view of one training step.
struct StepOnRank {
  bool complete = false;  // its step event was traced
  double begin = 0.0, duration = 0.0, busy = 0.0;
  std::map<std::pair<int, int>, double> phase_s;  // time per phase inside the step (lane 0)
};

// steps[s][r], for the training steps every rank traced.
std::map<int64_t, std::vector<StepOnRank>> steps_by_rank(const std::vector<RankTrace>& ranks) {
  std::map<int64_t, std::vector<StepOnRank>> steps;
  for (size_t r = 0; r < ranks.size(); ++r)
    for (const TraceEvent& e : ranks[r].events) {
      if (e.step < 0) continue;
      std::vector<StepOnRank>& v = steps[e.step];
      v.resize(ranks.size());
      StepOnRank& s = v[r];
      const double d = e.end - e.begin;
      if (e.kind == TraceKind::step) {
        s.complete = true;
        s.begin = e.begin - ranks[r].offset_s;
        s.duration = d;
        s.busy += d;
      } else if (e.kind == TraceKind::data_wait) {  // before the step event, not inside it (GPU: lane 1)
        s.busy += d;
        s.phase_s[phase_key(e)] += d;
      } else if (e.lane == 0 && e.kind != TraceKind::op) {  // ops: inside their layer's event already
        if (exposed(e.kind)) s.busy -= d;
        s.phase_s[phase_key(e)] += d;
      }
    }
  for (auto it = steps.begin(); it != steps.end();) {
    const bool all = std::all_of(it->second.begin(), it->second.end(), [](const StepOnRank& s) { return s.complete; });
    it = all ? std::next(it) : steps.erase(it);
  }
  return steps;
}

std::vector<StragglerRow> straggler_rows(const std::map<int64_t, std::vector<StepOnRank>>& steps,
                                         const TraceNames& names) {
  std::vector<StragglerRow> rows;
  for (const auto& [step, on] : steps) {
    if (on.size() < 2) break;
    std::vector<double> busy;
    for (const StepOnRank& s : on) busy.push_back(s.busy);
    StragglerRow row;
    row.step = step;
    row.slowest_rank = static_cast<int>(std::max_element(busy.begin(), busy.end()) - busy.begin());
    row.busy_s = busy[row.slowest_rank];
    row.median_busy_s = median(busy);
    row.lag_s = row.busy_s - row.median_busy_s;
    // Which phase: the slowest rank's excess over the median rank, per phase (waits are not its own work).
    std::map<std::pair<int, int>, double> all_phases;
    for (const StepOnRank& s : on)
      for (const auto& [key, t] : s.phase_s)
        if (!exposed(static_cast<TraceKind>(key.first))) all_phases[key] = 0.0;
    std::vector<double> per(on.size());
    bool any = false;
    for (const auto& kv : all_phases) {
      for (size_t r = 0; r < on.size(); ++r) {
        const auto it = on[r].phase_s.find(kv.first);
        per[r] = it == on[r].phase_s.end() ? 0.0 : it->second;
      }
      const double excess = per[row.slowest_rank] - median(per);
      if (!any || excess > row.phase_lag_s) {
        row.phase_lag_s = excess;
        row.phase = phase_label(kv.first, names);
        any = true;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

int64_t representative_step(const std::map<int64_t, std::vector<StepOnRank>>& steps) {
  std::vector<std::pair<double, int64_t>> by_duration;
  for (const auto& [step, on] : steps) {
    double longest = 0.0;
    for (const StepOnRank& s : on) longest = std::max(longest, s.duration);
    by_duration.push_back({longest, step});
  }
  // The run's first step (step 0): warm-up. A trace of later steps only (--trace_steps=N..M, N > 0) has none.
  if (by_duration.size() > 1 && by_duration.front().second == 0) by_duration.erase(by_duration.begin());
  if (by_duration.empty()) return -1;
  std::sort(by_duration.begin(), by_duration.end());
  return by_duration[by_duration.size() / 2].second;
}

std::vector<TimelineEvent> timeline_of(const std::vector<RankTrace>& ranks, int64_t step, const TraceNames& names) {
  std::vector<TimelineEvent> out;
  if (step < 0) return out;
  double origin = 0.0;
  bool any = false;
  for (const RankTrace& r : ranks)
    for (const TraceEvent& e : r.events)
      if (e.step == step) {
        origin = any ? std::min(origin, e.begin - r.offset_s) : e.begin - r.offset_s;
        any = true;
      }
  for (size_t r = 0; r < ranks.size(); ++r)
    for (const TraceEvent& e : ranks[r].events)
      if (e.step == step && e.kind != TraceKind::op)  // the layers, not their algorithms' phases (trace files)
        out.push_back({static_cast<int>(r), e.lane, trace_kind_name(e.kind), trace_event_name(e, names), e.id,
                       e.begin - ranks[r].offset_s - origin, e.end - ranks[r].offset_s - origin, e.bytes});
  return out;
}

}  // namespace

TraceSummary summarize_traces(const std::vector<RankTrace>& ranks, const TraceNames& names, const ClockSync& clocks) {
  TraceSummary s;
  s.ranks = static_cast<int>(ranks.size());
  s.clock_residual_s = clocks.residual_s;
  for (const RankTrace& r : ranks) s.dropped_events += r.dropped;
  s.phases = phase_rows(ranks);
  const auto steps = steps_by_rank(ranks);
  s.stragglers = straggler_rows(steps, names);
  s.timeline_step = representative_step(steps);
  s.timeline = timeline_of(ranks, s.timeline_step, names);
  return s;
}

}  // namespace dtnn
