// summarize_traces (trace/trace_summary.h) on hand-built traces of 1, 2 and 3 ranks whose phases,
// stragglers and timeline are worked out by hand in the comments: phase rows (calls, total, median =
// sorted[n / 2]), each step's slowest rank by busy time (step + data wait - exposed waits, lane 0 only),
// its lag over the median rank and the phase it lost most in, steps some rank did not complete left out,
// the timeline's step (median duration, first step skipped) on rank 0's clock. And --trace_steps:
// parse_trace_steps, TraceSteps::count and a Tracer that keeps only its range.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "trace/trace_summary.h"

using Catch::Contains;
using dtnn::TraceKind;

namespace {

constexpr double kEps = 1e-9;

// One rank's trace, its events written in rank 0's time and stored on the rank's own clock (+ offset_s),
// as gather_traces hands them over.
struct RankBuilder {
  dtnn::RankTrace trace;
  explicit RankBuilder(double offset_s = 0.0, int64_t dropped = 0) {
    trace.offset_s = offset_s;
    trace.dropped = dropped;
  }
  // Adds [t, t + d) and returns its end.
  double add(TraceKind k, int id, double t, double d, int64_t step, int lane = 0, int64_t bytes = 0) {
    trace.events.push_back({t + trace.offset_s, t + d + trace.offset_s, step, bytes, id, k, static_cast<uint8_t>(lane)});
    return t + d;
  }
};

// A blocking data-parallel step of a two-layer model (ids 1 Dense, 3 Conv2D): the data wait, then inside
// the step forward 1, forward 3, loss, backward 3, backward 1, the allreduce and the update.
struct Blocking {
  double dw = 0.25, f1 = 0.5, f3 = 1.0, loss = 0.125, b3 = 2.0, b1 = 1.0, ar = 0.25, up = 0.25;
};
void blocking_step(RankBuilder& r, int64_t step, double t, const Blocking& d) {
  const double begin = r.add(TraceKind::data_wait, -1, t, d.dw, step);
  double u = r.add(TraceKind::forward, 1, begin, d.f1, step);
  u = r.add(TraceKind::forward, 3, u, d.f3, step);
  u = r.add(TraceKind::loss, -1, u, d.loss, step);
  u = r.add(TraceKind::backward, 3, u, d.b3, step);
  u = r.add(TraceKind::backward, 1, u, d.b1, step);
  u = r.add(TraceKind::allreduce, 0, u, d.ar, step, 0, 4096);
  u = r.add(TraceKind::update, 0, u, d.up, step);
  r.add(TraceKind::step, -1, begin, u - begin, step);
}

dtnn::TraceNames names() {
  dtnn::TraceNames n;
  n.layers = {{1, "Dense", ""}, {2, "ReLU", ""}, {3, "Conv2D", ""}};
  return n;
}

// Rank 0 (offset 0) and rank 1 (its clock 1000.25 s ahead; every step starts 0.125 s earlier than rank 0's).
// Steps start at 20 s * step on rank 1. Durations differing from Blocking's:
//   step 0: both f1 4.5 (warm-up); rank 0 ar 0.75; rank 1 dw 0.75
//   step 1: rank 0 f3 1.5; rank 1 ar 0.75
//   step 2: rank 0 ar 1.25; rank 1 b3 3.0
//   step 3: rank 0 ar 0.5; rank 1 up 0.5
//   step 4: rank 0 complete; rank 1 only its data wait and forward 1 (no step event: left out)
//   rank 0 also evaluates (step -1) for 2 s after step 4.
// Step durations (compute 4.875 + ar, but f1/f3/b3/up as above):
//   rank 0: 9.625, 5.625, 6.125, 5.375, 5.125; rank 1: 9.125, 5.625, 6.125, 5.375.
std::vector<dtnn::RankTrace> two_ranks() {
  RankBuilder r0(0.0, 3), r1(1000.25, 2);
  Blocking s0a, s0b, s1a, s1b, s2a, s2b, s3a, s3b, s4;
  s0a.f1 = s0b.f1 = 4.5;
  s0a.ar = 0.75;
  s0b.dw = 0.75;
  s1a.f3 = 1.5;
  s1b.ar = 0.75;
  s2a.ar = 1.25;
  s2b.b3 = 3.0;
  s3a.ar = 0.5;
  s3b.up = 0.5;
  const Blocking a[] = {s0a, s1a, s2a, s3a, s4}, b[] = {s0b, s1b, s2b, s3b};
  for (int s = 0; s < 5; ++s) blocking_step(r0, s, 20.0 * s + 0.125, a[s]);
  for (int s = 0; s < 4; ++s) blocking_step(r1, s, 20.0 * s, b[s]);
  r1.add(TraceKind::forward, 1, r1.add(TraceKind::data_wait, -1, 80.0, 0.25, 4), 0.5, 4);
  r0.add(TraceKind::evaluate, -1, 100.0, 2.0, -1);
  return {r0.trace, r1.trace};
}

const dtnn::PhaseRow& row(const dtnn::TraceSummary& s, int rank, const std::string& phase, int layer = -1) {
  for (const dtnn::PhaseRow& p : s.phases)
    if (p.rank == rank && p.phase == phase && p.layer == layer) return p;
  FAIL("no phase row " << rank << " " << phase << " " << layer);
  throw;
}

void check_row(const dtnn::TraceSummary& s, int rank, const std::string& phase, int layer, int64_t calls,
               double total, double median) {
  INFO("rank " << rank << " " << phase << " " << layer);
  const dtnn::PhaseRow& p = row(s, rank, phase, layer);
  CHECK(p.calls == calls);
  CHECK(p.total_s == Approx(total).margin(kEps));
  CHECK(p.median_s == Approx(median).margin(kEps));
}

void check_straggler(const dtnn::StragglerRow& r, int64_t step, int slowest, double busy, double median_busy,
                     double lag, const std::string& phase, double phase_lag) {
  INFO("step " << step);
  CHECK(r.step == step);
  CHECK(r.slowest_rank == slowest);
  CHECK(r.busy_s == Approx(busy).margin(kEps));
  CHECK(r.median_busy_s == Approx(median_busy).margin(kEps));
  CHECK(r.lag_s == Approx(lag).margin(kEps));
  CHECK(r.phase == phase);
  CHECK(r.phase_lag_s == Approx(phase_lag).margin(kEps));
}

const dtnn::TimelineEvent& event(const dtnn::TraceSummary& s, int rank, const std::string& kind, int id = -1) {
  for (const dtnn::TimelineEvent& e : s.timeline)
    if (e.rank == rank && e.kind == kind && e.id == id) return e;
  FAIL("no timeline event " << rank << " " << kind << " " << id);
  throw;
}

void check_span(const dtnn::TimelineEvent& e, double begin, double end) {
  INFO(e.rank << " " << e.name);
  CHECK(e.begin_s == Approx(begin).margin(kEps));
  CHECK(e.end_s == Approx(end).margin(kEps));
}

}  // namespace

