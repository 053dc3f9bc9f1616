// cpu.im2row_gemm: NHWC convolution as row-major GEMMs over an im2row matrix.
//
// The im2row matrix has one row per output pixel (n, oh, ow) and one column per filter tap in (r, s, c)
// order, so every tap copies a contiguous C-vector. PyDTNN's NHWC weights are (C, R, S, K); they are
// reordered to (R, S, C, K) once per call (K*C*R*S floats, negligible next to the activations).
// The rows are built in chunks of about kChunkBytes so each chunk is still in L2 when the GEMM reads it:
//   forward          y[m0:m0+mc, :]  = rows(chunk) . W'
//   backward_filter  dW'            += rows(chunk)^T . dy[m0:m0+mc, :]
//   backward_data    drows(chunk)    = dy[m0:m0+mc, :] . W'^T, then scatter-added into dx (row2im)
// 1x1 stride-1 unpadded layers skip im2row: x itself is the (N*H*W) x C matrix.
// Forward with K = 4 or 8 (and not 1x1) never materialises the rows: implicit_forward.h gathers them inside
// its micro-kernel (simplecnn: 0.46 -> ~0.1 ms and 0.82 -> ~0.4 ms per batch for its two layers).
// The GEMMs have the output channel count K as their small dimension; for K <= 16 they go to dtnn's own
// AVX2 skinny kernels (backend/cpu/skinny_gemm.h: 2-6x OpenBLAS on these shapes, which it packs and
// clears at a loss), otherwise to OpenBLAS. Bias is added to (and summed from) each chunk while it is
// in cache. (A variant that first zero-pads x and copies whole filter rows was measured slower here:
// same forward time, and its overlapping row-by-row scatter in backward_data stalls on store
// forwarding, 1.8x slower than scattering one tap across a span of rows.)
// Tracing (trace/op_trace.h) records each chunk's phases: forward reshape_w, then per chunk im2row, gemm,
// bias; backward_data transpose_w, row2im (clearing dx), then per chunk gemm_dx, row2im; backward_filter
// per chunk im2row, gemm_dw, bias, then reshape_dw. The implicit paths are one convgemm event each.
#include <algorithm>
#include <cstring>

#include "backend/cpu/blas.h"
#include "backend/cpu/skinny_gemm.h"
#include "conv/cpu/cpu_algorithms.h"
#include "conv/cpu/implicit_filter.h"
#include "conv/cpu/implicit_forward.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

constexpr int64_t kChunkBytes = 128 * 1024;

bool is_pointwise(const ConvProblem& p) {
  return p.r == 1 && p.s == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
}

int64_t taps(const ConvProblem& p) { return p.r * p.s * p.c; }

int64_t chunk_rows(const ConvProblem& p) {
  const int64_t rows = std::max<int64_t>(64, kChunkBytes / (4 * taps(p)));
  return std::min<int64_t>(rows, std::max<int64_t>(1, p.n * p.p() * p.q()));
}

// (C, R, S, K) -> (R, S, C, K) and back.
void weights_crsk_to_rsck(const ConvProblem& p, const float* w, float* wt) {
  for (int64_t c = 0; c < p.c; ++c)
    for (int64_t rs = 0; rs < p.r * p.s; ++rs)
      std::memcpy(wt + (rs * p.c + c) * p.k, w + (c * p.r * p.s + rs) * p.k, p.k * sizeof(float));
}

void weights_rsck_to_crsk(const ConvProblem& p, const float* wt, float* w) {
  for (int64_t c = 0; c < p.c; ++c)
    for (int64_t rs = 0; rs < p.r * p.s; ++rs)
      std::memcpy(w + (c * p.r * p.s + rs) * p.k, wt + (rs * p.c + c) * p.k, p.k * sizeof(float));
}

// Walks output rows [m0, m0+mc) one image row (n, oh) at a time and, for every filter tap (r, s), calls
// span(first row in the chunk, row count, tap column, input offset of the first row or -1 for padding,
// input step between consecutive rows). Bounds are resolved per span, not per element, so the copy
// loops are branch-free.
template <typename Span>
void for_each_span(const ConvProblem& p, int64_t m0, int64_t mc, Span&& span) {
  const int64_t P = p.p(), Q = p.q(), step = p.stride_w * p.c;
  for (int64_t m = m0; m < m0 + mc;) {
    const int64_t n = m / (P * Q), oh = (m / Q) % P, ow0 = m % Q;
    const int64_t ow1 = std::min<int64_t>(Q, ow0 + (m0 + mc - m));
    const int64_t i0 = m - m0;
    for (int64_t r = 0; r < p.r; ++r) {
      const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
      for (int64_t s = 0; s < p.s; ++s) {
        const int64_t col = (r * p.s + s) * p.c;
        if (ih < 0 || ih >= p.h) {
          span(i0, ow1 - ow0, col, int64_t{-1}, int64_t{0});
          continue;
        }
        // iw = ow * stride + off lies in [0, W) exactly for ow in [lo, hi).
        const int64_t off = s * p.dil_w - p.pad_w;
        const int64_t lo = std::clamp<int64_t>(off >= 0 ? 0 : (-off + p.stride_w - 1) / p.stride_w, ow0, ow1);
        const int64_t hi = std::clamp<int64_t>(p.w - off > 0 ? (p.w - off - 1) / p.stride_w + 1 : 0, lo, ow1);
        if (lo > ow0) span(i0, lo - ow0, col, int64_t{-1}, int64_t{0});
        if (hi > lo) span(i0 + (lo - ow0), hi - lo, col, ((n * p.h + ih) * p.w + lo * p.stride_w + off) * p.c, step);
        if (ow1 > hi) span(i0 + (hi - ow0), ow1 - hi, col, int64_t{-1}, int64_t{0});
      }
    }
    m += ow1 - ow0;
  }
}

