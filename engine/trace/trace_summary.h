// What a traced run keeps of its trace in the run report and the results store: every rank's phase summary,
// the straggler of every training step, and one representative step's timeline on every rank.
//
// Phases (per rank): forward and backward per layer id; every other event kind summed over its ids (step,
// data_wait, loss, comm_calls, in_flight, wait_dw, allreduce_dw, update_dw, evaluate), named as
// trace_kind_name; a conv algorithm's phases per layer and operation, "op <PyDTNN's op name>"
// ("op forward_im2col"). calls, total and median per call (sorted(times)[n / 2], as PyDTNN's CSV).
// Op events stay out of the stragglers and the timeline (inside their layer's event; the trace files have them).
//
// Stragglers (runs of more than one rank): in a synchronous data-parallel step every rank waits for the
// slowest one inside the gradient sum, so step times are nearly equal and do not show who was late. A
// rank's *busy* time in a step is what it spent on its own work: the step plus its data wait, less its
// exposed communication (wait_dw and allreduce_dw events: waiting for the others). The straggler of a step
// is the rank with the largest busy time; its lag is that minus the median busy time over the ranks; its
// phase is the phase (forward or backward of one layer, or another kind) where its time exceeds the median
// rank's time in that phase the most.
//
// Timeline: every event of one training step on every rank, times in seconds from the step's first event
// of any rank on rank 0's clock (offsets of sync_clocks applied). The step is the one whose duration (the
// largest over ranks) is the median over the complete steps, skipping the run's first step when there are
// others (its warm-up is not representative).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace_output.h"

namespace dtnn {

struct PhaseRow {
  int rank = 0;
  std::string phase;  // trace_kind_name of the events, or "op <name>" for a conv algorithm's phase
  int layer = -1;     // layer id for forward, backward and op, -1 otherwise
  int64_t calls = 0;
  double total_s = 0.0, median_s = 0.0;
};

struct StragglerRow {
  int64_t step = 0;
  int slowest_rank = 0;
  double busy_s = 0.0;         // the slowest rank's busy time
  double median_busy_s = 0.0;  // the median over ranks
  double lag_s = 0.0;          // busy_s - median_busy_s
  std::string phase;           // "backward 012_Conv2D", "data_wait", ...
  double phase_lag_s = 0.0;    // the slowest rank's time in that phase less the median rank's
};

struct TimelineEvent {
  int rank = 0, lane = 0;
  std::string kind, name;  // trace_kind_name; trace_event_name
  int id = -1;             // layer id or bucket, as the event's
  double begin_s = 0.0, end_s = 0.0;
  int64_t bytes = 0;
};

struct TraceSummary {
  int ranks = 0;
  int64_t dropped_events = 0;  // over all ranks
  double clock_residual_s = 0.0;
  std::vector<PhaseRow> phases;
  std::vector<StragglerRow> stragglers;  // empty for one rank
  int64_t timeline_step = -1;            // -1: no complete training step was traced
  std::vector<TimelineEvent> timeline;
};

TraceSummary summarize_traces(const std::vector<RankTrace>& ranks, const TraceNames& names, const ClockSync& clocks);

}  // namespace dtnn
