#include "trace/gpu_trace.h"

#include <algorithm>

#include "backend/gpu_ops.h"
#include "core/clock.h"

namespace dtnn {

GpuTrace::GpuTrace(Tracer& tracer, int marks_per_step)
    : tracer_(tracer), events_(std::make_unique<gpu::EventPool>(1 + kSlots * marks_per_step)),
      marks_per_step_(marks_per_step) {
  for (Slot& s : slots_) s.spans.reserve(static_cast<size_t>(marks_per_step));
  events_->record(0);
  events_->wait(0);
  host_anchor_ = now_s();
}

GpuTrace::~GpuTrace() = default;

int GpuTrace::first_mark(const Slot& slot) const {
  return 1 + static_cast<int>(&slot - slots_) * marks_per_step_;
}

void GpuTrace::begin_step(int64_t step) {
  current_ = static_cast<int>(step % kSlots);
  Slot& slot = slots_[current_];
  resolve(slot);
  slot.step = step;
  mark();  // the base mark: index first_mark(slot)
}

int GpuTrace::mark() {
  if (current_ < 0) return -1;
  Slot& slot = slots_[current_];
  if (slot.used >= marks_per_step_) return -1;
  const int i = first_mark(slot) + slot.used++;
  events_->record(i);
  return i;
}

void GpuTrace::span(TraceKind kind, int32_t id, int begin) {
  const int end = mark();
  if (begin < 0 || end < 0) {
    tracer_.count_dropped();
    return;
  }
  slots_[current_].spans.push_back({kind, id, begin, end});  // reserved: marks_per_step_ >= spans
}

void GpuTrace::end_step() {
  if (current_ < 0) return;
  span(TraceKind::step, -1, first_mark(slots_[current_]));
}

void GpuTrace::resolve(Slot& slot) {
  if (slot.step < 0) return;
  if (slot.used > 0) events_->wait(first_mark(slot) + slot.used - 1);
  const int64_t was = tracer_.step();
  tracer_.set_step(slot.step);
  // cudaEventElapsedTime gives float milliseconds: measured from the run's anchor, a mark 100 s in is good to
  // ~8 us only. So the step's base mark is placed once from the anchor, and every span from the base: the
  // spans' ends and lengths are then good to well under a microsecond, however long the run.
  // That placement is still off by up to half a float ulp of the time since the anchor (±4 us at 100 s, ±31 us
  // at 1000 s), independently per step, while steps follow each other on the stream within a microsecond: a
  // step never starts before the one resolved before it (steps resolve in order) ended.
  const int base = first_mark(slot);
  const double base_s = std::max(host_anchor_ + events_->seconds(0, base), last_end_s_);
  for (const Pending& p : slot.spans) {
    const double end = base_s + events_->seconds(base, p.end);
    tracer_.add(p.kind, p.id, base_s + events_->seconds(base, p.begin), end);
    last_end_s_ = std::max(last_end_s_, end);
  }
  tracer_.set_step(was);
  slot.step = -1;
  slot.used = 0;
  slot.spans.clear();
}

void GpuTrace::flush() {
  // Oldest first: the steps in slot order after the current one.
  for (int k = 1; k <= kSlots; ++k) resolve(slots_[(current_ + k + kSlots) % kSlots]);
}

}  // namespace dtnn