TEST_CASE("trace summary: two ranks' phases, stragglers and timeline by hand", "[trace]") {
  dtnn::ClockSync clocks;
  clocks.residual_s = 0.002;
  const dtnn::TraceSummary s = dtnn::summarize_traces(two_ranks(), names(), clocks);
  CHECK(s.ranks == 2);
  CHECK(s.dropped_events == 5);
  CHECK(s.clock_residual_s == 0.002);

  // Phases: forward and backward per layer, every other kind summed (allreduce and update have id 0 but
  // no layer); rank 0 has evaluate, rank 1 does not.
  CHECK(s.phases.size() == 10 + 9);
  // rank 0: steps 9.625, 5.625, 6.125, 5.375, 5.125 -> sorted[2] = 5.625
  check_row(s, 0, "step", -1, 5, 31.875, 5.625);
  check_row(s, 0, "data_wait", -1, 5, 1.25, 0.25);
  check_row(s, 0, "forward", 1, 5, 6.5, 0.5);  // 4.5 + 4 x 0.5
  check_row(s, 0, "forward", 3, 5, 5.5, 1.0);  // 1.5 + 4 x 1.0
  check_row(s, 0, "loss", -1, 5, 0.625, 0.125);
  check_row(s, 0, "backward", 3, 5, 10.0, 2.0);
  check_row(s, 0, "backward", 1, 5, 5.0, 1.0);
  check_row(s, 0, "allreduce_dw", -1, 5, 3.0, 0.5);  // 0.75, 0.25, 1.25, 0.5, 0.25
  check_row(s, 0, "update_dw", -1, 5, 1.25, 0.25);
  check_row(s, 0, "evaluate", -1, 1, 2.0, 2.0);
  // rank 1: four steps 9.125, 5.625, 6.125, 5.375: sorted[2] = 6.125 (not the mean of the middle two)
  check_row(s, 1, "step", -1, 4, 26.25, 6.125);
  check_row(s, 1, "data_wait", -1, 5, 1.75, 0.25);
  check_row(s, 1, "forward", 1, 5, 6.5, 0.5);
  check_row(s, 1, "forward", 3, 4, 4.0, 1.0);
  check_row(s, 1, "loss", -1, 4, 0.5, 0.125);
  check_row(s, 1, "backward", 3, 4, 9.0, 2.0);  // 2, 2, 3, 2
  check_row(s, 1, "backward", 1, 4, 4.0, 1.0);
  check_row(s, 1, "allreduce_dw", -1, 4, 1.5, 0.25);
  check_row(s, 1, "update_dw", -1, 4, 1.25, 0.25);

  // Stragglers: busy = step + data wait - allreduce; step 4 (no step event on rank 1) is left out.
  REQUIRE(s.stragglers.size() == 4);
  // step 0: busy 9.625 + 0.25 - 0.75 = 9.125 | 9.125 + 0.75 - 0.25 = 9.625; rank 1's data wait 0.75 vs 0.5
  check_straggler(s.stragglers[0], 0, 1, 9.625, 9.375, 0.25, "data_wait", 0.25);
  // step 1: 5.625 + 0.25 - 0.25 = 5.625 | 5.625 + 0.25 - 0.75 = 5.125; rank 0's forward 3: 1.5 vs 1.25
  check_straggler(s.stragglers[1], 1, 0, 5.625, 5.375, 0.25, "forward 003_Conv2D", 0.25);
  // step 2: 6.125 + 0.25 - 1.25 = 5.125 | 6.125 + 0.25 - 0.25 = 6.125; rank 1's backward 3: 3.0 vs 2.5
  check_straggler(s.stragglers[2], 2, 1, 6.125, 5.625, 0.5, "backward 003_Conv2D", 0.5);
  // step 3: 5.375 + 0.25 - 0.5 = 5.125 | 5.375 + 0.25 - 0.25 = 5.375; rank 1's update: 0.5 vs 0.375
  check_straggler(s.stragglers[3], 3, 1, 5.375, 5.25, 0.125, "update_dw", 0.125);

  // Timeline: complete steps 0..3 last (longest rank) 9.625, 5.625, 6.125, 5.375; without step 0 the median
  // (sorted[3 / 2]) is step 1. Its first event is rank 1's data wait at 20 s on rank 0's clock.
  CHECK(s.timeline_step == 1);
  REQUIRE(s.timeline.size() == 18);
  double first = 1e9;
  for (const dtnn::TimelineEvent& e : s.timeline) first = std::min(first, e.begin_s);
  CHECK(first == Approx(0.0).margin(kEps));
  // rank 1: dw [0, 0.25), f1 [0.25, 0.75), f3 [0.75, 1.75), loss, b3 [1.875, 3.875), b1, ar [4.875, 5.625), up
  check_span(event(s, 1, "data_wait"), 0.0, 0.25);
  check_span(event(s, 1, "step"), 0.25, 5.875);
  check_span(event(s, 1, "forward", 3), 0.75, 1.75);
  check_span(event(s, 1, "allreduce_dw", 0), 4.875, 5.625);
  // rank 0, 0.125 s later: dw [0.125, 0.375), f1, f3 [0.875, 2.375), loss, b3, b1 [4.5, 5.5), ar, up [5.75, 6)
  check_span(event(s, 0, "data_wait"), 0.125, 0.375);
  check_span(event(s, 0, "step"), 0.375, 6.0);
  check_span(event(s, 0, "forward", 3), 0.875, 2.375);
  check_span(event(s, 0, "backward", 1), 4.5, 5.5);
  check_span(event(s, 0, "allreduce_dw", 0), 5.5, 5.75);
  check_span(event(s, 0, "update_dw", 0), 5.75, 6.0);
  CHECK(event(s, 0, "forward", 3).name == "003_Conv2D forward");
  CHECK(event(s, 1, "backward", 1).name == "001_Dense backward");
  CHECK(event(s, 0, "allreduce_dw", 0).name == "allreduce_dw");
  CHECK(event(s, 0, "allreduce_dw", 0).bytes == 4096);
  CHECK(event(s, 0, "step").bytes == 0);
  for (const dtnn::TimelineEvent& e : s.timeline) CHECK(e.lane == 0);
}

