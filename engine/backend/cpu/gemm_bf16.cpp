// cpu::gemm_bf16 on oneDNN's matmul primitive (see gemm_bf16.h).
#include "backend/cpu/gemm_bf16.h"

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/cpu/blas.h"
#include "core/error.h"

namespace dtnn::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

struct Gemm {
  dnnl::stream stream;
  dnnl::matmul mm;
  dnnl::reorder a_to_bf16, b_to_bf16;
  memory a_user, b_user, a, b, c, scratch;
  std::vector<char> a_bytes, b_bytes, scratch_bytes;  // the bf16 operands and oneDNN's scratchpad
};

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// op(X) as a rows x cols float32 matrix over the caller's row-major storage with leading dimension ld.
memory::desc user_desc(bool trans, int64_t rows, int64_t cols, int64_t ld) {
  return memory::desc({rows, cols}, dt::f32, trans ? memory::dims{1, ld} : memory::dims{ld, 1});
}

std::unique_ptr<Gemm> create(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, bool acc,
                             int64_t ldc) {
  auto g = std::make_unique<Gemm>();
  dnnl::engine& eng = cpu_engine();
  g->stream = dnnl::stream(eng);
  const memory::desc a_md({m, k}, dt::bf16, tag::ab), b_any({k, n}, dt::bf16, tag::any);
  const memory::desc c_md({m, n}, dt::f32, memory::dims{ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (acc) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);  // beta = 1: C += A.B
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::primitive_desc pd({a_md, b_any, c_md}, attr, eng);
  g->mm = dnnl::matmul(pd);
  g->a_bytes.resize(a_md.get_size());
  g->b_bytes.resize(pd.weights_desc().get_size());
  g->scratch_bytes.resize(pd.scratchpad_desc().get_size());
  g->a = memory(a_md, eng, g->a_bytes.data());
  g->b = memory(pd.weights_desc(), eng, g->b_bytes.data());
  g->scratch = memory(pd.scratchpad_desc(), eng, g->scratch_bytes.data());
  g->c = memory(c_md, eng, DNNL_MEMORY_NONE);
  g->a_user = memory(user_desc(ta, m, k, lda), eng, DNNL_MEMORY_NONE);
  g->b_user = memory(user_desc(tb, k, n, ldb), eng, DNNL_MEMORY_NONE);
  g->a_to_bf16 = dnnl::reorder(g->a_user, g->a);
  g->b_to_bf16 = dnnl::reorder(g->b_user, g->b);
  return g;
}

Gemm& gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, bool acc, int64_t ldc) {
  static std::mutex mutex;
  static std::map<std::array<int64_t, 10>, std::unique_ptr<Gemm>> cache;
  const std::array<int64_t, 10> key = {ta, tb, m, n, k, lda, ldb, acc, ldc, threads()};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    try {
      it = cache.emplace(key, create(ta, tb, m, n, k, lda, ldb, acc, ldc)).first;
    } catch (const dnnl::error& e) {
      fail("bfloat16 GEMM ", m, "x", n, "x", k, ": oneDNN declined it (", e.what(), ")");
    }
  }
  return *it->second;
}

// Runs one primitive through the C API with a fixed argument list (no per-call map of the C++ API).
void run(Gemm& g, const dnnl::primitive& p, std::initializer_list<dnnl_exec_arg_t> args) {
  const dnnl_status_t s = dnnl_primitive_execute(p.get(), g.stream.get(), static_cast<int>(args.size()), args.begin());
  DTNN_CHECK(s == dnnl_success, "bfloat16 GEMM: oneDNN execution failed (status ", static_cast<int>(s), ")");
}

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  DTNN_CHECK(alpha == 1.0f && (beta == 0.0f || beta == 1.0f), "bfloat16 GEMM: only alpha = 1 and beta = 0 or 1 (got ",
             alpha, ", ", beta, ")");
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum (a weight gradient over no samples): C = beta * C, as sgemm
    if (beta == 0.0f)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  Gemm& g = gemm(trans_a, trans_b, m, n, k, lda, ldb, beta == 1.0f, ldc);
  g.a_user.set_data_handle(const_cast<float*>(a));
  g.b_user.set_data_handle(const_cast<float*>(b));
  g.c.set_data_handle(c);
  run(g, g.a_to_bf16, {{DNNL_ARG_FROM, g.a_user.get()}, {DNNL_ARG_TO, g.a.get()}});
  run(g, g.b_to_bf16, {{DNNL_ARG_FROM, g.b_user.get()}, {DNNL_ARG_TO, g.b.get()}});
  run(g, g.mm, {{DNNL_ARG_SRC, g.a.get()}, {DNNL_ARG_WEIGHTS, g.b.get()}, {DNNL_ARG_DST, g.c.get()},
                {DNNL_ARG_SCRATCHPAD, g.scratch.get()}});
  DTNN_CHECK(dnnl_stream_wait(g.stream.get()) == dnnl_success, "bfloat16 GEMM: waiting for oneDNN failed");
}

}  // namespace dtnn::cpu
