// cpu.onednn: oneDNN 2.6's convolution primitives (forward_training, backward_data, backward_weights) on
// dtnn's own tensors, both layouts, grouped and depthwise included.
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

struct Prims {
  std::string error;  // non-empty: oneDNN declined the problem
  dnnl::stream stream;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_w;
  dnnl::reorder w_to_fwd, w_to_bwd, dw_to_user;
  bool fwd_reorder = false, bwd_reorder = false, dw_reorder = false;
  memory x, y, w_user, w_fwd, w_bwd, bias, dy, dx, dw_user, dw_prim, db, scratch_f, scratch_bd, scratch_bw;
  // Argument lists for oneDNN's C API (dnnl_exec_arg_t: the memory objects' handles, whose data pointers
  // each call sets): the C++ API's execute(stream, unordered_map) builds a vector on every call.
  std::vector<dnnl_exec_arg_t> fwd_args, fwd_nobias_args, bd_args, bw_args, to_fwd_args, to_bwd_args, to_user_args;
  int64_t ws_floats = 0;
  int64_t off_w_fwd = 0, off_w_bwd = 0, off_dw = 0, off_scratch = 0, off_db = 0;
  dnnl::convolution_forward fwd_nobias;
};

std::unique_ptr<Prims> create(const ConvProblem& p) {
  auto pr = std::make_unique<Prims>();
  try {
    dnnl::engine& eng = cpu_engine();
    pr->stream = dnnl::stream(eng);
    const tag act = p.layout == Layout::nhwc ? tag::nhwc : tag::nchw;
    const memory::desc x_md({p.n, p.c, p.h, p.w}, dt::f32, act), y_md({p.n, p.k, p.p(), p.q()}, dt::f32, act);
    const memory::desc wu_md = user_weights(p), b_md({p.k}, dt::f32, tag::x);
    const memory::desc w_any(wu_md.dims(), dt::f32, tag::any);
    const memory::dims strides{p.stride_h, p.stride_w}, dil{p.dil_h - 1, p.dil_w - 1}, pad_l{p.pad_h, p.pad_w};
    // right padding that reproduces dtnn's floor output size
    const memory::dims pad_r{(p.p() - 1) * p.stride_h + (p.r - 1) * p.dil_h + 1 - p.h - p.pad_h,
                             (p.q() - 1) * p.stride_w + (p.s - 1) * p.dil_w + 1 - p.w - p.pad_w};
    // (negative when the floor drops input columns: oneDNN accepts that as cropping)
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc fpd(
        {dnnl::prop_kind::forward_training, alg, x_md, w_any, b_md, y_md, strides, dil, pad_l, pad_r}, attr, eng);
    dnnl::convolution_forward::primitive_desc fpd_nb(
        {dnnl::prop_kind::forward_training, alg, x_md, w_any, y_md, strides, dil, pad_l, pad_r}, attr, eng);
    dnnl::convolution_backward_data::primitive_desc bdpd({alg, x_md, w_any, y_md, strides, dil, pad_l, pad_r}, attr,
                                                         eng, fpd);
    dnnl::convolution_backward_weights::primitive_desc bwpd({alg, x_md, w_any, b_md, y_md, strides, dil, pad_l, pad_r},
                                                            attr, eng, fpd);
    if (fpd.weights_desc() != fpd_nb.weights_desc()) {
      pr->error = "onednn: the bias and no-bias forward primitives want different weight formats";
      return pr;
    }
    pr->fwd = dnnl::convolution_forward(fpd);
    pr->fwd_nobias = dnnl::convolution_forward(fpd_nb);
    pr->bwd_data = dnnl::convolution_backward_data(bdpd);
    pr->bwd_w = dnnl::convolution_backward_weights(bwpd);
    // workspace: [w_fwd][w_bwd][dw_prim][db][scratchpad (the largest of the three)]
    int64_t off = 0;
    pr->off_w_fwd = off, off += floats(fpd.weights_desc());
    pr->off_w_bwd = off, off += floats(bdpd.weights_desc());
    pr->off_dw = off, off += floats(bwpd.diff_weights_desc());
    pr->off_db = off, off += (p.k + 15) / 16 * 16;
    pr->off_scratch = off;
    off += std::max({floats(fpd.scratchpad_desc()), floats(fpd_nb.scratchpad_desc()), floats(bdpd.scratchpad_desc()),
                     floats(bwpd.scratchpad_desc())});
    pr->ws_floats = off;
    void* none = DNNL_MEMORY_NONE;
    pr->x = memory(x_md, eng, none), pr->y = memory(y_md, eng, none);
    pr->dx = memory(x_md, eng, none), pr->dy = memory(y_md, eng, none);
    pr->w_user = memory(wu_md, eng, none), pr->dw_user = memory(wu_md, eng, none);
    pr->w_fwd = memory(fpd.weights_desc(), eng, none), pr->w_bwd = memory(bdpd.weights_desc(), eng, none);
    pr->dw_prim = memory(bwpd.diff_weights_desc(), eng, none);
    pr->bias = memory(b_md, eng, none), pr->db = memory(b_md, eng, none);
    pr->scratch_f = memory(fpd.scratchpad_desc(), eng, none);
    pr->scratch_bd = memory(bdpd.scratchpad_desc(), eng, none);
    pr->scratch_bw = memory(bwpd.scratchpad_desc(), eng, none);
    pr->fwd_reorder = fpd.weights_desc() != wu_md;
    pr->bwd_reorder = bdpd.weights_desc() != wu_md;
    pr->dw_reorder = bwpd.diff_weights_desc() != wu_md;
    if (pr->fwd_reorder) pr->w_to_fwd = dnnl::reorder(pr->w_user, pr->w_fwd);
    if (pr->bwd_reorder) pr->w_to_bwd = dnnl::reorder(pr->w_user, pr->w_bwd);
    if (pr->dw_reorder) pr->dw_to_user = dnnl::reorder(pr->dw_prim, pr->dw_user);
    const memory& wf = pr->fwd_reorder ? pr->w_fwd : pr->w_user;
    const memory& wb = pr->bwd_reorder ? pr->w_bwd : pr->w_user;
    const memory& dwp = pr->dw_reorder ? pr->dw_prim : pr->dw_user;
    pr->fwd_args = {{DNNL_ARG_SRC, pr->x.get()}, {DNNL_ARG_WEIGHTS, wf.get()}, {DNNL_ARG_BIAS, pr->bias.get()},
                    {DNNL_ARG_DST, pr->y.get()}, {DNNL_ARG_SCRATCHPAD, pr->scratch_f.get()}};
    pr->fwd_nobias_args = {{DNNL_ARG_SRC, pr->x.get()}, {DNNL_ARG_WEIGHTS, wf.get()}, {DNNL_ARG_DST, pr->y.get()},
                           {DNNL_ARG_SCRATCHPAD, pr->scratch_f.get()}};
    pr->bd_args = {{DNNL_ARG_DIFF_DST, pr->dy.get()}, {DNNL_ARG_WEIGHTS, wb.get()}, {DNNL_ARG_DIFF_SRC, pr->dx.get()},
                   {DNNL_ARG_SCRATCHPAD, pr->scratch_bd.get()}};
    pr->bw_args = {{DNNL_ARG_SRC, pr->x.get()}, {DNNL_ARG_DIFF_DST, pr->dy.get()}, {DNNL_ARG_DIFF_WEIGHTS, dwp.get()},
                   {DNNL_ARG_DIFF_BIAS, pr->db.get()}, {DNNL_ARG_SCRATCHPAD, pr->scratch_bw.get()}};
    pr->to_fwd_args = {{DNNL_ARG_FROM, pr->w_user.get()}, {DNNL_ARG_TO, pr->w_fwd.get()}};
    pr->to_bwd_args = {{DNNL_ARG_FROM, pr->w_user.get()}, {DNNL_ARG_TO, pr->w_bwd.get()}};
    pr->to_user_args = {{DNNL_ARG_FROM, pr->dw_prim.get()}, {DNNL_ARG_TO, pr->dw_user.get()}};
  } catch (const dnnl::error& e) {
    pr->error = std::string("onednn: ") + e.what();
  }
  return pr;
}

