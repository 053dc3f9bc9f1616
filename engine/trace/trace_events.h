// What the trace writers share: PyDTNN's (type, value, name) of an event (RankTrace is in trace_output.h).
//
// pydtnn_event() is the one mapping from a TraceKind to PyDTNN's event codes, used by the CSV writer (its
// rows) and the Paraver writer (its records and the .pcf that names them), so both files of one run always
// agree, and an event kind added later is named once. The codes are listed in trace_output.h (CSV):
// type 60000001 (PyDTNN's PYDTNN_MDL_EVENT) value = layer id * 5 + code (1 forward, 2 backward,
// 3 allreduce_dw, 4 wait_dw, 5 update_dw); type 60000003 (dtnn's own) values 1..5 for the step, the data
// wait, the loss, the communication calls between layers and an evaluation pass. Value 0 is reserved: in
// Paraver it ends the event of that type (PyDTNN and Extrae emit the value at the begin and 0 at the end).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace_output.h"
#include "trace/tracer.h"

namespace dtnn {

constexpr int kPydtnnModelEvents = 60000001;  // PyDTNN's PYDTNN_MDL_EVENT
constexpr int kDtnnEvents = 60000003;         // dtnn's phases (PyDTNN's 60000002 is its per-op type)

// PyDTNN's (type, value, name) of an event; ordered by (type, value).
struct PydtnnEvent {
  int type = 0, value = 0;
  std::string name;
  bool operator<(const PydtnnEvent& o) const { return type != o.type ? type < o.type : value < o.value; }
};
PydtnnEvent pydtnn_event(const TraceEvent& e, const TraceNames& n);

// The layer of that id in `n` (nullptr: unknown), and its PyDTNN label "<id, 3 digits>_<Type>".
const TraceNames::Layer* find_layer(const TraceNames& n, int id);
std::string layer_label(const TraceNames& n, int id);

}  // namespace dtnn
