// Paraver output of --tracing (--tracer_output=X.prv, or a directory): the three text files Paraver (BSC)
// loads, X.prv (header and records), X.pcf (names of states, event types and values) and X.row (names of
// the CPU, node, application, task and thread rows), so that PyDTNN users keep their Paraver
// configurations (PyDTNN traced with Extrae, whose merger writes the same three files).
//
// Contract (write_paraver, at rank 0 with every rank's events as write_trace gathers them):
// - Process model: one application ("dtnn"), one task per rank (task r + 1 = rank r), one thread per tracer
//   lane (thread 1 = lane 0, the training thread; thread 2 + b = lane 1 + b, bucket b's sum in flight).
//   Resource model: one node per distinct host (in order of first rank), one CPU per rank on its node;
//   every record of rank r names rank r's CPU. A task's thread count is its highest lane + 1.
// - Header: `#Paraver (dd/mm/yy at hh:mm):<ftime>_ns:<nodes>(<cpus of node 1>,...):1:<ranks>(<threads>:
//   <node>,...)`; no communicator lines. Times are integer nanoseconds from the trace's origin (the earliest
//   event of any rank on rank 0's clock, as the Chrome trace's ts 0); ftime is the latest end.
// - Events (record 2, `2:cpu:1:task:thread:time:type:value[:type:value...]`): each TraceEvent gives its
//   PyDTNN (type, value) (trace_events.h, the CSV's mapping) at its begin and (type, 0) at its end, as
//   PyDTNN/Extrae emit them. Events of one type on one thread nest (the tracer's lanes are built so), and
//   are written in stack order even where nanosecond rounding makes times tie: at one time, ends of the
//   events open longest last, begins outermost first, so Paraver's stacked-value semantics pair every 0 with
//   the begin it closes. Events of one thread and time share one record, in that order.
// - States (record 1, `1:cpu:1:task:thread:begin:end:state`, Extrae's state numbering): the training
//   thread is Running (1) from its first event to its last, except while it waits for the data loader
//   (Synchronization, 5), is inside the communication calls between layers (Test/Probe, 6), waits for a
//   bucket's sum (Wait/WaitAll, 8) or in the blocking allreduce (Group Communication, 13); a bucket's thread
//   is in Group Communication (13) while its sum is in flight, and has no state otherwise.
// - Records are sorted by time (a state by its begin), as Paraver requires of a trace.
// - .pcf: DEFAULT_OPTIONS, DEFAULT_SEMANTIC, STATES and STATES_COLOR (the states above, Extrae's labels and
//   colours), then one EVENT_TYPE block per event type used, naming every value used and 0 "End".
// Events the tracer dropped (its buffer was full) are not in the files; the run's output says how many.
#pragma once

#include <string>
#include <vector>

#include "trace/trace_events.h"

namespace dtnn {

// Whether a --tracer_output entry asks for Paraver: a path ending in '/', an existing directory, or *.prv.
bool is_paraver_output(const std::string& path);

// The files written for such an entry, .prv first: X.prv, X.pcf, X.row for X.prv; DIR/dtnn.prv, ... for DIR.
std::vector<std::string> paraver_files(const std::string& path);

struct ParaverText {
  std::string prv, pcf, row;
};
// The three files' contents; `date` is the header's "dd/mm/yy at hh:mm".
ParaverText paraver_text(const std::vector<RankTrace>& ranks, const TraceNames& names, const std::string& date);

// Writes paraver_files(path), each atomically, dated now (local time).
void write_paraver(const std::string& path, const std::vector<RankTrace>& ranks, const TraceNames& names);

}  // namespace dtnn
