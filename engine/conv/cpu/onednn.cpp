// cpu.onednn: oneDNN 2.6's convolution primitives (forward_training, backward_data, backward_weights) on
// dtnn's own tensors, both layouts, grouped and depthwise included.
// cpu.onednn_bf16: the same primitives computing in bfloat16 (--dtype=bfloat16): x, w and dy are rounded to
// bf16 (oneDNN reorders into the workspace: x and dy in their user layout, w into the primitive's blocked
// format, as for float32), products accumulate in float32, and y, dx, dw and db are written in float32, so
// the layer's interface, the master weights and everything around the convolution stay float32. oneDNN runs
// its AVX512-BF16 or AMX kernels; on a CPU without them it would emulate, which dtnn refuses
// (cpu_bf16_support() below, checked when the option is read).
// cpu.onednn_winograd: oneDNN's float32 Winograd F(4x4,3x3) (jit_wino_4x3, AVX-512 only; 3x3, stride 1,
// channels in multiples of 16). Its kernels read and write activations only in oneDNN's blocked layout
// (nChw16c), so x, y, dy and dx are reordered between the caller's layout and the workspace around each
// primitive; measured worth it from 32 channels on (results/baselines/conv_cpu_2core.md).
//
// Activations are passed in their user layout where the primitive accepts it (cpu.onednn: nhwc / nchw
// memory descriptors, no activation reorders); otherwise they are staged (Staged below): reordered into the
// workspace before the primitive reads them, or written there and reordered out. The weights are described
// to oneDNN with explicit strides over dtnn's layouts ((C/G, R, S, K) for NHWC, (K, C/G, R, S) for NCHW) and
// reordered once per call into the blocked format the primitive chose (format_tag::any), and the weight
// gradient back. Primitives, reorders, memory objects and argument maps
// are created on the first use of a problem (per thread count) and kept in a process-wide cache, so the
// batch loop only sets data handles and executes through the C API with argument lists made with the
// primitives: dtnn allocates nothing, creates no primitive (tests/train/test_no_allocation.cpp). oneDNN 2.6's
// dnnl_primitive_execute itself builds a map of its arguments per call (about 700 small allocations per
// resnet20 training step), which no API call avoids. The reordered weights, staged activations and oneDNN's
// scratchpad (scratchpad_mode::user) live in the caller's workspace.
// Threads: oneDNN's OpenMP runtime follows omp_set_num_threads (cpu::set_threads).
// Tracing (trace/op_trace.h): the weight reorders (reshape_w, transpose_w, reshape_dw), the activations'
// (round_bf16, reorder_act) and each primitive.
#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cpu/blas.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

int64_t floats(const memory::desc& d) { return static_cast<int64_t>((d.get_size() + 63) / 64 * 16); }

// The weights as oneDNN's logical dims ({K, C, R, S} or {G, K/G, C/G, R, S}) with dtnn's strides.
memory::desc user_weights(const ConvProblem& p) {
  const memory::dim G = p.groups, K = p.k, C = p.c / p.groups, R = p.r, S = p.s, Kg = p.k / p.groups;
  if (p.layout == Layout::nhwc) {  // (C/G, R, S, K), k = g*Kg + kk
    if (G == 1) return memory::desc({K, C, R, S}, dt::f32, memory::dims{1, R * S * K, S * K, K});
    return memory::desc({G, Kg, C, R, S}, dt::f32, memory::dims{Kg, 1, R * S * K, S * K, K});
  }
  if (G == 1) return memory::desc({K, C, R, S}, dt::f32, memory::dims{C * R * S, R * S, S, 1});
  return memory::desc({G, Kg, C, R, S}, dt::f32, memory::dims{Kg * C * R * S, C * R * S, R * S, S, 1});
}

// How the primitives compute: float32 direct (cpu.onednn), bfloat16 products (cpu.onednn_bf16) or float32
// Winograd (cpu.onednn_winograd).
enum class Compute { f32, bf16, winograd };

// One activation as a primitive reads or writes it. When the primitive's format is the caller's (on ==
// false) `prim` is bound to the caller's array; otherwise `prim` lives in the workspace at `off` and
// `reorder` copies the caller's array in (inputs) or the result out (outputs).
struct Staged {
  bool on = false, input = true;
  memory user, prim;
  dnnl::reorder reorder;
  std::vector<dnnl_exec_arg_t> args;
  int64_t off = 0;
};

