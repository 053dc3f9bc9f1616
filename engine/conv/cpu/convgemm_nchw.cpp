// cpu.convgemm for NCHW: the BLIS-style ConvGemm of San Juan et al. (PyDTNN's sconvGemmNCHW): per sample,
// Y[K x PQ] = W[K x CRS] . im2col(x)[CRS x PQ] with the im2col transform fused into the packing of the
// GEMM's B panels (CRS x 16 output pixels at a time), so no im2col matrix exists. The register tile is
// convgemm's 6 x 16 segment kernel (convgemm_kernels.h): 6 output channels x 16 pixels (forward and
// backward_data) or 6 output channels x 16 (c, r, s) columns (weight gradient).
//
//   forward          A = W packed once into 6-row panels (u-major: the kernel reads 6 contiguous floats per
//                    step); per (sample, 16-pixel block) a thread packs im2col's CRS x 16 panel into its
//                    own workspace region and runs all K/6 row tiles over it (the panel stays in L2).
//   backward_data    dcol[CRS x PQ] = W^T . dy[n] read in place (W's rows are u-contiguous, dy's rows
//                    pixel-contiguous: no packing), each 6 x 16 tile scattered into dx by col2im right away
//                    (runs of a pixel row are contiguous in dx for stride 1). Threads split samples.
//   backward_filter  dW[K x CRS] = sum_n dy[n] . im2col(x[n])^T: dy is transposed once into the workspace
//                    (pixel-major), and each task (16 columns of CRS) packs, per sample, im2col's PQ x 16
//                    panel and sums all K/6 row tiles into dW in sample order: thread-count independent.
// Tracing (trace/op_trace.h): forward reshape_w (A's panels; split from the tiles at the region's barrier),
// convgemm; backward_data convgemm_dx; backward_filter transpose_dy, convgemm_dw.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/blas.h"
#include "conv/cpu/convgemm_kernels.h"
#include "conv/cpu/convgemm_nchw.h"
#include "trace/op_trace.h"