// One entry per (problem, threads): oneDNN may pick another implementation for another thread count. The
// key is numbers, not ConvProblem::str(): a lookup runs on every call and must not allocate.
using PrimsKey = std::array<int64_t, 16>;
Prims& prims(const ConvProblem& p) {
  static std::mutex mutex;
  static std::map<PrimsKey, std::unique_ptr<Prims>> cache;
  const PrimsKey key = {p.n,        p.c,        p.h,     p.w,     p.k,     p.r,     p.s,
                        p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w, p.groups,
                        static_cast<int64_t>(p.layout), cpu::threads()};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, create(p)).first;
  return *it->second;
}

// Executes through the C API with the prepared argument list, then waits (the CPU stream is in order).
void run(Prims& pr, const dnnl::primitive& prim, const std::vector<dnnl_exec_arg_t>& args) {
  const dnnl_status_t status =
      dnnl_primitive_execute(prim.get(), pr.stream.get(), static_cast<int>(args.size()), args.data());
  DTNN_CHECK(status == dnnl_success, "onednn: primitive execution failed (status ", static_cast<int>(status), ")");
  DTNN_CHECK(dnnl_stream_wait(pr.stream.get()) == dnnl_success, "onednn: waiting for the stream failed");
}

class ConvOnednn final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.onednn"; }
  double tolerance() const override { return 1e-4; }  // its own summation orders

  Support supports(const ConvProblem& p) const override {
    const Prims& pr = prims(p);
    return pr.error.empty() ? Support::yes() : Support::no(pr.error);
  }

  int64_t workspace_floats(const ConvProblem& p) const override { return prims(p).ws_floats; }
  int64_t op_events(const ConvProblem&, ConvDir) const override { return 2; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    Prims& pr = prims(p);
    DTNN_CHECK(pr.error.empty(), pr.error);
    pr.w_user.set_data_handle(const_cast<float*>(w));
    pr.scratch_f.set_data_handle(ws + pr.off_scratch);
    OpScope op;
    if (pr.fwd_reorder) {
      op.next(OpCode::fwd_reshape_w);
      pr.w_fwd.set_data_handle(ws + pr.off_w_fwd);
      run(pr, pr.w_to_fwd, pr.to_fwd_args);
    }
    op.next(OpCode::fwd_onednn);
    pr.x.set_data_handle(const_cast<float*>(x));
    pr.y.set_data_handle(y);
    if (bias) {
      pr.bias.set_data_handle(const_cast<float*>(bias));
      run(pr, pr.fwd, pr.fwd_args);
    } else {
      run(pr, pr.fwd_nobias, pr.fwd_nobias_args);
    }
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    Prims& pr = prims(p);
    DTNN_CHECK(pr.error.empty(), pr.error);
    pr.w_user.set_data_handle(const_cast<float*>(w));
    pr.scratch_bd.set_data_handle(ws + pr.off_scratch);
    OpScope op;
    if (pr.bwd_reorder) {
      op.next(OpCode::bwd_transpose_w);
      pr.w_bwd.set_data_handle(ws + pr.off_w_bwd);
      run(pr, pr.w_to_bwd, pr.to_bwd_args);
    }
    op.next(OpCode::bwd_dx_onednn);
    pr.dy.set_data_handle(const_cast<float*>(dy));
    pr.dx.set_data_handle(dx);
    run(pr, pr.bwd_data, pr.bd_args);
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    Prims& pr = prims(p);
    DTNN_CHECK(pr.error.empty(), pr.error);
    pr.x.set_data_handle(const_cast<float*>(x));
    pr.dy.set_data_handle(const_cast<float*>(dy));
    pr.dw_user.set_data_handle(dw);
    pr.dw_prim.set_data_handle(ws + pr.off_dw);
    pr.db.set_data_handle(db ? db : ws + pr.off_db);
    pr.scratch_bw.set_data_handle(ws + pr.off_scratch);
    OpScope op(OpCode::bwd_dw_onednn);  // db too: the primitive computes it
    run(pr, pr.bwd_w, pr.bw_args);
    if (pr.dw_reorder) {
      op.next(OpCode::bwd_reshape_dw);
      run(pr, pr.dw_to_user, pr.to_user_args);
    }
  }
};

}  // namespace

const ConvAlgorithm& conv_onednn() {
  static const ConvOnednn algo;
  return algo;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace dtnn