struct Prims {
  std::string error;  // non-empty: oneDNN declined the problem
  dnnl::stream stream;
  dnnl::convolution_forward fwd, fwd_nobias;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_w;
  dnnl::reorder w_to_fwd, w_to_bwd, dw_to_user;
  bool fwd_reorder = false, bwd_reorder = false, dw_reorder = false;
  memory w_user, w_fwd, w_bwd, bias, dw_user, dw_prim, db, scratch_f, scratch_bd, scratch_bw;
  // the activations of each primitive: forward's x and y, backward_data's dy and dx, backward_weights' x, dy
  Staged x_f, y_f, dy_d, dx_d, x_w, dy_w;
  bool shared_dy = false;  // dy_w and dy_d staged alike into one slot: backward() stages dy once
  OpCode stage_fwd = OpCode::fwd_reorder_act, stage_bwd = OpCode::bwd_reorder_act;  // bf16: round_bf16
  // Argument lists for oneDNN's C API (dnnl_exec_arg_t: the memory objects' handles, whose data pointers
  // each call sets): the C++ API's execute(stream, unordered_map) builds a vector on every call.
  std::vector<dnnl_exec_arg_t> fwd_args, fwd_nobias_args, bd_args, bw_args, to_fwd_args, to_bwd_args, to_user_args;
  int64_t ws_floats = 0;
  int64_t off_w_fwd = 0, off_w_bwd = 0, off_dw = 0, off_scratch = 0, off_db = 0;
};

struct Descs {
  memory::desc in, out, w_user, bias;  // x / dx and y / dy as the caller holds them: float32, its layout
  dnnl::convolution_forward::primitive_desc fwd, fwd_nb;
  dnnl::convolution_backward_data::primitive_desc bd;
  dnnl::convolution_backward_weights::primitive_desc bw;
};

// The primitives' descriptors: activations in the user layout (bf16: x and dy rounded, y and dx float32;
// Winograd: the format oneDNN chooses), weights in the format oneDNN prefers (bf16 for the products, float32
// for the gradient).
Descs describe(const ConvProblem& p, Compute c) {
  Descs d;
  dnnl::engine& eng = cpu_engine();
  const tag user = p.layout == Layout::nhwc ? tag::nhwc : tag::nchw;
  const tag act = c == Compute::winograd ? tag::any : user;
  const dt in = c == Compute::bf16 ? dt::bf16 : dt::f32;
  const memory::dims xd{p.n, p.c, p.h, p.w}, yd{p.n, p.k, p.p(), p.q()};
  d.in = memory::desc(xd, dt::f32, user), d.out = memory::desc(yd, dt::f32, user);
  const memory::desc x(xd, in, act), dx(xd, dt::f32, act), y(yd, dt::f32, act), dy(yd, in, act);
  d.w_user = user_weights(p), d.bias = memory::desc({p.k}, dt::f32, tag::x);
  const memory::desc w_any(d.w_user.dims(), in, tag::any), dw_any(d.w_user.dims(), dt::f32, tag::any);
  const memory::dims strides{p.stride_h, p.stride_w}, dil{p.dil_h - 1, p.dil_w - 1}, pad_l{p.pad_h, p.pad_w};
  // right padding that reproduces dtnn's floor output size
  const memory::dims pad_r{(p.p() - 1) * p.stride_h + (p.r - 1) * p.dil_h + 1 - p.h - p.pad_h,
                           (p.q() - 1) * p.stride_w + (p.s - 1) * p.dil_w + 1 - p.w - p.pad_w};
  // (negative when the floor drops input columns: oneDNN accepts that as cropping)
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto alg =
      c == Compute::winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  const auto train = dnnl::prop_kind::forward_training;
  d.fwd = {{train, alg, x, w_any, d.bias, y, strides, dil, pad_l, pad_r}, attr, eng};
  d.fwd_nb = {{train, alg, x, w_any, y, strides, dil, pad_l, pad_r}, attr, eng};
  d.bd = {{alg, dx, w_any, dy, strides, dil, pad_l, pad_r}, attr, eng, d.fwd};
  d.bw = {{alg, x, dw_any, d.bias, dy, strides, dil, pad_l, pad_r}, attr, eng, d.fwd};
  return d;
}

