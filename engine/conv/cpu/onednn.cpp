// cpu.onednn: oneDNN 2.6's convolution primitives (forward_training, backward_data, backward_weights) on
// dtnn's own tensors, both layouts, grouped and depthwise included.
// cpu.onednn_bf16: the same primitives computing in bfloat16 (--dtype=bfloat16): x, w and dy are rounded to
// bf16 (oneDNN reorders into the workspace: x and dy in their user layout, w into the primitive's blocked
// format, as for float32), products accumulate in float32, and y, dx, dw and db are written in float32, so
// the layer's interface, the master weights and everything around the convolution stay float32. oneDNN runs
// its AVX512-BF16 or AMX kernels; on a CPU without them it would emulate, which dtnn refuses
// (cpu_bf16_support() below, checked when the option is read).
//
// Activations are passed in their user layout (nhwc / nchw memory descriptors: no activation reorders);
// the weights are described to oneDNN with explicit strides over dtnn's layouts ((C/G, R, S, K) for NHWC,
// (K, C/G, R, S) for NCHW) and reordered once per call into the blocked format the primitive chose
// (format_tag::any), and the weight gradient back. Primitives, reorders, memory objects and argument maps
// are created on the first use of a problem (per thread count) and kept in a process-wide cache, so the
// batch loop only sets data handles and executes through the C API with argument lists made with the
// primitives: dtnn allocates nothing, creates no primitive (tests/train/test_no_allocation.cpp). oneDNN 2.6's
// dnnl_primitive_execute itself builds a map of its arguments per call (about 700 small allocations per
// resnet20 training step), which no API call avoids. The reordered
// weights and oneDNN's scratchpad (scratchpad_mode::user) live in the caller's workspace.
// Threads: oneDNN's OpenMP runtime follows omp_set_num_threads (cpu::set_threads).
// Tracing (trace/op_trace.h): the weight reorders (reshape_w, transpose_w, reshape_dw) and each primitive.
#include <dnnl.hpp>

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

// The data type the primitives multiply in: f32 (cpu.onednn) or bf16 (cpu.onednn_bf16).
enum class Compute { f32, bf16 };

struct Prims {
  std::string error;  // non-empty: oneDNN declined the problem
  dnnl::stream stream;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_w;
  dnnl::reorder w_to_fwd, w_to_bwd, dw_to_user;
  bool fwd_reorder = false, bwd_reorder = false, dw_reorder = false;
  memory x, y, w_user, w_fwd, w_bwd, bias, dy, dx, dw_user, dw_prim, db, scratch_f, scratch_bd, scratch_bw;
  // bf16: x and dy as the user passes them (float32), reordered into x / dy (bf16) before each primitive
  memory x_user, dy_user;
  dnnl::reorder x_to_bf16, dy_to_bf16;
  bool bf16 = false;
  // Argument lists for oneDNN's C API (dnnl_exec_arg_t: the memory objects' handles, whose data pointers
  // each call sets): the C++ API's execute(stream, unordered_map) builds a vector on every call.
  std::vector<dnnl_exec_arg_t> fwd_args, fwd_nobias_args, bd_args, bw_args, to_fwd_args, to_bwd_args, to_user_args,
      x_args, dy_args;
  int64_t ws_floats = 0;
  int64_t off_w_fwd = 0, off_w_bwd = 0, off_dw = 0, off_scratch = 0, off_db = 0, off_x = 0, off_dy = 0;
  dnnl::convolution_forward fwd_nobias;
};

struct Descs {
  memory::desc x, y, dy, dx, w_user, bias;
  dnnl::convolution_forward::primitive_desc fwd, fwd_nb;
  dnnl::convolution_backward_data::primitive_desc bd;
  dnnl::convolution_backward_weights::primitive_desc bw;
};

