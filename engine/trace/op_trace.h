// Operation-level tracing: the phases of a convolution algorithm (im2row, gemm, row2im, bias sums, weight
// reorders, Winograd's filter transform, ...) as TraceKind::op events nested in the layer's forward or
// backward event, PyDTNN's PYDTNN_OPS_EVENT (type 60000002) in the CSV.
//
// Who records: the Model, when it has a tracer, installs it as this thread's op tracer for the duration of
// a forward or backward pass (OpTracing) and names the top-level layer running (OpLayer); a layer whose
// id the events must carry instead (Conv2D inside a block or a fused layer) names itself with OpLayer. The
// algorithms mark their phases with OpScope. Everything keys on a thread-local pointer that is null unless
// the training thread is inside a traced pass, so with tracing off a scope costs one thread-local load and
// a null test, and threads other than the one that installed the tracer (OpenMP workers) record nothing.
// A phase that runs inside an OpenMP parallel region is timed by the calling thread around the region (or
// between barriers of it, where the calling thread is the team's thread 0), never per worker.
//
// Capacity: ConvAlgorithm::op_events() bounds the op events one call records; Layer::trace_op_events()
// sums them per layer and Model::trace_op_events() per step, which trace_events_per_step() adds to the
// Tracer's size (events past it are counted as dropped, not stored).
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "trace/tracer.h"

namespace dtnn {

// The phases dtnn's algorithms record, by direction (fwd_*: forward; bwd_*: backward_data or
// backward_filter). Several phases may share one PyDTNN code (im2row and im2col are both FORWARD_IM2COL).
// Stored in TraceEvent::op as uint8_t; none (0) is never recorded.
enum class OpCode : uint8_t {
  none,
  fwd_reshape_w,   // weights reordered for the algorithm (im2row_gemm's (R,S,C,K), convgemm's panels, oneDNN's)
  fwd_im2row,      // the im2row matrix of a chunk of output pixels
  fwd_im2col,      // the im2col matrix of one sample
  fwd_gemm,        // the GEMM over it
  fwd_bias,        // bias added to the output (chunk or sample)
  fwd_convgemm,    // implicit GEMM (im2row fused into the GEMM's addressing): convgemm, implicit_forward
  fwd_winograd_w,  // Winograd filter transform U = G g G^T (dtnn's own code)
  fwd_winograd,    // Winograd tiles: input transform, per-point GEMMs, output transform
  fwd_direct,      // cpu.direct's loops
  fwd_depthwise,   // cpu.depthwise's loops
  fwd_onednn,      // the oneDNN primitive (dtnn's own code)
  bwd_transpose_w,  // backward_data: weights reordered (transposed, rotated, packed) for the dx pass
  bwd_dx_gemm,      // backward_data: drows = dy . W^T
  bwd_row2im,       // backward_data: drows scatter-added into dx
  bwd_col2im,       // backward_data: dcols scatter-added into dx
  bwd_dx_convgemm,  // backward_data by implicit GEMM (convgemm's gather)
  bwd_winograd_w,   // backward_data: Winograd transform of the rotated filters (dtnn's own code)
  bwd_dx_winograd,  // backward_data by Winograd (dtnn's own code)
  bwd_dx_direct,    // backward_data by cpu.direct (dtnn's own code)
  bwd_dx_depthwise,  // backward_data by cpu.depthwise (dtnn's own code)
  bwd_dx_onednn,    // backward_data: the oneDNN primitive (dtnn's own code)
  bwd_im2row,       // backward_filter: the im2row matrix of a chunk
  bwd_im2col,       // backward_filter: the im2col matrix of one sample
  bwd_transpose_dy,  // backward_filter: dy transposed for the dW pass (convgemm NCHW)
  bwd_dw_gemm,      // backward_filter: dW += rows^T . dy
  bwd_dw_convgemm,  // backward_filter by implicit GEMM (convgemm, implicit_filter)
  bwd_dw_winograd,  // backward_filter by Winograd (dtnn's own code)
  bwd_dw_direct,    // backward_filter by cpu.direct (dtnn's own code)
  bwd_dw_depthwise,  // backward_filter by cpu.depthwise (dtnn's own code)
  bwd_dw_onednn,    // backward_filter: the oneDNN primitive (dtnn's own code)
  bwd_reshape_dw,   // backward_filter: dW reordered to the layer's layout
  bwd_bias,         // backward_filter: db = sum of dy per channel
  fwd_round_bf16,   // --dtype=bfloat16: x rounded to bf16 for the forward pass (dtnn's own code)
  bwd_round_bf16,   // --dtype=bfloat16: x or dy rounded to bf16 for a backward pass (dtnn's own code)
  fwd_reorder_act,  // x or y reordered between the layer's layout and the algorithm's (cpu.onednn_winograd)
  bwd_reorder_act,  // dy, dx or x reordered between the layer's layout and the algorithm's
  count
};

// How an op is named. phase: the JSON event's name ("im2row", "gemm"); op: PyDTNN's lower-case operation
// name ("forward_im2col"), the CSV name's suffix; type/code: the CSV's event type and code, value = layer
// id * events_of(type) + code.
struct OpInfo {
  const char* phase;
  const char* op;
  int type;
  int code;
};
const OpInfo& op_info(OpCode op);
const OpInfo& op_info(uint8_t op);  // TraceEvent::op; an unknown value gives none's entry ("?")
// Codes per layer of an op event type: PyDTNN's PYDTNN_OPS_EVENTS for 60000002, dtnn's for 60000004.
int op_events_of(int type);

constexpr int kPydtnnOpsEvent = 60000002;  // PyDTNN's PYDTNN_OPS_EVENT
constexpr int kDtnnOpsEvent = 60000004;    // dtnn's operations that PyDTNN has no code for

namespace op_trace_detail {
// This thread's target: the tracer of the pass running (null: none) and the layer id events carry.
struct Target {
  Tracer* tracer = nullptr;
  int32_t layer = -1;
};
inline thread_local Target target;
}  // namespace op_trace_detail

// Installs `tracer` (null: nothing) as this thread's op tracer until destroyed; restores the previous one.
class OpTracing {
 public:
  explicit OpTracing(Tracer* tracer) : saved_(op_trace_detail::target) {
    if (tracer) op_trace_detail::target.tracer = tracer;
  }
  ~OpTracing() { op_trace_detail::target = saved_; }
  OpTracing(const OpTracing&) = delete;
  OpTracing& operator=(const OpTracing&) = delete;