// An activation between the caller's descriptor and the primitive's (see Staged).
Staged stage(const memory::desc& user, const memory::desc& prim, bool input) {
  dnnl::engine& eng = cpu_engine();
  void* none = DNNL_MEMORY_NONE;
  Staged s;
  s.input = input;
  s.on = prim != user;
  s.prim = memory(prim, eng, none);
  if (!s.on) return s;
  s.user = memory(user, eng, none);
  const memory& from = input ? s.user : s.prim;
  const memory& to = input ? s.prim : s.user;
  s.reorder = dnnl::reorder(from, to);
  s.args = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
  return s;
}

// workspace: [w_fwd][w_bwd][dw_prim][db][x or dx staged][y or dy staged][scratchpad (the largest of the four)].
// One primitive runs at a time, so x (forward, backward_weights) and dx (backward_data) share a slot, and
// y (forward) with dy (backward_data, backward_weights).
void place(Prims& pr, const Descs& d, int64_t k) {
  int64_t off = 0;
  pr.off_w_fwd = off, off += floats(d.fwd.weights_desc());
  pr.off_w_bwd = off, off += floats(d.bd.weights_desc());
  pr.off_dw = off, off += floats(d.bw.diff_weights_desc());
  pr.off_db = off, off += (k + 15) / 16 * 16;
  int64_t slot = 0;
  for (Staged* s : {&pr.x_f, &pr.dx_d, &pr.x_w})
    if (s->on) s->off = off, slot = std::max(slot, floats(s->prim.get_desc()));
  off += slot, slot = 0;
  for (Staged* s : {&pr.y_f, &pr.dy_d, &pr.dy_w})
    if (s->on) s->off = off, slot = std::max(slot, floats(s->prim.get_desc()));
  off += slot;
  pr.shared_dy = pr.dy_d.on && pr.dy_w.on && pr.dy_d.off == pr.dy_w.off &&
                 pr.dy_d.prim.get_desc() == pr.dy_w.prim.get_desc();
  pr.off_scratch = off;
  off += std::max({floats(d.fwd.scratchpad_desc()), floats(d.fwd_nb.scratchpad_desc()), floats(d.bd.scratchpad_desc()),
                   floats(d.bw.scratchpad_desc())});
  pr.ws_floats = off;
}

