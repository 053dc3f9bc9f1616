// Operation events (trace/op_trace.h): every CPU convolution algorithm records its phases back to back inside
// the call, within the bound ConvAlgorithm::op_events() gives the Tracer's capacity, and named for their
// direction; a traced model's Conv2D records im2row and gemm inside its layer's forward event; nothing is
// recorded without a tracer.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "conv/conv_algorithm.h"
#include "core/clock.h"
#include "helpers.h"
#include "layers/layers.h"
#include "models/model.h"
#include "trace/op_trace.h"

using namespace dtnn;

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Runs direction `dir` of `algo` on `p` (random operands, with bias) and returns its events, checking the
// contract on the way.
std::vector<TraceEvent> traced_call(const ConvAlgorithm& algo, const ConvProblem& p, ConvDir dir) {
  Rng rng(7);
  std::vector<float> x(std::max<int64_t>(1, p.x_numel())), w(std::max<int64_t>(1, p.w_numel())), b(p.k),
      y(std::max<int64_t>(1, p.y_numel()));
  const test::Workspace ws(algo.workspace_floats(p));
  test::fill_uniform(x, rng);
  test::fill_uniform(w, rng);
  test::fill_uniform(b, rng);
  test::fill_uniform(y, rng);
  Tracer tracer(10000);
  double t0 = 0.0, t1 = 0.0;
  {
    const OpTracing on(&tracer);
    const OpLayer at(5);
    t0 = now_s();
    if (dir == ConvDir::fwd) algo.forward(p, x.data(), w.data(), b.data(), y.data(), ws.data());
    if (dir == ConvDir::bwd_data) algo.backward_data(p, y.data(), w.data(), x.data(), ws.data());
    if (dir == ConvDir::bwd_filter) algo.backward_filter(p, x.data(), y.data(), w.data(), b.data(), ws.data());
    t1 = now_s();
  }
  std::vector<TraceEvent> events(tracer.events(), tracer.events() + tracer.size());
  INFO(algo.name() << " " << conv_dir_name(dir) << " " << p.str() << ": " << events.size() << " events");
  CHECK(tracer.dropped() == 0);
  CHECK(static_cast<int64_t>(events.size()) <= algo.op_events(p, dir));
  const char* prefix[] = {"forward_", "backward_", "backward_"};
  const char* comp[] = {"forward_", "comp_dx_", "comp_dw_"};
  double reach = t0;
  for (const TraceEvent& e : events) {
    const std::string op = op_info(e.op).op;
    INFO(op);
    CHECK(e.kind == TraceKind::op);
    CHECK(e.id == 5);
    CHECK(e.lane == 0);
    CHECK((starts_with(op, prefix[static_cast<int>(dir)]) || starts_with(op, comp[static_cast<int>(dir)])));
    CHECK(e.begin >= reach);  // back to back, in order, inside the call
    CHECK(e.end >= e.begin);
    reach = e.end;
  }
  CHECK(reach <= t1);
  return events;
}

}  // namespace

TEST_CASE("op trace: every CPU algorithm's phases lie inside the call, within op_events(), named for the direction") {
  const char* problems[] = {
      "n4_c16h16w16_k16r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",   // im2row_gemm chunks, Winograd, convgemm
      "n64_c16h32w32_k16r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",  // resnet20's first stage: many chunks
      "n2_c16h7w5_k8r1s1_st1x1_pd0x0_dl1x1_g1_%s_f32",      // pointwise
      "n2_c4h28w28_k8r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",     // K = 8: implicit forward
      "n2_c1h9w13_k4r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",      // C = 1: implicit weight gradient
      "n3_c33h9w8_k17r3s3_st2x2_pd1x1_dl1x1_g1_%s_f32",     // stride 2: backward_data phases
      "n2_c8h7w7_k8r3s3_st1x1_pd1x1_dl1x1_g8_%s_f32",       // depthwise
      "n0_c3h8w8_k16r3s3_st1x1_pd1x1_dl1x1_g1_%s_f32",      // an empty batch
  };
  int traced = 0;
  for (const char* layout : {"nhwc", "nchw"})
    for (const char* fmt : problems) {
      char buf[128];
      std::snprintf(buf, sizeof buf, fmt, layout);
      const ConvProblem p = ConvProblem::parse(buf);
      for (const ConvAlgorithm* algo : conv_algorithms())
        if (algo->supports(p).ok())
          for (ConvDir dir : {ConvDir::fwd, ConvDir::bwd_data, ConvDir::bwd_filter}) {
            const std::vector<TraceEvent> events = traced_call(*algo, p, dir);
            if (algo->name() != "cpu.reference" && p.n > 0) {
              INFO(algo->name() << " " << conv_dir_name(dir) << " " << p.str());
              CHECK(!events.empty());  // every algorithm but the oracle says what it spent the call on
            }
            ++traced;
          }
    }
  CHECK(traced > 50);
}