TEST_CASE("trace summary: one rank has no stragglers, its timeline skips the warm-up step", "[trace]") {
  const std::vector<dtnn::RankTrace> both = two_ranks();
  const dtnn::TraceSummary s = dtnn::summarize_traces({both[0]}, names(), {});
  CHECK(s.ranks == 1);
  CHECK(s.dropped_events == 3);
  CHECK(s.stragglers.empty());
  CHECK(s.phases.size() == 10);
  check_row(s, 0, "step", -1, 5, 31.875, 5.625);
  // Steps 1..4 last 5.625, 6.125, 5.375, 5.125: sorted[4 / 2] = 5.625, step 1.
  CHECK(s.timeline_step == 1);
  REQUIRE(s.timeline.size() == 9);
  check_span(event(s, 0, "data_wait"), 0.0, 0.25);
  check_span(event(s, 0, "step"), 0.25, 5.875);

  // A run of a single traced step keeps that step; a trace without a complete step has no timeline.
  RankBuilder one;
  blocking_step(one, 0, 3.0, Blocking{});
  CHECK(dtnn::summarize_traces({one.trace}, names(), {}).timeline_step == 0);
  RankBuilder none;
  none.add(TraceKind::evaluate, -1, 0.0, 1.0, -1);
  none.add(TraceKind::data_wait, -1, 2.0, 1.0, 0);
  const dtnn::TraceSummary n = dtnn::summarize_traces({none.trace}, names(), {});
  CHECK(n.timeline_step == -1);
  CHECK(n.timeline.empty());
  CHECK(n.phases.size() == 2);
}