// Memory objects without data (each call sets the handles), the reorders and the argument lists.
void bind(Prims& pr, const Descs& d) {
  dnnl::engine& eng = cpu_engine();
  void* none = DNNL_MEMORY_NONE;
  pr.x_f = stage(d.in, d.fwd.src_desc(), true), pr.y_f = stage(d.out, d.fwd.dst_desc(), false);
  pr.dy_d = stage(d.out, d.bd.diff_dst_desc(), true), pr.dx_d = stage(d.in, d.bd.diff_src_desc(), false);
  pr.x_w = stage(d.in, d.bw.src_desc(), true), pr.dy_w = stage(d.out, d.bw.diff_dst_desc(), true);
  pr.w_user = memory(d.w_user, eng, none), pr.dw_user = memory(d.w_user, eng, none);
  pr.w_fwd = memory(d.fwd.weights_desc(), eng, none), pr.w_bwd = memory(d.bd.weights_desc(), eng, none);
  pr.dw_prim = memory(d.bw.diff_weights_desc(), eng, none);
  pr.bias = memory(d.bias, eng, none), pr.db = memory(d.bias, eng, none);
  pr.scratch_f = memory(d.fwd.scratchpad_desc(), eng, none);
  pr.scratch_bd = memory(d.bd.scratchpad_desc(), eng, none);
  pr.scratch_bw = memory(d.bw.scratchpad_desc(), eng, none);
  pr.fwd_reorder = d.fwd.weights_desc() != d.w_user;
  pr.bwd_reorder = d.bd.weights_desc() != d.w_user;
  pr.dw_reorder = d.bw.diff_weights_desc() != d.w_user;
  if (pr.fwd_reorder) pr.w_to_fwd = dnnl::reorder(pr.w_user, pr.w_fwd);
  if (pr.bwd_reorder) pr.w_to_bwd = dnnl::reorder(pr.w_user, pr.w_bwd);
  if (pr.dw_reorder) pr.dw_to_user = dnnl::reorder(pr.dw_prim, pr.dw_user);
  const memory& wf = pr.fwd_reorder ? pr.w_fwd : pr.w_user;
  const memory& wb = pr.bwd_reorder ? pr.w_bwd : pr.w_user;
  const memory& dwp = pr.dw_reorder ? pr.dw_prim : pr.dw_user;
  pr.fwd_args = {{DNNL_ARG_SRC, pr.x_f.prim.get()}, {DNNL_ARG_WEIGHTS, wf.get()}, {DNNL_ARG_BIAS, pr.bias.get()},
                 {DNNL_ARG_DST, pr.y_f.prim.get()}, {DNNL_ARG_SCRATCHPAD, pr.scratch_f.get()}};
  pr.fwd_nobias_args = {{DNNL_ARG_SRC, pr.x_f.prim.get()}, {DNNL_ARG_WEIGHTS, wf.get()},
                        {DNNL_ARG_DST, pr.y_f.prim.get()}, {DNNL_ARG_SCRATCHPAD, pr.scratch_f.get()}};
  pr.bd_args = {{DNNL_ARG_DIFF_DST, pr.dy_d.prim.get()}, {DNNL_ARG_WEIGHTS, wb.get()},
                {DNNL_ARG_DIFF_SRC, pr.dx_d.prim.get()}, {DNNL_ARG_SCRATCHPAD, pr.scratch_bd.get()}};
  pr.bw_args = {{DNNL_ARG_SRC, pr.x_w.prim.get()}, {DNNL_ARG_DIFF_DST, pr.dy_w.prim.get()},
                {DNNL_ARG_DIFF_WEIGHTS, dwp.get()}, {DNNL_ARG_DIFF_BIAS, pr.db.get()},
                {DNNL_ARG_SCRATCHPAD, pr.scratch_bw.get()}};
  pr.to_fwd_args = {{DNNL_ARG_FROM, pr.w_user.get()}, {DNNL_ARG_TO, pr.w_fwd.get()}};
  pr.to_bwd_args = {{DNNL_ARG_FROM, pr.w_user.get()}, {DNNL_ARG_TO, pr.w_bwd.get()}};
  pr.to_user_args = {{DNNL_ARG_FROM, pr.dw_prim.get()}, {DNNL_ARG_TO, pr.dw_user.get()}};
}

const char* compute_name(Compute c) {
  return c == Compute::bf16 ? "cpu.onednn_bf16" : c == Compute::winograd ? "cpu.onednn_winograd" : "cpu.onednn";
}

std::unique_ptr<Prims> create(const ConvProblem& p, Compute c) {
  auto pr = std::make_unique<Prims>();
  if (c == Compute::bf16) pr->stage_fwd = OpCode::fwd_round_bf16, pr->stage_bwd = OpCode::bwd_round_bf16;
  try {
    pr->stream = dnnl::stream(cpu_engine());
    const Descs d = describe(p, c);
    if (d.fwd.weights_desc() != d.fwd_nb.weights_desc()) {
      pr->error = "onednn: the bias and no-bias forward primitives want different weight formats";
      return pr;
    }
    pr->fwd = dnnl::convolution_forward(d.fwd);
    pr->fwd_nobias = dnnl::convolution_forward(d.fwd_nb);
    pr->bwd_data = dnnl::convolution_backward_data(d.bd);
    pr->bwd_w = dnnl::convolution_backward_weights(d.bw);
    bind(*pr, d);
    place(*pr, d, p.k);
  } catch (const dnnl::error& e) {
    pr->error = c == Compute::winograd
                    ? std::string(compute_name(c)) +
                          ": oneDNN has no Winograd kernel for this problem here (it needs AVX-512, a 3x3 filter, "
                          "stride 1, no groups and channels in multiples of 16: " + e.what() + ")"
                    : std::string("onednn: ") + e.what();
  }
  return pr;
}

// One entry per (problem, threads, compute type): oneDNN may pick another implementation for another thread
// count. The key is numbers, not ConvProblem::str(): a lookup runs on every call and must not allocate.
using PrimsKey = std::array<int64_t, 17>;
Prims& prims(const ConvProblem& p, Compute c) {
  static std::mutex mutex;
  static std::map<PrimsKey, std::unique_ptr<Prims>> cache;
  const PrimsKey key = {p.n,        p.c,        p.h,     p.w,     p.k,     p.r,     p.s,
                        p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w, p.groups,
                        static_cast<int64_t>(p.layout), cpu::threads(), static_cast<int64_t>(c)};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, create(p, c)).first;
  return *it->second;
}