namespace dtnn::convgemm {
namespace {

int64_t div_up(int64_t v, int64_t m) { return (v + m - 1) / m; }
int64_t round_up(int64_t v, int64_t m) { return div_up(v, m) * m; }

// Forward workspace: packed A panels, then one CRS x 16 B panel per thread.
int64_t a_panels_floats(const ConvProblem& p) { return round_up(round_up(p.k, kMR) * p.c * p.r * p.s, 16); }
int64_t b_panel_floats(const ConvProblem& p) { return p.c * p.r * p.s * kNR; }  // a multiple of 16
// Weight gradient: dy transposed (N x PQ x K), then per thread a PQ x 16 panel and a K x 16 edge tile.
int64_t filter_thread_floats(const ConvProblem& p) {
  return round_up(p.p() * p.q() * kNR, 16) + round_up(p.k, kMR) * kNR;
}

// The 16 output pixels [pq0, pq0 + cols) of a sample as runs along output rows: run t covers columns
// [start[t], start[t+1]) of the block, output row oh[t], first output column ow[t].
struct PixelBlock {
  int cols = 0, runs = 0;
  int start[kNR + 1];
  int64_t ih0[kNR], iw0[kNR];  // per run: oh*stride_h - pad_h, ow*stride_w - pad_w of its first pixel
  PixelBlock(const ConvProblem& p, int64_t pq0) {
    const int64_t Q = p.q(), PQ = p.p() * Q;
    cols = static_cast<int>(std::min<int64_t>(kNR, PQ - pq0));
    for (int j = 0; j < cols;) {
      const int64_t oh = (pq0 + j) / Q, ow = (pq0 + j) % Q;
      start[runs] = j;
      ih0[runs] = oh * p.stride_h - p.pad_h;
      iw0[runs++] = ow * p.stride_w - p.pad_w;
      j += static_cast<int>(std::min<int64_t>(Q - ow, cols - j));
    }
    start[runs] = cols;
  }
};

// Input columns iw0 + i*stride (i < len) that lie in [0, W): i in [*lo, *hi).
inline void inside(int64_t iw0, int64_t stride, int64_t len, int64_t W, int64_t* lo, int64_t* hi) {
  *lo = iw0 >= 0 ? 0 : std::min(len, (-iw0 + stride - 1) / stride);
  *hi = iw0 >= W ? 0 : std::min(len, (W - 1 - iw0) / stride + 1);
  if (*hi < *lo) *hi = *lo;
}

// panel[u*16 + j] = im2col(x_n)[u][pq0 + j] for u = (c, r, s); columns past `cols` are zero.
void pack_im2col(const ConvProblem& p, const float* xn, const PixelBlock& px, float* panel) {
  const int64_t H = p.h, W = p.w, sw = p.stride_w;
  float* d = panel;
  for (int64_t c = 0; c < p.c; ++c)
    for (int64_t r = 0; r < p.r; ++r)
      for (int64_t s = 0; s < p.s; ++s, d += kNR) {
        // Inline loops, not memcpy/memset: the runs are a few floats long.
        for (int t = 0; t < px.runs; ++t) {
          const int64_t ih = px.ih0[t] + r * p.dil_h, len = px.start[t + 1] - px.start[t];
          float* dst = d + px.start[t];
          int64_t lo = 0, hi = 0;
          if (ih >= 0 && ih < H) {
            const int64_t iw0 = px.iw0[t] + s * p.dil_w;
            inside(iw0, sw, len, W, &lo, &hi);
            const float* src = xn + (c * H + ih) * W + iw0 + lo * sw;  // input column of pixel lo (inside)
            if (sw == 1)
              for (int64_t i = lo; i < hi; ++i) dst[i] = src[i - lo];
            else
              for (int64_t i = lo; i < hi; ++i) dst[i] = src[(i - lo) * sw];
          }
          for (int64_t i = 0; i < lo; ++i) dst[i] = 0.0f;
          for (int64_t i = hi; i < len; ++i) dst[i] = 0.0f;
        }
        for (int j = px.cols; j < kNR; ++j) d[j] = 0.0f;
      }
}

}  // namespace

int64_t nchw_workspace_floats(const ConvProblem& p) {
  const int64_t threads = cpu::threads();
  const int64_t forward = a_panels_floats(p) + threads * b_panel_floats(p);
  const int64_t filter = round_up(p.y_numel(), 16) + threads * filter_thread_floats(p);
  return std::max(forward, filter);
}

void nchw_forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y, float* ws) {
  const int64_t K = p.k, CRS = p.c * p.r * p.s, PQ = p.p() * p.q(), kpanels = div_up(K, kMR);
  float* a = ws;
  const int64_t blocks = div_up(PQ, kNR);
  OpScope op(OpCode::fwd_reshape_w);
#pragma omp parallel num_threads(cpu::threads())
  {
#pragma omp for schedule(static)
    for (int64_t kp = 0; kp < kpanels; ++kp)  // a[kp][u*6 + i] = w[(kp*6 + i)*CRS + u]
      for (int64_t u = 0; u < CRS; ++u)
        for (int i = 0; i < kMR; ++i) {
          const int64_t k = kp * kMR + i;
          a[(kp * CRS + u) * kMR + i] = k < K ? w[k * CRS + u] : 0.0f;
        }
    if (omp_get_thread_num() == 0) op.next(OpCode::fwd_convgemm);  // after the omp for's barrier
    float* panel = ws + a_panels_floats(p) + omp_get_thread_num() * b_panel_floats(p);
    alignas(64) float tile[kMR * kNR];
#pragma omp for collapse(2) schedule(static)
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t pq0 = b * kNR;
        const PixelBlock px(p, pq0);
        pack_im2col(p, x + n * p.c * p.h * p.w, px, panel);
        for (int64_t kp = 0; kp < kpanels; ++kp) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, K - kp * kMR));
          const Segment s{a + kp * CRS * kMR, panel, CRS};
          float* out = y + (n * K + kp * kMR) * PQ + pq0;
          const bool whole = mr == kMR && px.cols == kNR;
          tile_segments_any(mr, false, &s, 1, 0, 0, kMR, kNR, kNR, false, whole ? out : tile, whole ? PQ : kNR);
          for (int i = 0; i < mr; ++i) {
            float* row = out + i * PQ;
            const float add = bias ? bias[kp * kMR + i] : 0.0f;
            if (!whole)
              for (int j = 0; j < px.cols; ++j) row[j] = tile[i * kNR + j] + add;
            else if (bias)
              for (int j = 0; j < kNR; ++j) row[j] += add;
          }
        }
      }
  }
}

void nchw_backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx) {
  const int64_t K = p.k, RS = p.r * p.s, CRS = p.c * RS, H = p.h, W = p.w, PQ = p.p() * p.q();
  const OpScope op(OpCode::bwd_dx_convgemm);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < p.n; ++n) {
    float* dxn = dx + n * p.c * H * W;
    std::memset(dxn, 0, p.c * H * W * sizeof(float));
    alignas(64) float tile[kMR * kNR];
    for (int64_t u0 = 0; u0 < CRS; u0 += kMR) {
      const int mr = static_cast<int>(std::min<int64_t>(kMR, CRS - u0));
      for (int64_t pq0 = 0; pq0 < PQ; pq0 += kNR) {
        const PixelBlock px(p, pq0);
        const Segment s{w + u0, dy + n * K * PQ + pq0, K};
        tile_segments_any(mr, px.cols < kNR, &s, 1, 0, 0, CRS, PQ, px.cols, false, tile, kNR);
        // col2im: row u = (c, r, s) of the tile adds to dx[c][ih0 + r*dil_h][iw0 + s*dil_w], run by run.
        for (int i = 0; i < mr; ++i) {
          const int64_t u = u0 + i, c = u / RS, r = u % RS / p.s, sx = u % p.s;
          for (int t = 0; t < px.runs; ++t) {
            const int64_t ih = px.ih0[t] + r * p.dil_h;
            if (ih < 0 || ih >= H) continue;
            const int64_t iw0 = px.iw0[t] + sx * p.dil_w, len = px.start[t + 1] - px.start[t];
            int64_t lo, hi;
            inside(iw0, p.stride_w, len, W, &lo, &hi);
            float* drow = dxn + (c * H + ih) * W + iw0 + lo * p.stride_w;  // dx column of pixel lo (inside)
            const float* src = tile + i * kNR + px.start[t] + lo;
            if (p.stride_w == 1) {
#pragma omp simd
              for (int64_t jj = 0; jj < hi - lo; ++jj) drow[jj] += src[jj];
            } else {
              for (int64_t jj = 0; jj < hi - lo; ++jj) drow[jj * p.stride_w] += src[jj];
            }
          }
        }
      }
    }
  }
}