TEST_CASE("op trace: a traced Conv2D (im2row_gemm) records im2row and gemm inside its forward event, nothing untraced") {
  Model m("op_trace");
  m.add(make_input(16, 16, 16));
  Conv2DSpec spec;
  spec.nfilters = 16;
  spec.padding = Pair(1);
  m.add(make_conv2d(spec));
  BuildContext ctx;
  ctx.layout = Layout::nhwc;
  ctx.max_batch = 8;
  ctx.conv_algo = "im2row_gemm";
  m.build(ctx, 1);
  const int conv_id = m.layer(1).id;
  REQUIRE(m.layer(1).algorithm_name() == "cpu.im2row_gemm");

  m.forward(8, Mode::train);  // untraced: nothing to record, and nowhere to record it
  Tracer tracer(trace_events_per_step(static_cast<int64_t>(m.num_layers()), 0, m.trace_op_events()));
  m.set_tracer(&tracer);
  m.forward(8, Mode::train);
  m.backward(8, m.num_layers() - 1);
  m.set_tracer(nullptr);
  const size_t recorded = tracer.size();
  m.forward(8, Mode::train);
  CHECK(tracer.size() == recorded);
  CHECK(tracer.dropped() == 0);

  const TraceEvent* fwd = nullptr;
  for (size_t i = 0; i < tracer.size(); ++i)
    if (tracer.events()[i].kind == TraceKind::forward && tracer.events()[i].id == conv_id) fwd = &tracer.events()[i];
  REQUIRE(fwd != nullptr);
  int im2row = 0, gemm = 0, backward_ops = 0;
  for (size_t i = 0; i < tracer.size(); ++i) {
    const TraceEvent& e = tracer.events()[i];
    if (e.kind != TraceKind::op) continue;
    CHECK(e.id == conv_id);
    const std::string phase = op_info(e.op).phase, op = op_info(e.op).op;
    if (!starts_with(op, "forward_")) {
      ++backward_ops;
      continue;
    }
    CHECK(e.begin >= fwd->begin);
    CHECK(e.end <= fwd->end);
    im2row += phase == "im2row" && op == "forward_im2col";
    gemm += phase == "gemm" && op == "forward_matmul";
  }
  CHECK(im2row >= 1);
  CHECK(gemm == im2row);  // one GEMM per im2row chunk
  CHECK(backward_ops > 0);
  CHECK(static_cast<int64_t>(tracer.size()) <= trace_events_per_step(static_cast<int64_t>(m.num_layers()), 0, m.trace_op_events()));
}

TEST_CASE("op trace: the CSV codes are PyDTNN's (OpsEventEnum) or dtnn's own, one name per (type, code)") {
  CHECK(op_events_of(kPydtnnOpsEvent) == 55);
  CHECK(std::string(op_info(OpCode::fwd_im2row).op) == "forward_im2col");
  CHECK(op_info(OpCode::fwd_im2row).code == 32);
  CHECK(op_info(OpCode::fwd_gemm).code == 33);
  CHECK(op_info(OpCode::bwd_dx_gemm).code == 21);
  CHECK(op_info(OpCode::bwd_row2im).code == 20);
  CHECK(op_info(OpCode::bwd_dw_gemm).code == 19);
  CHECK(op_info(OpCode::fwd_convgemm).code == 25);
  for (int a = 1; a < static_cast<int>(OpCode::count); ++a) {
    const OpInfo& x = op_info(static_cast<uint8_t>(a));
    INFO(x.op);
    CHECK((x.type == kPydtnnOpsEvent || x.type == kDtnnOpsEvent));
    CHECK((x.code >= 1 && x.code <= op_events_of(x.type)));
    for (int b = 1; b < static_cast<int>(OpCode::count); ++b) {
      const OpInfo& y = op_info(static_cast<uint8_t>(b));
      if (x.type == y.type && x.code == y.code) CHECK(std::string(x.op) == y.op);
    }
  }
  CHECK(std::string(op_info(static_cast<uint8_t>(250)).op) == "?");
}
