#include "trace/tracer.h"

#include <algorithm>

#include "core/error.h"

namespace dtnn {

const char* trace_kind_name(TraceKind k) {
  switch (k) {
    case TraceKind::step: return "step";
    case TraceKind::data_wait: return "data_wait";
    case TraceKind::forward: return "forward";
    case TraceKind::loss: return "loss";
    case TraceKind::backward: return "backward";
    case TraceKind::comm_calls: return "comm_calls";
    case TraceKind::in_flight: return "in_flight";
    case TraceKind::wait: return "wait_dw";
    case TraceKind::allreduce: return "allreduce_dw";
    case TraceKind::update: return "update_dw";
    case TraceKind::evaluate: return "evaluate";
    case TraceKind::op: return "op";
  }
  return "?";
}

Tracer::Tracer(int64_t capacity, TraceSteps steps)
    : events_(static_cast<size_t>(capacity > 0 ? capacity : 0)), steps_(steps) {}

int64_t TraceSteps::count(int64_t run_steps) const {
  if (all()) return run_steps;
  return std::max<int64_t>(0, std::min(last, run_steps - 1) - first + 1);
}

TraceSteps parse_trace_steps(const std::string& text) {
  if (text.empty()) return {};
  const size_t dots = text.find("..");
  const auto number = [&](const std::string& s) {
    DTNN_CHECK(!s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos,
               "expected N..M, the first and last training step to trace from 0 (got \"", text, "\")");
    return std::stoll(s);
  };
  DTNN_CHECK(dots != std::string::npos,
             "expected N..M, the first and last training step to trace from 0 (got \"", text, "\")");
  TraceSteps r{number(text.substr(0, dots)), number(text.substr(dots + 2))};
  DTNN_CHECK(r.first <= r.last, "the first step is after the last (got \"", text, "\")");
  return r;
}

int64_t trace_events_per_step(int64_t layers, int64_t buckets, int64_t op_events) {
  // step + data wait + loss; per layer forward, backward and its comm calls; per bucket in flight, wait,
  // update (blocking: one allreduce and one update); the algorithms' phases.
  return 3 + 3 * layers + 3 * buckets + 2 + op_events;
}

}  // namespace dtnn
