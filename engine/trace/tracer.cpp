#include "trace/tracer.h"

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

Tracer::Tracer(int64_t capacity) : events_(static_cast<size_t>(capacity > 0 ? capacity : 0)) {}

int64_t trace_events_per_step(int64_t layers, int64_t buckets, int64_t op_events) {
  // step + data wait + loss; per layer forward, backward and its comm calls; per bucket in flight, wait,
  // update (blocking: one allreduce and one update); the algorithms' phases.
  return 3 + 3 * layers + 3 * buckets + 2 + op_events;
}

}  // namespace dtnn