// The primitives' descriptors: activations in the user layout (bf16: x and dy rounded, y and dx float32),
// weights in the format oneDNN prefers (bf16 for the products, float32 for the gradient).
Descs describe(const ConvProblem& p, Compute c) {
  Descs d;
  dnnl::engine& eng = cpu_engine();
  const tag act = p.layout == Layout::nhwc ? tag::nhwc : tag::nchw;
  const dt in = c == Compute::bf16 ? dt::bf16 : dt::f32;
  d.x = memory::desc({p.n, p.c, p.h, p.w}, in, act), d.dx = memory::desc({p.n, p.c, p.h, p.w}, dt::f32, act);
  d.y = memory::desc({p.n, p.k, p.p(), p.q()}, dt::f32, act), d.dy = memory::desc({p.n, p.k, p.p(), p.q()}, in, act);
  d.w_user = user_weights(p), d.bias = memory::desc({p.k}, dt::f32, tag::x);
  const memory::desc w_any(d.w_user.dims(), in, tag::any), dw_any(d.w_user.dims(), dt::f32, tag::any);
  const memory::dims strides{p.stride_h, p.stride_w}, dil{p.dil_h - 1, p.dil_w - 1}, pad_l{p.pad_h, p.pad_w};
  // right padding that reproduces dtnn's floor output size
  const memory::dims pad_r{(p.p() - 1) * p.stride_h + (p.r - 1) * p.dil_h + 1 - p.h - p.pad_h,
                           (p.q() - 1) * p.stride_w + (p.s - 1) * p.dil_w + 1 - p.w - p.pad_w};
  // (negative when the floor drops input columns: oneDNN accepts that as cropping)
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto alg = dnnl::algorithm::convolution_direct;
  const auto train = dnnl::prop_kind::forward_training;
  d.fwd = {{train, alg, d.x, w_any, d.bias, d.y, strides, dil, pad_l, pad_r}, attr, eng};
  d.fwd_nb = {{train, alg, d.x, w_any, d.y, strides, dil, pad_l, pad_r}, attr, eng};
  d.bd = {{alg, d.dx, w_any, d.dy, strides, dil, pad_l, pad_r}, attr, eng, d.fwd};
  d.bw = {{alg, d.x, dw_any, d.bias, d.dy, strides, dil, pad_l, pad_r}, attr, eng, d.fwd};
  return d;
}

// workspace: [w_fwd][w_bwd][dw_prim][db][x bf16][dy bf16][scratchpad (the largest of the four)]
void place(Prims& pr, const Descs& d, int64_t k) {
  int64_t off = 0;
  pr.off_w_fwd = off, off += floats(d.fwd.weights_desc());
  pr.off_w_bwd = off, off += floats(d.bd.weights_desc());
  pr.off_dw = off, off += floats(d.bw.diff_weights_desc());
  pr.off_db = off, off += (k + 15) / 16 * 16;
  if (pr.bf16) {
    pr.off_x = off, off += floats(d.x);
    pr.off_dy = off, off += floats(d.dy);
  }
  pr.off_scratch = off;
  off += std::max({floats(d.fwd.scratchpad_desc()), floats(d.fwd_nb.scratchpad_desc()), floats(d.bd.scratchpad_desc()),
                   floats(d.bw.scratchpad_desc())});
  pr.ws_floats = off;
}

// Memory objects without data (each call sets the handles), the reorders and the argument lists.
void bind(Prims& pr, const Descs& d) {
  dnnl::engine& eng = cpu_engine();
  void* none = DNNL_MEMORY_NONE;
  pr.x = memory(d.x, eng, none), pr.y = memory(d.y, eng, none);
  pr.dx = memory(d.dx, eng, none), pr.dy = memory(d.dy, eng, none);
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
  if (pr.bf16) {
    pr.x_user = memory(d.dx, eng, none), pr.dy_user = memory(d.y, eng, none);  // float32, same shapes
    pr.x_to_bf16 = dnnl::reorder(pr.x_user, pr.x), pr.dy_to_bf16 = dnnl::reorder(pr.dy_user, pr.dy);
    pr.x_args = {{DNNL_ARG_FROM, pr.x_user.get()}, {DNNL_ARG_TO, pr.x.get()}};
    pr.dy_args = {{DNNL_ARG_FROM, pr.dy_user.get()}, {DNNL_ARG_TO, pr.dy.get()}};
  }
  const memory& wf = pr.fwd_reorder ? pr.w_fwd : pr.w_user;
  const memory& wb = pr.bwd_reorder ? pr.w_bwd : pr.w_user;
  const memory& dwp = pr.dw_reorder ? pr.dw_prim : pr.dw_user;
  pr.fwd_args = {{DNNL_ARG_SRC, pr.x.get()}, {DNNL_ARG_WEIGHTS, wf.get()}, {DNNL_ARG_BIAS, pr.bias.get()},
                 {DNNL_ARG_DST, pr.y.get()}, {DNNL_ARG_SCRATCHPAD, pr.scratch_f.get()}};
  pr.fwd_nobias_args = {{DNNL_ARG_SRC, pr.x.get()}, {DNNL_ARG_WEIGHTS, wf.get()}, {DNNL_ARG_DST, pr.y.get()},
                        {DNNL_ARG_SCRATCHPAD, pr.scratch_f.get()}};
  pr.bd_args = {{DNNL_ARG_DIFF_DST, pr.dy.get()}, {DNNL_ARG_WEIGHTS, wb.get()}, {DNNL_ARG_DIFF_SRC, pr.dx.get()},
                {DNNL_ARG_SCRATCHPAD, pr.scratch_bd.get()}};
  pr.bw_args = {{DNNL_ARG_SRC, pr.x.get()}, {DNNL_ARG_DIFF_DST, pr.dy.get()}, {DNNL_ARG_DIFF_WEIGHTS, dwp.get()},
                {DNNL_ARG_DIFF_BIAS, pr.db.get()}, {DNNL_ARG_SCRATCHPAD, pr.scratch_bw.get()}};
  pr.to_fwd_args = {{DNNL_ARG_FROM, pr.w_user.get()}, {DNNL_ARG_TO, pr.w_fwd.get()}};
  pr.to_bwd_args = {{DNNL_ARG_FROM, pr.w_user.get()}, {DNNL_ARG_TO, pr.w_bwd.get()}};
  pr.to_user_args = {{DNNL_ARG_FROM, pr.dw_prim.get()}, {DNNL_ARG_TO, pr.dw_user.get()}};
}

