#include "trace/trace_events.h"

#include "trace/op_trace.h"

#include <cstdio>

namespace dtnn {

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

PydtnnEvent pydtnn_event(const TraceEvent& e, const TraceNames& n) {
  const auto model = [&](int layer_id, int code, const char* what) {
    return PydtnnEvent{kPydtnnModelEvents, layer_id * 5 + code, layer_label(n, layer_id) + "_" + what};
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
    case TraceKind::op: {  // a conv algorithm's phase (trace/op_trace.h): PyDTNN's 60000002 or dtnn's 60000004
      const OpInfo& op = op_info(e.op);
      return {op.type, e.id * op_events_of(op.type) + op.code, layer_label(n, e.id) + "_" + op.op};
    }
  }
  return {};
}

}  // namespace dtnn