void nchw_backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* ws) {
  const int64_t K = p.k, CRS = p.c * p.r * p.s, PQ = p.p() * p.q(), RS = p.r * p.s;
  if (p.n == 0) {  // no samples: the gradient is zero
    std::fill(dw, dw + p.w_numel(), 0.0f);
    return;
  }
  float* dyt = ws;  // dyt[n][pq][k] = dy[n][k][pq]
  OpScope op(OpCode::bwd_transpose_dy);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const float* src = dy + (n * K + k) * PQ;
      float* dst = dyt + n * PQ * K + k;
      for (int64_t pq = 0; pq < PQ; ++pq) dst[pq * K] = src[pq];
    }
  const int64_t ublocks = div_up(CRS, kNR), kpanels = div_up(K, kMR), P = p.p(), Q = p.q();
  op.next(OpCode::bwd_dw_convgemm);
#pragma omp parallel num_threads(cpu::threads())
  {
    float* panel = ws + round_up(p.y_numel(), 16) + omp_get_thread_num() * filter_thread_floats(p);
    float* edge = panel + round_up(PQ * kNR, 16);  // kpanels x (6 x 16): the task's tiles when not whole
#pragma omp for schedule(dynamic)
    for (int64_t ub = 0; ub < ublocks; ++ub) {
      const int64_t u0 = ub * kNR;
      const int nb = static_cast<int>(std::min<int64_t>(kNR, CRS - u0));
      int64_t c_[kNR], r_[kNR], s_[kNR];
      for (int j = 0; j < nb; ++j) c_[j] = (u0 + j) / RS, r_[j] = (u0 + j) % RS / p.s, s_[j] = (u0 + j) % p.s;
      for (int j = nb; j < kNR; ++j)  // columns past CRS stay zero for every sample
        for (int64_t pq = 0; pq < PQ; ++pq) panel[pq * kNR + j] = 0.0f;
      for (int64_t n = 0; n < p.n; ++n) {
        // panel[pq*16 + j] = im2col(x_n)[u0 + j][pq]: column j at a time, along the input rows.
        const float* xn = x + n * p.c * p.h * p.w;
        for (int j = 0; j < nb; ++j) {
          float* d = panel + j;
          int64_t lo, hi;
          const int64_t iw0 = s_[j] * p.dil_w - p.pad_w;
          inside(iw0, p.stride_w, Q, p.w, &lo, &hi);
          for (int64_t oh = 0; oh < P; ++oh, d += Q * kNR) {
            const int64_t ih = oh * p.stride_h - p.pad_h + r_[j] * p.dil_h;
            if (ih < 0 || ih >= p.h) {
              for (int64_t ow = 0; ow < Q; ++ow) d[ow * kNR] = 0.0f;
              continue;
            }
            const float* src = xn + (c_[j] * p.h + ih) * p.w + iw0 + lo * p.stride_w;  // pixel lo (inside)
            for (int64_t ow = 0; ow < lo; ++ow) d[ow * kNR] = 0.0f;
            for (int64_t ow = lo; ow < hi; ++ow) d[ow * kNR] = src[(ow - lo) * p.stride_w];
            for (int64_t ow = hi; ow < Q; ++ow) d[ow * kNR] = 0.0f;
          }
        }
        const Segment s{dyt + n * PQ * K, panel, PQ};
        for (int64_t kp = 0; kp < kpanels; ++kp) {
          const int mr = static_cast<int>(std::min<int64_t>(kMR, K - kp * kMR));
          const bool whole = mr == kMR && nb == kNR;
          float* out = whole ? dw + kp * kMR * CRS + u0 : edge + kp * kMR * kNR;
          tile_segments_any(mr, false, &s, 1, kp * kMR, 0, K, kNR, kNR, n > 0, out, whole ? CRS : kNR);
        }
      }
      for (int64_t kp = 0; kp < kpanels; ++kp) {
        const int mr = static_cast<int>(std::min<int64_t>(kMR, K - kp * kMR));
        if (mr == kMR && nb == kNR) continue;
        for (int i = 0; i < mr; ++i)
          std::memcpy(dw + (kp * kMR + i) * CRS + u0, edge + (kp * kMR + i) * kNR, nb * sizeof(float));
      }
    }
  }
}

}  // namespace dtnn::convgemm