// Executes through the C API with the prepared argument list, then waits (the CPU stream is in order).
void run(Prims& pr, const dnnl::primitive& prim, const std::vector<dnnl_exec_arg_t>& args) {
  const dnnl_status_t status =
      dnnl_primitive_execute(prim.get(), pr.stream.get(), static_cast<int>(args.size()), args.data());
  DTNN_CHECK(status == dnnl_success, "onednn: primitive execution failed (status ", static_cast<int>(status), ")");
  DTNN_CHECK(dnnl_stream_wait(pr.stream.get()) == dnnl_success, "onednn: waiting for the stream failed");
}

// Binds an input activation for its primitive: the caller's array itself, or its staged copy (reordered now).
void stage_in(Prims& pr, Staged& s, const float* user, float* ws, OpCode code, OpScope& op) {
  if (!s.on) {
    s.prim.set_data_handle(const_cast<float*>(user));
    return;
  }
  op.next(code);
  s.user.set_data_handle(const_cast<float*>(user));
  s.prim.set_data_handle(ws + s.off);
  run(pr, s.reorder, s.args);
}

// Binds an output activation: the caller's array itself, or a workspace copy that stage_out reorders into it.
void bind_out(Staged& s, float* user, float* ws) {
  s.prim.set_data_handle(s.on ? ws + s.off : user);
  if (s.on) s.user.set_data_handle(user);
}

void stage_out(Prims& pr, Staged& s, OpCode code, OpScope& op) {
  if (!s.on) return;
  op.next(code);
  run(pr, s.reorder, s.args);
}

class ConvOnednn final : public ConvAlgorithm {
 public:
  explicit ConvOnednn(Compute c) : compute_(c) {}
  std::string_view name() const override { return compute_name(compute_); }
  // float32: its own summation orders (Winograd: also the transforms' rounding, bounded by the same 1e-4 as
  // dtnn's own F(4x4,3x3), tests/conv/test_conv_algorithms.cpp). bf16: x, w and dy rounded to an 8-bit
  // significand (a relative error of up to 2^-9 each, so up to about 2^-8 per product); the products' errors
  // have random signs, so the error of a sum stays near 2^-8 of the sum's scale. Measured at most 3.1e-3 over
  // the conv tests' problems (tests/conv/test_conv_bf16.cpp); 2^-7 leaves room for the scale of the largest
  // output.
  double tolerance() const override { return compute_ == Compute::bf16 ? 1.0 / 128 : 1e-4; }

  Support supports(const ConvProblem& p) const override {
    // oneDNN would also take other channel counts (padded to 16 in its blocked layout), but its backward
    // weights pass crashed on them (oneDNN 2.6.3: C = 1, K = 4); dtnn asks only for what it has measured.
    if (compute_ == Compute::winograd && (p.c % 16 || p.k % 16 || p.groups != 1))
      return Support::no("cpu.onednn_winograd: only for channels and filters in multiples of 16, no groups");
    // (an empty batch raised SIGFPE inside oneDNN 2.6.3's Winograd primitives)
    if (compute_ == Compute::winograd && p.n == 0) return Support::no("cpu.onednn_winograd: an empty batch");
    if (compute_ == Compute::bf16) {
      const std::string why = cpu_bf16_support();
      if (!why.empty()) return Support::no("cpu.onednn_bf16: " + why);
    }
    const Prims& pr = prims(p, compute_);
    return pr.error.empty() ? Support::yes() : Support::no(pr.error);
  }

