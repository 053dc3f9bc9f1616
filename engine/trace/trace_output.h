// Writing the traces of a run: every rank's events on one time base, to PyDTNN's simple-tracer CSV or to a
// Chrome trace-event JSON file (Perfetto, chrome://tracing).
//
// Clocks (sync_clocks): each rank's steady clock is offset against rank 0's by rounds of a barrier followed
// by a clock reading on every rank; the offset is the median of (mine - rank 0's) over the rounds, and half
// the spread of those differences bounds the residual skew (barrier exit is not simultaneous). The trace
// says how large that bound is. On one node every rank reads the same CLOCK_MONOTONIC, so the offsets
// measure only the barrier's exit spread.
//
// CSV (PyDTNN's header `Event type;Event value;Event name;Calls;Total time;Median of times`, rank 0's events,
// times in seconds, the median as PyDTNN takes it: sorted(times)[n / 2]):
//   60000001 (PyDTNN's model events), value = layer id * 5 + code, name "<id>_<Type>_<event>":
//     1 forward, 2 backward, 3 allreduce_dw (blocking: the one allreduce, named after the model's top
//     layer; non-blocking: each bucket's sum in flight, named after the layer whose backward completes it),
//     4 wait_dw (a bucket's exposed wait), 5 update_dw (a bucket's update; blocking: the whole slab, named
//     after the top layer as the allreduce);
//   60000003 (dtnn's), value and name: 1 dtnn_step, 2 dtnn_data_wait, 3 dtnn_loss, 4 dtnn_comm_calls,
//     5 dtnn_evaluate;
//   60000002 (PyDTNN's operation events: the algorithms' phases, trace/op_trace.h), value = layer id * 55 +
//     PyDTNN's code, name "<id>_<Type>_<op>" with PyDTNN's operation name (forward_im2col, forward_matmul,
//     comp_dx_matmul, comp_dx_col2im, comp_dw_matmul, backward_im2col, forward_convgemm, ...);
//   60000004 (dtnn's operation events, phases PyDTNN has no code for: Winograd's filter transform, the
//     backward passes of direct/depthwise/Winograd, oneDNN's primitives), value = layer id * 16 + code,
//     names as 60000002's.
// JSON: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}; pid = rank (named "rank r
// (host)"), tid = lane (0 "training", 1 + b "bucket b in flight"); X events with ts/dur in microseconds from
// rank 0's first event, args: step, layer id/type/algorithm, bucket, bytes; op events (cat "compute", named
// by their phase: "im2row", "gemm", ...) also args.op, the CSV's operation name.
#pragma once

#include <string>
#include <vector>

#include "parallel/communicator.h"
#include "trace/tracer.h"

namespace dtnn {

struct ClockSync {
  double offset_s = 0.0;    // this rank's clock minus rank 0's
  double residual_s = 0.0;  // bound on the error of the offsets, the largest over the ranks
};
// Collective.
ClockSync sync_clocks(Communicator& comm);

// What the writers name events with.
struct TraceNames {
  struct Layer {
    int id = 0;
    std::string type, algorithm;
  };
  std::vector<Layer> layers;             // every layer (block children included), any order
  std::vector<int> bucket_layer;         // bucket b -> id of the layer whose backward completes it
  int top_layer = 0;                     // id of the model's last layer with parameters (blocking allreduce)
  bool per_bucket = false;               // non-blocking: update/wait events are per bucket
  bool gpu = false;                      // GPU model: lane 0 is the stream (CUDA events), lane 1 the host's data wait
  std::string host;
};

// One rank's events as rank 0 holds them after gather_traces (times on that rank's own clock: subtract
// offset_s for rank 0's).
struct RankTrace {
  double offset_s = 0.0;
  int64_t dropped = 0;
  std::string host;
  std::vector<TraceEvent> events;
};
// Collective: every rank's events, in rank order, at rank 0 (other ranks get an empty vector).
std::vector<RankTrace> gather_traces(const Tracer& tracer, const ClockSync& clocks, const std::string& host,
                                     Communicator& comm);

// Rank 0, after gather_traces: writes `path` atomically: *.csv -> PyDTNN's CSV (rank 0's events), *.json ->
// the Chrome trace of every rank, *.prv or a directory -> Paraver's three files of every rank
// (trace/trace_paraver.h). Throws dtnn::Error for another extension.
void write_trace(const std::string& path, const std::vector<RankTrace>& ranks, const TraceNames& names,
                 const ClockSync& clocks);

// What a lane (a trace thread) shows: "training", "bucket b in flight"; GPU models: "GPU stream (CUDA
// events)", "host (data-loader wait)".
std::string trace_lane_name(const TraceNames& names, int lane);

// The name an event carries in the JSON trace and the timeline ("003_Conv2D forward", "bucket 2 allreduce").
std::string trace_event_name(const TraceEvent& e, const TraceNames& names);

// The output format a --tracer_output path asks for ("csv", "json", "paraver"), or throws dtnn::Error
// saying which are known.
std::string trace_format(const std::string& path);
// The files writing that path produces: the path itself, or Paraver's X.prv, X.pcf, X.row.
std::vector<std::string> trace_files(const std::string& path);
// --tracer_output's files: one path, or several separated by commas (a.json,a.csv: both from one run).
std::vector<std::string> trace_outputs(const std::string& option);

}  // namespace dtnn