 private:
  op_trace_detail::Target saved_;
};

// The layer id op events carry until destroyed (restores the previous one); nothing when not tracing.
class OpLayer {
 public:
  explicit OpLayer(int32_t layer) {
    op_trace_detail::Target& t = op_trace_detail::target;
    if (!t.tracer) return;
    saved_ = t.layer;
    t.layer = layer;
    set_ = true;
  }
  ~OpLayer() {
    if (set_) op_trace_detail::target.layer = saved_;
  }
  OpLayer(const OpLayer&) = delete;
  OpLayer& operator=(const OpLayer&) = delete;

 private:
  int32_t saved_ = -1;
  bool set_ = false;
};

// One phase, or a sequence of back-to-back phases: `OpScope s(OpCode::fwd_im2row); ...; s.next(OpCode::fwd_gemm);
// ...` records [start, next) as im2row and [next, end of scope) as gemm, one clock read per boundary. The
// phase OpCode::none (the default: a scope whose first phase is chosen later by next()) records nothing.
// Only the thread that constructed it may call next() (inside a parallel region: thread 0, the caller).
class OpScope {
 public:
  explicit OpScope(OpCode op = OpCode::none) : tracer_(op_trace_detail::target.tracer) {
    if (!tracer_) return;
    layer_ = op_trace_detail::target.layer;
    op_ = op;
    begin_ = now_s();
  }
  void next(OpCode op) {
    if (!tracer_) return;
    const double t = now_s();
    if (op_ != OpCode::none) tracer_->add_op(layer_, static_cast<uint8_t>(op_), begin_, t);
    op_ = op;
    begin_ = t;
  }
  ~OpScope() {
    if (tracer_ && op_ != OpCode::none) tracer_->add_op(layer_, static_cast<uint8_t>(op_), begin_, now_s());
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  Tracer* tracer_;
  int32_t layer_ = -1;
  OpCode op_ = OpCode::none;
  double begin_ = 0.0;
};

}  // namespace dtnn