// Three ranks, non-blocking: per step the data wait, then f1 (Dense, id 1), b1, the comm calls after layer 1,
// the wait for bucket 0 and its update; bucket 0's sum in flight on lane 1 from the comm calls to the end of
// the wait. Baseline dw 0.25, f1 1, b1 2, cc 0.125, wait 0.5, up 0.25: step 3.875, busy 3.875 + 0.25 - 0.5.
//   step 0: rank 0 dw 0.75
//   step 1: rank 0 wait 1.0; rank 1 b1 2.5; rank 2 b1 2.75 and wait 1.5 (in flight 1.625 against 1.125, 0.625)
//   step 2: rank 1 f1 1.5
TEST_CASE("trace summary: three ranks, the median rank and waits that are not a rank's own work", "[trace]") {
  struct D {
    double dw = 0.25, f1 = 1.0, b1 = 2.0, cc = 0.125, wait = 0.5, up = 0.25;
  };
  D d[3][3];
  d[0][0].dw = 0.75;
  d[1][0].wait = 1.0;
  d[1][1].b1 = 2.5;
  d[1][2].b1 = 2.75;
  d[1][2].wait = 1.5;
  d[2][1].f1 = 1.5;
  std::vector<dtnn::RankTrace> ranks;
  for (int r = 0; r < 3; ++r) {
    RankBuilder b(0.5 * r);
    for (int s = 0; s < 3; ++s) {
      const D& x = d[s][r];
      const double begin = b.add(TraceKind::data_wait, -1, 10.0 * s, x.dw, s);
      double u = b.add(TraceKind::forward, 1, begin, x.f1, s);
      u = b.add(TraceKind::backward, 1, u, x.b1, s);
      const double cc = u;
      u = b.add(TraceKind::comm_calls, 1, u, x.cc, s);
      u = b.add(TraceKind::wait, 0, u, x.wait, s, 0, 512);
      b.add(TraceKind::in_flight, 0, cc, u - cc, s, 1, 512);
      u = b.add(TraceKind::update, 0, u, x.up, s);
      b.add(TraceKind::step, -1, begin, u - begin, s);
    }
    ranks.push_back(b.trace);
  }
  const dtnn::TraceSummary s = dtnn::summarize_traces(ranks, names(), {});
  CHECK(s.ranks == 3);
  check_row(s, 2, "wait_dw", -1, 3, 2.5, 0.5);
  check_row(s, 2, "in_flight", -1, 3, 0.625 + 1.625 + 0.625, 0.625);
  check_row(s, 0, "comm_calls", -1, 3, 0.375, 0.125);
  check_row(s, 1, "backward", 1, 3, 6.5, 2.0);

  REQUIRE(s.stragglers.size() == 3);
  // step 0: busy 4.125 | 3.625 | 3.625
  check_straggler(s.stragglers[0], 0, 0, 4.125, 3.625, 0.5, "data_wait", 0.5);
  // step 1: rank 0 4.375 + 0.25 - 1.0 = 3.625 | rank 1 4.375 + 0.25 - 0.5 = 4.125 | rank 2 5.625 + 0.25 - 1.5
  // = 4.375. Rank 2's backward 2.75 against the median rank's 2.5; its wait (1.5 against 1.0) and its sum
  // in flight (lane 1: 1.625 against 1.125) exceed more but are not its own work.
  check_straggler(s.stragglers[1], 1, 2, 4.375, 4.125, 0.25, "backward 001_Dense", 0.25);
  // step 2: rank 1's forward 1.5 against 1.0
  check_straggler(s.stragglers[2], 2, 1, 4.125, 3.625, 0.5, "forward 001_Dense", 0.5);

  // Step durations (longest rank) 3.875, 5.625, 4.375; without step 0, sorted[2 / 2] = 5.625: step 1.
  CHECK(s.timeline_step == 1);
  CHECK(s.timeline.size() == 3 * 8);
  // Every rank starts step 1 at 10 s on rank 0's clock (their own clocks 0, 0.5 and 1 s ahead).
  for (int r = 0; r < 3; ++r) {
    check_span(event(s, r, "data_wait"), 0.0, 0.25);
    const dtnn::TimelineEvent& f = event(s, r, "in_flight", 0);
    CHECK(f.lane == 1);
    CHECK(f.name == "bucket 0 allreduce");
    CHECK(f.bytes == 512);
    CHECK(event(s, r, "wait_dw", 0).name == "wait bucket 0");
    CHECK(event(s, r, "update_dw", 0).name == "update bucket 0");
  }
  check_span(event(s, 2, "in_flight", 0), 4.0, 5.625);  // 0.25 + 1 + 2.75, then cc 0.125 and wait 1.5
  check_span(event(s, 2, "step"), 0.25, 5.875);
}