  int64_t workspace_floats(const ConvProblem& p) const override { return prims(p, compute_).ws_floats; }
  // a weight reorder, up to two staged activations, the primitive (and the weight gradient's reorder)
  int64_t op_events(const ConvProblem&, ConvDir) const override { return compute_ == Compute::f32 ? 2 : 4; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    Prims& pr = prims(p, compute_);
    DTNN_CHECK(pr.error.empty(), pr.error);
    pr.w_user.set_data_handle(const_cast<float*>(w));
    pr.scratch_f.set_data_handle(ws + pr.off_scratch);
    OpScope op;
    if (pr.fwd_reorder) {
      op.next(OpCode::fwd_reshape_w);
      pr.w_fwd.set_data_handle(ws + pr.off_w_fwd);
      run(pr, pr.w_to_fwd, pr.to_fwd_args);
    }
    stage_in(pr, pr.x_f, x, ws, pr.stage_fwd, op);
    bind_out(pr.y_f, y, ws);
    op.next(OpCode::fwd_onednn);
    if (bias) {
      pr.bias.set_data_handle(const_cast<float*>(bias));
      run(pr, pr.fwd, pr.fwd_args);
    } else {
      run(pr, pr.fwd_nobias, pr.fwd_nobias_args);
    }
    stage_out(pr, pr.y_f, OpCode::fwd_reorder_act, op);
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    run_backward_data(p, dy, w, dx, ws, false);
  }

  // backward_filter stages dy where backward_data reads it (the same slot and format: shared_dy), so the
  // pair reorders or rounds dy once.
  void backward(const ConvProblem& p, const float* x, const float* dy, const float* w, float* dx, float* dw,
                float* db, float* ws) const override {
    backward_filter(p, x, dy, dw, db, ws);
    if (dx) run_backward_data(p, dy, w, dx, ws, prims(p, compute_).shared_dy);
  }

  // dy_staged: dy is already in its workspace slot, as the backward_filter just before left it.
  void run_backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws,
                         bool dy_staged) const {
    Prims& pr = prims(p, compute_);
    DTNN_CHECK(pr.error.empty(), pr.error);
    pr.w_user.set_data_handle(const_cast<float*>(w));
    pr.scratch_bd.set_data_handle(ws + pr.off_scratch);
    OpScope op;
    if (pr.bwd_reorder) {
      op.next(OpCode::bwd_transpose_w);
      pr.w_bwd.set_data_handle(ws + pr.off_w_bwd);
      run(pr, pr.w_to_bwd, pr.to_bwd_args);
    }
    if (dy_staged)
      pr.dy_d.prim.set_data_handle(ws + pr.dy_d.off);
    else
      stage_in(pr, pr.dy_d, dy, ws, pr.stage_bwd, op);
    bind_out(pr.dx_d, dx, ws);
    op.next(OpCode::bwd_dx_onednn);
    run(pr, pr.bwd_data, pr.bd_args);
    stage_out(pr, pr.dx_d, OpCode::bwd_reorder_act, op);
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    Prims& pr = prims(p, compute_);
    DTNN_CHECK(pr.error.empty(), pr.error);
    OpScope op;
    stage_in(pr, pr.x_w, x, ws, pr.stage_bwd, op);
    stage_in(pr, pr.dy_w, dy, ws, pr.stage_bwd, op);
    pr.dw_user.set_data_handle(dw);
    pr.dw_prim.set_data_handle(ws + pr.off_dw);
    pr.db.set_data_handle(db ? db : ws + pr.off_db);
    pr.scratch_bw.set_data_handle(ws + pr.off_scratch);
    op.next(OpCode::bwd_dw_onednn);  // db too: the primitive computes it
    run(pr, pr.bwd_w, pr.bw_args);
    if (pr.dw_reorder) {
      op.next(OpCode::bwd_reshape_dw);
      run(pr, pr.dw_to_user, pr.to_user_args);
    }
  }

 private:
  Compute compute_;
};

}  // namespace

const ConvAlgorithm& conv_onednn() {
  static const ConvOnednn algo(Compute::f32);
  return algo;
}

const ConvAlgorithm& conv_onednn_bf16() {
  static const ConvOnednn algo(Compute::bf16);
  return algo;
}

const ConvAlgorithm& conv_onednn_winograd() {
  static const ConvOnednn algo(Compute::winograd);
  return algo;
}

std::string cpu_bf16_support() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  if ((isa & bf16) == bf16) return {};
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string capped = cap && *cap ? std::string(", capped by ONEDNN_MAX_CPU_ISA=") + cap : "";
  return "this CPU has neither AVX512-BF16 nor AMX-BF16 (oneDNN's effective ISA: " + onednn_isa_name() + capped +
         "), and dtnn does not emulate bfloat16";
}

std::string onednn_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other (" + std::to_string(static_cast<unsigned>(dnnl::get_effective_cpu_isa())) + ")";
  }
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace dtnn