// The channel count is a template parameter for the small counts where the copy loop would otherwise
// dominate (first layers); kC = 0 means "use the runtime count".
template <int kC>
void im2row_c(const ConvProblem& p, const float* x, int64_t m0, int64_t mc, float* rows) {
  const int64_t C = kC ? kC : p.c, T = taps(p);
  for_each_span(p, m0, mc, [&](int64_t i, int64_t count, int64_t col, int64_t src, int64_t step) {
    float* dst = rows + i * T + col;
    if (src < 0) {
      for (int64_t j = 0; j < count; ++j)
        for (int64_t c = 0; c < C; ++c) dst[j * T + c] = 0.0f;
    } else {
      const float* in = x + src;
      for (int64_t j = 0; j < count; ++j)
        for (int64_t c = 0; c < C; ++c) dst[j * T + c] = in[j * step + c];
    }
  });
}

template <int kC>
void row2im_add_c(const ConvProblem& p, const float* rows, int64_t m0, int64_t mc, float* dx) {
  const int64_t C = kC ? kC : p.c, T = taps(p);
  for_each_span(p, m0, mc, [&](int64_t i, int64_t count, int64_t col, int64_t dst_off, int64_t step) {
    if (dst_off < 0) return;
    const float* src = rows + i * T + col;
    float* out = dx + dst_off;
    for (int64_t j = 0; j < count; ++j)
      for (int64_t c = 0; c < C; ++c) out[j * step + c] += src[j * T + c];
  });
}

void im2row(const ConvProblem& p, const float* x, int64_t m0, int64_t mc, float* rows) {
  switch (p.c) {
    case 1: return im2row_c<1>(p, x, m0, mc, rows);
    case 3: return im2row_c<3>(p, x, m0, mc, rows);
    case 4: return im2row_c<4>(p, x, m0, mc, rows);
    case 8: return im2row_c<8>(p, x, m0, mc, rows);
    default: return im2row_c<0>(p, x, m0, mc, rows);
  }
}

void row2im_add(const ConvProblem& p, const float* rows, int64_t m0, int64_t mc, float* dx) {
  switch (p.c) {
    case 1: return row2im_add_c<1>(p, rows, m0, mc, dx);
    case 3: return row2im_add_c<3>(p, rows, m0, mc, dx);
    case 4: return row2im_add_c<4>(p, rows, m0, mc, dx);
    case 8: return row2im_add_c<8>(p, rows, m0, mc, dx);
    default: return row2im_add_c<0>(p, rows, m0, mc, dx);
  }
}

// Y[m x K] = A[m x T] . B[T x K]
void gemm_nn(int64_t m, int64_t K, int64_t T, const float* a, const float* b, float* y) {
  if (cpu::skinny_supported(K)) return cpu::skinny_gemm_nn(m, K, T, a, T, b, K, y, K);
  cpu::sgemm(false, false, m, K, T, 1.0f, a, T, b, K, 0.0f, y, K);
}
// D[m x T] = A[m x K] . B[T x K]^T
void gemm_nt(int64_t m, int64_t T, int64_t K, const float* a, const float* b, float* d) {
  if (cpu::skinny_supported(K)) return cpu::skinny_gemm_nt(m, T, K, a, K, b, K, d, T);
  cpu::sgemm(false, true, m, T, K, 1.0f, a, K, b, K, 0.0f, d, T);
}
// G[T x K] = beta * G + A[m x T]^T . B[m x K]
void gemm_tn(int64_t T, int64_t K, int64_t m, const float* a, const float* b, float beta, float* g) {
  if (cpu::skinny_supported(K)) return cpu::skinny_gemm_tn(T, K, m, a, T, b, K, beta, g, K);
  cpu::sgemm(true, false, T, K, m, 1.0f, a, T, b, K, beta, g, K);
}

