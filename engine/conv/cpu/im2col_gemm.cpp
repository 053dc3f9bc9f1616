// cpu.im2col_gemm: NCHW convolution as one GEMM per sample over an im2col matrix.
//
// For sample n the im2col matrix has one row per filter tap (c, r, s) and one column per output pixel
// (oh, ow); PyDTNN's NCHW weights (K, C, R, S) are already the K x (C*R*S) matrix:
//   forward          y_n  = W . cols_n                     (K x PQ)
//   backward_filter  dW  += dy_n . cols_n^T                (K x CRS)
//   backward_data    dcols = W^T . dy_n, scattered into dx_n (col2im)
// 1x1 stride-1 unpadded layers skip im2col: x_n itself is the C x (H*W) matrix.
// Tracing (trace/op_trace.h) records the phases per sample: forward im2col, gemm, bias; backward_data
// gemm_dx, col2im; backward_filter one bias sum, then per sample im2col, gemm_dw.
#include <cstring>

#include "backend/cpu/blas.h"
#include "conv/cpu/cpu_algorithms.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

bool is_pointwise(const ConvProblem& p) {
  return p.r == 1 && p.s == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
}

// Visits (tap row, output column, input offset within the sample or -1 for padding).
template <typename Fn>
void for_each_col(const ConvProblem& p, Fn&& fn) {
  const int64_t P = p.p(), Q = p.q();
  for (int64_t c = 0; c < p.c; ++c)
    for (int64_t r = 0; r < p.r; ++r)
      for (int64_t s = 0; s < p.s; ++s) {
        const int64_t row = (c * p.r + r) * p.s + s;
        for (int64_t oh = 0; oh < P; ++oh) {
          const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
          const bool row_inside = ih >= 0 && ih < p.h;
          for (int64_t ow = 0; ow < Q; ++ow) {
            const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
            const bool inside = row_inside && iw >= 0 && iw < p.w;
            fn(row * P * Q + oh * Q + ow, inside ? (c * p.h + ih) * p.w + iw : -1);
          }
        }
      }
}

class ConvIm2colGemm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.im2col_gemm"; }

  Support supports(const ConvProblem& p) const override {
    if (p.layout != Layout::nchw) return Support::no("im2col_gemm: needs NCHW (use im2row_gemm for NHWC)");
    if (p.groups != 1) return Support::no("im2col_gemm: needs groups == 1");
    return Support::yes();
  }

  int64_t workspace_floats(const ConvProblem& p) const override {
    return is_pointwise(p) ? 0 : p.c * p.r * p.s * p.p() * p.q();
  }

  int64_t op_events(const ConvProblem& p, ConvDir dir) const override {
    return dir == ConvDir::fwd ? 3 * p.n : dir == ConvDir::bwd_data ? 2 * p.n : 1 + 2 * p.n;
  }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    const int64_t PQ = p.p() * p.q(), T = p.c * p.r * p.s, HWC = p.c * p.h * p.w;
    OpScope op;
    for (int64_t n = 0; n < p.n; ++n) {
      const float* cols = x + n * HWC;
      if (!is_pointwise(p)) {
        op.next(OpCode::fwd_im2col);
        for_each_col(p, [&](int64_t i, int64_t off) { ws[i] = off < 0 ? 0.0f : cols[off]; });
        cols = ws;
      }
      op.next(OpCode::fwd_gemm);
      cpu::sgemm(false, false, p.k, PQ, T, 1.0f, w, T, cols, PQ, 0.0f, y + n * p.k * PQ, PQ);
      if (!bias) continue;
      op.next(OpCode::fwd_bias);
      conv_add_bias(p, bias, y, n, 1);
    }
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    const int64_t PQ = p.p() * p.q(), T = p.c * p.r * p.s, HWC = p.c * p.h * p.w;
    OpScope op;
    for (int64_t n = 0; n < p.n; ++n) {
      float* dxn = dx + n * HWC;
      op.next(OpCode::bwd_dx_gemm);
      if (is_pointwise(p)) {
        cpu::sgemm(true, false, T, PQ, p.k, 1.0f, w, T, dy + n * p.k * PQ, PQ, 0.0f, dxn, PQ);
        continue;
      }
      cpu::sgemm(true, false, T, PQ, p.k, 1.0f, w, T, dy + n * p.k * PQ, PQ, 0.0f, ws, PQ);
      op.next(OpCode::bwd_col2im);
      std::memset(dxn, 0, HWC * sizeof(float));
      for_each_col(p, [&](int64_t i, int64_t off) {
        if (off >= 0) dxn[off] += ws[i];
      });
    }
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    const int64_t PQ = p.p() * p.q(), T = p.c * p.r * p.s, HWC = p.c * p.h * p.w;
    if (p.n == 0) std::memset(dw, 0, p.w_numel() * sizeof(float));
    OpScope op(db ? OpCode::bwd_bias : OpCode::none);
    conv_sum_bias(p, dy, db, 0, p.n, false);
    for (int64_t n = 0; n < p.n; ++n) {
      const float* cols = x + n * HWC;
      if (!is_pointwise(p)) {
        op.next(OpCode::bwd_im2col);
        for_each_col(p, [&](int64_t i, int64_t off) { ws[i] = off < 0 ? 0.0f : cols[off]; });
        cols = ws;
      }
      op.next(OpCode::bwd_dw_gemm);
      cpu::sgemm(false, true, p.k, T, PQ, 1.0f, dy + n * p.k * PQ, PQ, cols, PQ, n == 0 ? 0.0f : 1.0f, dw, T);
    }
  }
};

}  // namespace

const ConvAlgorithm& conv_im2col_gemm() {
  static const ConvIm2colGemm algo;
  return algo;
}

}  // namespace dtnn
