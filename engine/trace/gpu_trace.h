// GPU timelines for --tracing with --enable_gpu: layers, the loss, the gradient sum and the update timed by CUDA
// events on the compute stream, not by host clocks around asynchronous calls (which would time only the
// launches).
//
// The host runs ahead of the device, so a step's marks are resolved later: marks live in kSlots step slots
// of one EventPool (created here, before training; nothing allocates in the batch loop). begin_step(s) first
// resolves the step that used slot s % kSlots before (waiting for its last mark: by then the device is long
// past it, kSlots - 1 steps behind the host at most), then records the slot's base mark. flush() resolves
// every pending step (end of an epoch, before an evaluation pass, end of training).
//
// Time base: one anchor mark recorded and waited for at construction, when the host reads its clock; a mark's
// host time is that reading plus the device time since the anchor. The anchor's error is the wait's return
// latency (microseconds); device and host clocks drift apart by far less over a run. A step's spans are timed
// from its base mark (CUDA's float milliseconds stay fine-grained over one step, not over a whole run).
//
// Resolved events go into the Tracer like the CPU's (same kinds and ids, lane 0 = the stream, step numbers
// as when recorded), so every writer, the summary and the store treat them alike.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trace/tracer.h"

namespace dtnn {

namespace gpu {
class EventPool;
}  // namespace gpu

class GpuTrace {
 public:
  static constexpr int kSlots = 3;
  // Room for `marks_per_step` marks per step (trace_events_per_step's count times two is enough).
  GpuTrace(Tracer& tracer, int marks_per_step);
  ~GpuTrace();
  GpuTrace(const GpuTrace&) = delete;
  GpuTrace& operator=(const GpuTrace&) = delete;

  void begin_step(int64_t step);
  // Records a mark at the stream's current point; its index, or -1 when this step's marks are used up
  // (the span is then dropped and counted).
  int mark();
  // Records the end mark of an event of `kind` and `id` that began at mark `begin`.
  void span(TraceKind kind, int32_t id, int begin);
  // The step's own event, from its base mark to here.
  void end_step();
  void flush();

 private:
  struct Pending {
    TraceKind kind;
    int32_t id;
    int begin, end;
  };
  struct Slot {
    int64_t step = -1;  // -1: nothing pending
    int used = 0;       // marks recorded
    std::vector<Pending> spans;
  };
  void resolve(Slot& slot);
  int first_mark(const Slot& slot) const;

  Tracer& tracer_;
  std::unique_ptr<gpu::EventPool> events_;
  int marks_per_step_;
  double host_anchor_ = 0.0;
  double last_end_s_ = 0.0;  // the latest end of the steps resolved so far (resolve keeps steps in order)
  Slot slots_[kSlots];
  int current_ = -1;
};

}  // namespace dtnn
