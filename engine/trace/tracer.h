// Tracer: per-rank event timelines of training (PyDTNN's --tracing), kept in a buffer sized before training.
//
// Events are complete intervals [begin, end) on this rank's steady clock (core/clock.h), recorded by the
// code that timed them: the Model per layer (forward, backward), the GradientReducer per bucket (the
// communication calls made between layers, the sum in flight from its start until this rank saw it
// complete, the wait for it after the backward pass, the update of its range; blocking: the one allreduce),
// and the Trainer per step (the step, the data-loader wait before it, the loss between forward and backward)
// and per evaluation pass; the convolution algorithms record their phases inside the layer events
// (TraceKind::op, trace/op_trace.h). add() is a store into the preallocated buffer: nothing allocates in the
// batch loop, and with tracing off no Tracer exists and every hook is one null-pointer test. Events past
// the capacity are counted (dropped()), not stored; the writers say so.
//
// Lanes (the trace's threads): lane 0 is the training thread; lane 1 + b is bucket b's sum in flight
// (buckets overlap each other in time, so each gets its own lane and every lane's events nest).
#pragma once

#include <cstdint>
#include <climits>
#include <string>
#include <vector>

namespace dtnn {

enum class TraceKind : uint8_t {
  step,        // one training step (batch copied in to update done); id -1
  data_wait,   // waiting for the loader's batch before a step
  forward,     // id = layer id
  loss,        // loss and metric sums, between forward and backward
  backward,    // id = layer id
  comm_calls,  // communication calls between layers (bucket starts, MPI_Test); id = layer id after which
  in_flight,   // a bucket's sum from its start to its completion seen by this rank; id = bucket (lane 1 + id)
  wait,        // waiting for bucket id's sum after the backward pass (exposed communication)
  allreduce,   // blocking mode: the one MPI_Allreduce of the whole slab (exposed communication)
  update,      // the optimizer's update of bucket id's range (blocking: id 0, the whole slab)
  evaluate,    // a forward-only pass over a validation or test set
  op,          // a phase of a layer's algorithm (trace/op_trace.h's OpCode in TraceEvent::op); id = layer id
};
const char* trace_kind_name(TraceKind k);

struct TraceEvent {
  double begin = 0.0, end = 0.0;  // seconds, this rank's steady clock
  int64_t step = -1;              // the training step (counted over the run), -1 outside steps
  int64_t bytes = 0;              // in_flight, wait, allreduce: bytes summed
  int32_t id = -1;                // layer id or bucket index (see TraceKind)
  TraceKind kind = TraceKind::step;
  uint8_t lane = 0;
  uint8_t op = 0;                 // kind op: the OpCode (fits the padding: the event stays 40 bytes)
};
static_assert(sizeof(TraceEvent) == 40, "the trace buffer's size estimates and the gather assume 40-byte events");

// --trace_steps: the training steps (counted over the run from 0, both ends included) whose events are kept.
// The default keeps everything, evaluation passes (step -1) included; a range keeps only its steps.
struct TraceSteps {
  int64_t first = -1, last = INT64_MAX;
  bool all() const { return first < 0; }
  int64_t count(int64_t run_steps) const;  // steps of a run of `run_steps` steps inside the range
};
// "" (every step) or "N..M" with 0 <= N <= M; throws dtnn::Error saying what is expected.
TraceSteps parse_trace_steps(const std::string& text);

class Tracer {
 public:
  // Room for `capacity` events (allocated here, once), kept only for the steps in `steps`.
  explicit Tracer(int64_t capacity, TraceSteps steps = {});
  void add(TraceKind kind, int32_t id, double begin, double end, int64_t bytes = 0, uint8_t lane = 0) {
    if (step_ < steps_.first || step_ > steps_.last) return;
    if (size_ < events_.size()) events_[size_++] = TraceEvent{begin, end, step_, bytes, id, kind, lane, 0};
    else ++dropped_;
  }
  // A phase `op` (OpCode) of layer `layer`'s algorithm, on lane 0 (trace/op_trace.h records these).
  void add_op(int32_t layer, uint8_t op, double begin, double end) {
    if (step_ < steps_.first || step_ > steps_.last) return;
    if (size_ < events_.size()) events_[size_++] = TraceEvent{begin, end, step_, 0, layer, TraceKind::op, 0, op};
    else ++dropped_;
  }
  // The training step the following events belong to (-1: none).
  void set_step(int64_t step) { step_ = step; }
  int64_t step() const { return step_; }
  const TraceEvent* events() const { return events_.data(); }
  size_t size() const { return size_; }
  int64_t dropped() const { return dropped_; }
  void count_dropped() { ++dropped_; }  // an event that could not be timed (GPU marks used up)

 private:
  std::vector<TraceEvent> events_;
  size_t size_ = 0;
  int64_t dropped_ = 0;
  int64_t step_ = -1;
  TraceSteps steps_;
};

// Events per training step a model of `layers` top-level layers and `buckets` buckets records at most, its
// algorithms recording at most `op_events` phases per step (Model::trace_op_events()).
int64_t trace_events_per_step(int64_t layers, int64_t buckets, int64_t op_events);

}  // namespace dtnn