std::unique_ptr<Prims> create(const ConvProblem& p, Compute c) {
  auto pr = std::make_unique<Prims>();
  pr->bf16 = c == Compute::bf16;
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
    place(*pr, d, p.k);
    bind(*pr, d);
  } catch (const dnnl::error& e) {
    pr->error = std::string("onednn: ") + e.what();
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

// bf16 only: rounds a float32 activation (x or dy) into its bf16 memory in the workspace.
void to_bf16(Prims& pr, const dnnl::reorder& r, const std::vector<dnnl_exec_arg_t>& args, memory& from,
             const float* src, memory& to, float* dst) {
  from.set_data_handle(const_cast<float*>(src));
  to.set_data_handle(dst);
  run(pr, r, args);
}

class ConvOnednn final : public ConvAlgorithm {
 public:
  explicit ConvOnednn(Compute c) : compute_(c) {}
  std::string_view name() const override { return bf16() ? "cpu.onednn_bf16" : "cpu.onednn"; }
  // float32: its own summation orders. bf16: x, w and dy rounded to an 8-bit significand (a relative error
  // of up to 2^-9 each, so up to about 2^-8 per product); the products' errors have random signs, so the
  // error of a sum stays near 2^-8 of the sum's scale. Measured at most 3.1e-3 over the conv tests'
  // problems (tests/conv/test_conv_bf16.cpp); 2^-7 leaves room for the scale of the largest output.
  double tolerance() const override { return bf16() ? 1.0 / 128 : 1e-4; }

  Support supports(const ConvProblem& p) const override {
    if (bf16()) {
      const std::string why = cpu_bf16_support();
      if (!why.empty()) return Support::no("cpu.onednn_bf16: " + why);
    }
    const Prims& pr = prims(p, compute_);
    return pr.error.empty() ? Support::yes() : Support::no(pr.error);
  }

  int64_t workspace_floats(const ConvProblem& p) const override { return prims(p, compute_).ws_floats; }
  int64_t op_events(const ConvProblem&, ConvDir) const override { return bf16() ? 3 : 2; }

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
    if (bf16()) {
      op.next(OpCode::fwd_round_bf16);
      to_bf16(pr, pr.x_to_bf16, pr.x_args, pr.x_user, x, pr.x, ws + pr.off_x);
    } else {
      pr.x.set_data_handle(const_cast<float*>(x));
    }
    op.next(OpCode::fwd_onednn);
    pr.y.set_data_handle(y);
    if (bias) {
      pr.bias.set_data_handle(const_cast<float*>(bias));
      run(pr, pr.fwd, pr.fwd_args);
    } else {
      run(pr, pr.fwd_nobias, pr.fwd_nobias_args);
    }
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
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
    set_dy(pr, dy, ws, op);
    op.next(OpCode::bwd_dx_onednn);
    pr.dx.set_data_handle(dx);
    run(pr, pr.bwd_data, pr.bd_args);
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    Prims& pr = prims(p, compute_);
    DTNN_CHECK(pr.error.empty(), pr.error);
    OpScope op;
    if (bf16()) {
      op.next(OpCode::bwd_round_bf16);
      to_bf16(pr, pr.x_to_bf16, pr.x_args, pr.x_user, x, pr.x, ws + pr.off_x);
    } else {
      pr.x.set_data_handle(const_cast<float*>(x));
    }
    set_dy(pr, dy, ws, op);
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
  bool bf16() const { return compute_ == Compute::bf16; }
  // dy for a backward primitive: the caller's float32 array, or its bf16 rounding in the workspace.
  void set_dy(Prims& pr, const float* dy, float* ws, OpScope& op) const {
    if (!bf16()) {
      pr.dy.set_data_handle(const_cast<float*>(dy));
      return;
    }
    op.next(OpCode::bwd_round_bf16);
    to_bf16(pr, pr.dy_to_bf16, pr.dy_args, pr.dy_user, dy, pr.dy, ws + pr.off_dy);
  }

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