class ConvIm2rowGemm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.im2row_gemm"; }

  Support supports(const ConvProblem& p) const override {
    if (p.layout != Layout::nhwc) return Support::no("im2row_gemm: needs NHWC (use im2col_gemm for NCHW)");
    if (p.groups != 1) return Support::no("im2row_gemm: needs groups == 1");
    return Support::yes();
  }

  int64_t workspace_floats(const ConvProblem& p) const override {
    const int64_t gemm = taps(p) * p.k + (is_pointwise(p) ? 0 : chunk_rows(p) * taps(p));
    return std::max({gemm, implicit_forward_supported(p) ? implicit_forward_workspace(p) : 0,
                     implicit_filter_supported(p) ? implicit_filter_workspace(p) : 0});
  }

  int64_t op_events(const ConvProblem& p, ConvDir dir) const override {
    const int64_t chunks = (p.n * p.p() * p.q() + chunk_rows(p) - 1) / chunk_rows(p);
    switch (dir) {
      case ConvDir::fwd: return is_pointwise(p) ? 2 : implicit_forward_supported(p) ? 1 : 1 + 3 * chunks;
      case ConvDir::bwd_data: return is_pointwise(p) ? 1 : 2 + 2 * chunks;
      case ConvDir::bwd_filter: return is_pointwise(p) ? 2 : implicit_filter_supported(p) ? 1 : 1 + 3 * chunks;
    }
    return 0;
  }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    const int64_t M = p.n * p.p() * p.q(), T = taps(p), K = p.k;
    if (is_pointwise(p)) {  // (C,1,1,K) is already the (C, K) matrix
      OpScope op(OpCode::fwd_gemm);
      gemm_nn(M, K, T, x, w, y);
      if (!bias) return;
      op.next(OpCode::fwd_bias);
      conv_add_bias(p, bias, y, 0, M);
      return;
    }
    if (implicit_forward_supported(p)) {
      const OpScope op(OpCode::fwd_convgemm);
      return implicit_forward(p, x, w, bias, y, ws);
    }
    float* wt = ws;
    float* rows = ws + T * K;
    OpScope op(OpCode::fwd_reshape_w);
    weights_crsk_to_rsck(p, w, wt);
    const int64_t chunk = chunk_rows(p);
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
      const int64_t mc = std::min(chunk, M - m0);
      op.next(OpCode::fwd_im2row);
      im2row(p, x, m0, mc, rows);
      op.next(OpCode::fwd_gemm);
      gemm_nn(mc, K, T, rows, wt, y + m0 * K);
      if (!bias) continue;
      op.next(OpCode::fwd_bias);
      conv_add_bias(p, bias, y, m0, mc);  // while the chunk of y is still in cache
    }
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    const int64_t M = p.n * p.p() * p.q(), T = taps(p), K = p.k;
    if (is_pointwise(p)) {
      const OpScope op(OpCode::bwd_dx_gemm);
      gemm_nt(M, T, K, dy, w, dx);
      return;
    }
    float* wt = ws;
    float* rows = ws + T * K;
    if (p.x_numel() == 0) return;  // an empty batch: no dx, and a null one memset must not get (UBSan)
    OpScope op(OpCode::bwd_transpose_w);
    weights_crsk_to_rsck(p, w, wt);
    op.next(OpCode::bwd_row2im);
    std::memset(dx, 0, p.x_numel() * sizeof(float));
    const int64_t chunk = chunk_rows(p);
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
      const int64_t mc = std::min(chunk, M - m0);
      op.next(OpCode::bwd_dx_gemm);
      gemm_nt(mc, T, K, dy + m0 * K, wt, rows);
      op.next(OpCode::bwd_row2im);
      row2im_add(p, rows, m0, mc, dx);
    }
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    const int64_t M = p.n * p.p() * p.q(), T = taps(p), K = p.k;
    if (M == 0) {
      std::memset(dw, 0, T * K * sizeof(float));
      conv_sum_bias(p, dy, db, 0, 0, false);
      return;
    }
    if (is_pointwise(p)) {
      OpScope op(OpCode::bwd_dw_gemm);
      gemm_tn(T, K, M, x, dy, 0.0f, dw);
      if (!db) return;
      op.next(OpCode::bwd_bias);
      conv_sum_bias(p, dy, db, 0, M, false);
      return;
    }
    if (implicit_filter_supported(p)) {
      const OpScope op(OpCode::bwd_dw_convgemm);
      return implicit_filter(p, x, dy, dw, db, ws);
    }
    float* dwt = ws;
    float* rows = ws + T * K;
    const int64_t chunk = chunk_rows(p);
    OpScope op;
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
      const int64_t mc = std::min(chunk, M - m0);
      op.next(OpCode::bwd_im2row);
      im2row(p, x, m0, mc, rows);
      op.next(OpCode::bwd_dw_gemm);
      gemm_tn(T, K, mc, rows, dy + m0 * K, m0 == 0 ? 0.0f : 1.0f, dwt);
      if (!db) continue;
      op.next(OpCode::bwd_bias);
      conv_sum_bias(p, dy, db, m0, mc, m0 > 0);
    }
    op.next(OpCode::bwd_reshape_dw);
    weights_rsck_to_crsk(p, dwt, dw);
  }
};

}  // namespace

const ConvAlgorithm& conv_im2row_gemm() {
  static const ConvIm2rowGemm algo;
  return algo;
}

}  // namespace dtnn
