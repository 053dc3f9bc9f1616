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
#include <algorithm>
#include <cstring>

#include "backend/cpu/blas.h"
#include "conv/cpu/cpu_algorithms.h"

namespace dtnn {
namespace {

constexpr int64_t kChunkBytes = 256 * 1024;

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

// Visits the filter taps of output rows [m0, m0+mc): fn(row_index_in_chunk, tap, input pointer or null).
template <typename Fn>
void for_each_tap(const ConvProblem& p, int64_t m0, int64_t mc, Fn&& fn) {
  const int64_t P = p.p(), Q = p.q();
  int64_t n = m0 / (P * Q), oh = (m0 / Q) % P, ow = m0 % Q;
  for (int64_t i = 0; i < mc; ++i) {
    for (int64_t r = 0; r < p.r; ++r) {
      const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
      for (int64_t s = 0; s < p.s; ++s) {
        const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dil_w;
        const bool inside = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
        fn(i, r * p.s + s, inside ? ((n * p.h + ih) * p.w + iw) * p.c : -1);
      }
    }
    if (++ow == Q) {
      ow = 0;
      if (++oh == P) { oh = 0; ++n; }
    }
  }
}

void im2row(const ConvProblem& p, const float* x, int64_t m0, int64_t mc, float* rows) {
  const int64_t C = p.c, T = taps(p);
  for_each_tap(p, m0, mc, [&](int64_t i, int64_t tap, int64_t offset) {
    float* dst = rows + i * T + tap * C;
    if (offset < 0) {
      for (int64_t c = 0; c < C; ++c) dst[c] = 0.0f;
    } else {
      const float* src = x + offset;
      for (int64_t c = 0; c < C; ++c) dst[c] = src[c];
    }
  });
}

void row2im_add(const ConvProblem& p, const float* rows, int64_t m0, int64_t mc, float* dx) {
  const int64_t C = p.c, T = taps(p);
  for_each_tap(p, m0, mc, [&](int64_t i, int64_t tap, int64_t offset) {
    if (offset < 0) return;
    const float* src = rows + i * T + tap * C;
    float* dst = dx + offset;
    for (int64_t c = 0; c < C; ++c) dst[c] += src[c];
  });
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
    return taps(p) * p.k + (is_pointwise(p) ? 0 : chunk_rows(p) * taps(p));
  }

  void forward(const ConvProblem& p, const float* x, const float* w, float* y, float* ws) const override {
    const int64_t M = p.n * p.p() * p.q(), T = taps(p), K = p.k;
    if (is_pointwise(p)) {  // (C,1,1,K) is already the (C, K) matrix
      cpu::sgemm(false, false, M, K, T, 1.0f, x, T, w, K, 0.0f, y, K);
      return;
    }
    float* wt = ws;
    float* rows = ws + T * K;
    weights_crsk_to_rsck(p, w, wt);
    const int64_t chunk = chunk_rows(p);
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
      const int64_t mc = std::min(chunk, M - m0);
      im2row(p, x, m0, mc, rows);
      cpu::sgemm(false, false, mc, K, T, 1.0f, rows, T, wt, K, 0.0f, y + m0 * K, K);
    }
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    const int64_t M = p.n * p.p() * p.q(), T = taps(p), K = p.k;
    if (is_pointwise(p)) {
      cpu::sgemm(false, true, M, T, K, 1.0f, dy, K, w, K, 0.0f, dx, T);
      return;
    }
    float* wt = ws;
    float* rows = ws + T * K;
    weights_crsk_to_rsck(p, w, wt);
    std::memset(dx, 0, p.x_numel() * sizeof(float));
    const int64_t chunk = chunk_rows(p);
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
      const int64_t mc = std::min(chunk, M - m0);
      cpu::sgemm(false, true, mc, T, K, 1.0f, dy + m0 * K, K, wt, K, 0.0f, rows, T);
      row2im_add(p, rows, m0, mc, dx);
    }
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* ws) const override {
    const int64_t M = p.n * p.p() * p.q(), T = taps(p), K = p.k;
    if (M == 0) {
      std::memset(dw, 0, T * K * sizeof(float));
      return;
    }
    if (is_pointwise(p)) {
      cpu::sgemm(true, false, T, K, M, 1.0f, x, T, dy, K, 0.0f, dw, K);
      return;
    }
    float* dwt = ws;
    float* rows = ws + T * K;
    const int64_t chunk = chunk_rows(p);
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
      const int64_t mc = std::min(chunk, M - m0);
      im2row(p, x, m0, mc, rows);
      cpu::sgemm(true, false, T, K, mc, 1.0f, rows, T, dy + m0 * K, K, m0 == 0 ? 0.0f : 1.0f, dwt, K);
    }
    weights_rsck_to_crsk(p, dwt, dw);
  }
};

}  // namespace

const ConvAlgorithm& conv_im2row_gemm() {
  static const ConvIm2rowGemm algo;
  return algo;
}

}  // namespace dtnn