TEST_CASE("trace summary: a trace from step 3 on (--trace_steps) has no warm-up step to skip", "[trace]") {
  // Steps 3, 4, 5 last 4.875 + 1.0, + 3.0, + 2.0 s: the median of all three is step 5. Only the run's first
  // step (step 0) is a warm-up; skipping step 3 would leave 4 and 5 and pick step 4.
  RankBuilder r;
  const double ar[] = {1.0, 3.0, 2.0};
  for (int s = 3; s < 6; ++s) {
    Blocking d;
    d.ar = ar[s - 3];
    blocking_step(r, s, 10.0 * s, d);
  }
  CHECK(dtnn::summarize_traces({r.trace}, names(), {}).timeline_step == 5);
  // From step 0 on, step 0 is skipped: steps 1 and 2 (durations + 3.0, + 2.0) leave sorted[1] = step 1.
  RankBuilder from0;
  for (int s = 0; s < 3; ++s) {
    Blocking d;
    d.ar = ar[s];
    blocking_step(from0, s, 10.0 * s, d);
  }
  CHECK(dtnn::summarize_traces({from0.trace}, names(), {}).timeline_step == 1);
}

TEST_CASE("trace steps: parse_trace_steps and TraceSteps::count", "[trace]") {
  const dtnn::TraceSteps all = dtnn::parse_trace_steps("");
  CHECK(all.all());
  CHECK(all.count(10) == 10);
  const dtnn::TraceSteps r = dtnn::parse_trace_steps("3..7");
  CHECK_FALSE(r.all());
  CHECK(r.first == 3);
  CHECK(r.last == 7);
  CHECK(r.count(10) == 5);
  CHECK(r.count(6) == 3);  // 3, 4, 5
  CHECK(r.count(3) == 0);
  CHECK(r.count(0) == 0);
  CHECK(dtnn::parse_trace_steps("0..0").count(1) == 1);
  CHECK_THROWS_WITH(dtnn::parse_trace_steps("5"), Contains("expected N..M"));
  CHECK_THROWS_WITH(dtnn::parse_trace_steps("5..2"), Contains("after the last"));
  CHECK_THROWS_WITH(dtnn::parse_trace_steps("-1..3"), Contains("expected N..M"));
  for (const char* bad : {"5", "5..2", "-1..3", "..3", "3..", "a..3", "1...3", " 1..3"})
    CHECK_THROWS_AS(dtnn::parse_trace_steps(bad), dtnn::Error);
}

TEST_CASE("trace steps: a Tracer with a range keeps only its steps and counts only those it drops", "[trace]") {
  dtnn::Tracer t(4, dtnn::parse_trace_steps("2..3"));
  t.set_step(-1);
  t.add(TraceKind::evaluate, -1, 0.0, 1.0);  // outside steps: not in a range
  for (int64_t step = 0; step < 6; ++step) {
    t.set_step(step);
    t.add(TraceKind::data_wait, -1, step, step + 0.25);
    t.add(TraceKind::step, -1, step + 0.25, step + 1.0);
    if (step == 3) t.add(TraceKind::loss, -1, step + 0.5, step + 0.75);  // the fifth kept: no room
  }
  REQUIRE(t.size() == 4);
  CHECK(t.dropped() == 1);
  for (size_t i = 0; i < t.size(); ++i) CHECK((t.events()[i].step == 2 || t.events()[i].step == 3));
  CHECK(t.events()[0].kind == TraceKind::data_wait);
  CHECK(t.events()[3].kind == TraceKind::step);

  // Without a range everything is kept, evaluation passes included.
  dtnn::Tracer every(8);
  every.set_step(-1);
  every.add(TraceKind::evaluate, -1, 0.0, 1.0);
  every.set_step(7);
  every.add(TraceKind::step, -1, 1.0, 2.0);
  CHECK(every.size() == 2);
  CHECK(every.dropped() == 0);
}
