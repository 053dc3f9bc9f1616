// cpu.convgemm: NHWC convolution as an implicit GEMM with dtnn's own AVX2/FMA register tiles and OpenMP
// threads; no im2row matrix exists, not even a chunk of one. (NCHW problems go to convgemm_nchw.cpp.)
//
// Forward is the GEMM Y[M x K] = A[M x RSC] . B[RSC x K] with M = N*P*Q output pixels. B (the weights) is
// packed once per call into 16-column panels. A is never copied: the im2row transform is fused into the
// A operand's addressing. For a tile of 6 output pixels the "packed A panel" is a table of 6 row pointers per
// filter tap (each pointing at C contiguous input channels, or at a zero row for padding), and the
// 6 x 16 register tile (convgemm_kernels.h) streams C channels through each tap's pointers. Taps where
// all six pixels fall into padding are dropped from the table. The pointer tables of a block of tiles are
// built once and reused for every 16-column panel (loop order: pixel block, panel, tile).
// Compared with packing a copied A panel, this skips a strided transpose of every A element (measured:
// with K = 64 each A element feeds only 64 multiply-adds, so a copy costs a large share of the time).
//
// backward_data is the same gather with the roles of x/y and C/K swapped: for stride 1 it is the forward
// convolution of dy with the transposed weights (pad' = dil*(R-1) - pad). For stride s > 1, the output
// pixels of dx split into s_h x s_w phases (h mod s_h, w mod s_w); each phase is a stride-1 gather over
// the filter taps that reach it, so no zero-inserted dy and no col2im scatter exist either.
//
// backward_filter computes dW^T[K x RSC] = dy^T[K x M] . A[M x RSC] with 6 x 16 tiles of (output channel,
// input channel) per tap, reducing over all pixels. Both operands are read in place: per image row and
// tap, one segment of dy pixels and the matching run of x pixels (the padding is excluded from the run,
// not multiplied by zeros). Pixels are processed in blocks of image rows sized for L2, and every tile's
// partial sum stays in a padded dW^T buffer in the workspace; a final pass reorders it to (C, R, S, K).
//
// Threads (cpu::threads(), OpenMP): forward/backward_data split the pixel tiles, backward_filter splits the
// weight tiles; no two threads write the same output, so there are no reductions or locks.
//
// Tracing (trace/op_trace.h): forward reshape_w (the panels), convgemm; backward_data transpose_w, convgemm_dx
// (every stride phase); backward_filter convgemm_dw, reshape_dw (split at the region's barrier), bias.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/blas.h"
#include "conv/cpu/convgemm_kernels.h"
#include "conv/cpu/convgemm_nchw.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

using convgemm::kMR;
using convgemm::kNR;
using convgemm::Segment;

constexpr int kMaxTaps = 256;          // R*S limit (16 x 16 filters)
constexpr int64_t kBlockTiles = 16;    // pixel tiles per pointer-table block (96 output pixels)
constexpr int64_t kBlockBytes = 192 * 1024;  // backward_filter: x and dy bytes per block of image rows
constexpr int64_t kMaxBlockRows = 1024;      // backward_filter: image rows per block (segments on the stack)

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t div_up(int64_t v, int64_t m) { return (v + m - 1) / m; }

// ---- NHWC workspace layout (floats; every region starts 64-byte aligned) ----
// Only thread-independent buffers live in the workspace; each thread keeps its pointer tables, segment lists
// and edge tile on its own stack (at most ~220 KiB), so the NHWC workspace size does not depend on --threads
// (the NCHW half's does: convgemm_nchw.h).

struct GatherLayout {  // packed weight panels, padded bias, a zero row
  int64_t b = 0, init = 0, zero = 0, total = 0;
  GatherLayout(int64_t panels_floats, int64_t out_ch, int64_t in_ch) {
    init = round_up(panels_floats, 16);
    zero = init + round_up(out_ch, kNR);
    total = zero + round_up(in_ch, 16);
  }
};

GatherLayout forward_layout(const ConvProblem& p) {
  return GatherLayout(div_up(p.k, kNR) * p.r * p.s * p.c * kNR, p.k, p.c);
}
GatherLayout backward_data_layout(const ConvProblem& p) {
  return GatherLayout(div_up(p.c, kNR) * p.r * p.s * p.k * kNR, p.c, p.k);
}

int64_t filter_rows_per_block(const ConvProblem& p) {
  return std::clamp<int64_t>(kBlockBytes / (4 * p.q() * (p.k + p.stride_w * p.c)), 1, kMaxBlockRows);
}
int64_t filter_dwt_floats(const ConvProblem& p) { return round_up(p.k, kMR) * p.r * p.s * round_up(p.c, kNR); }

// ---- the gather (forward and backward_data) ----

// Output pixels (n, i, j) of a grid; pixel (i, j) is written to dst pixel (dst_y0 + i*dst_sy, dst_x0 +
// j*dst_sx) and reads, for tap t, src pixel (i*src_sy + tap_y[t], j*src_sx + tap_x[t]) (outside the
// source: zeros) against packed weight rows btap[t].
struct Gather {
  const float* src = nullptr;
  int64_t src_h = 0, src_w = 0, src_c = 0;
  float* dst = nullptr;
  int64_t dst_h = 0, dst_w = 0, dst_k = 0;
  int64_t n = 0, grid_h = 0, grid_w = 0;
  int64_t dst_y0 = 0, dst_x0 = 0, dst_sy = 1, dst_sx = 1;
  int64_t src_sy = 1, src_sx = 1;
  int ntaps = 0;
  int64_t tap_y[kMaxTaps] = {}, tap_x[kMaxTaps] = {};
  int btap[kMaxTaps] = {};
  const float* b = nullptr;  // ceil(dst_k/16) panels of panel_floats
  int64_t panel_floats = 0;
  const float* init = nullptr;  // round_up(dst_k, 16) floats or null
  const float* zero = nullptr;  // src_c zeros

  bool dense() const {
    return dst_y0 == 0 && dst_x0 == 0 && dst_sy == 1 && dst_sx == 1 && grid_h == dst_h && grid_w == dst_w;
  }
};

void run_gather(const Gather& g, int threads) {
  const int64_t M = g.n * g.grid_h * g.grid_w, tiles = div_up(M, kMR), panels = div_up(g.dst_k, kNR);
  const int64_t C = g.src_c, K = g.dst_k, ntaps_all = g.ntaps;
  const bool dense = g.dense();
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, div_up(tiles, 2))));
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t first = tiles * t / T, last = tiles * (t + 1) / T;
    const float* ptrs[kBlockTiles * kMaxTaps * kMR];  // per tile: ntaps_all x 6 row pointers
    int ints[kBlockTiles * (kMaxTaps + 1)];           // per tile: kept tap count, then their weight rows
    alignas(32) float tmp[kMR * kNR];
    int64_t dst_row[kMR];
    bool valid[kMR];
    for (int64_t b0 = first; b0 < last; b0 += kBlockTiles) {
      const int64_t nb = std::min<int64_t>(kBlockTiles, last - b0);
      for (int64_t bt = 0; bt < nb; ++bt) {  // pointer tables of this block
        const float** tp = ptrs + bt * ntaps_all * kMR;
        int* ti = ints + bt * (ntaps_all + 1);
        int64_t ni[kMR], ii[kMR], jj[kMR];
        for (int i = 0; i < kMR; ++i) {
          const int64_t m = (b0 + bt) * kMR + i;
          valid[i] = m < M;
          ni[i] = m / (g.grid_h * g.grid_w);
          ii[i] = (m / g.grid_w) % g.grid_h;
          jj[i] = m % g.grid_w;
        }
        int kept = 0;
        for (int tap = 0; tap < g.ntaps; ++tap) {
          bool any = false;
          const float** row = tp + kept * kMR;
          for (int i = 0; i < kMR; ++i) {
            const int64_t y = ii[i] * g.src_sy + g.tap_y[tap], x = jj[i] * g.src_sx + g.tap_x[tap];
            const bool inside = valid[i] && y >= 0 && y < g.src_h && x >= 0 && x < g.src_w;
            row[i] = inside ? g.src + ((ni[i] * g.src_h + y) * g.src_w + x) * C : g.zero;
            any |= inside;
          }
          if (any) ti[1 + kept++] = g.btap[tap];
        }
        ti[0] = kept;
      }
      for (int64_t jr = 0; jr < panels; ++jr) {
        const float* bp = g.b + jr * g.panel_floats;
        const float* init = g.init ? g.init + jr * kNR : nullptr;
        const int64_t ncols = std::min<int64_t>(kNR, K - jr * kNR);
        for (int64_t bt = 0; bt < nb; ++bt) {
          const int64_t m0 = (b0 + bt) * kMR;
          const int* ti = ints + bt * (ntaps_all + 1);
          const float* const* tp = ptrs + bt * ntaps_all * kMR;
          if (dense && ncols == kNR && m0 + kMR <= M) {
            convgemm::tile_gather(ti[0], tp, ti + 1, C, bp, init, g.dst + m0 * K + jr * kNR, K);
            continue;
          }
          convgemm::tile_gather(ti[0], tp, ti + 1, C, bp, init, tmp, kNR);
          for (int i = 0; i < kMR && m0 + i < M; ++i) {
            const int64_t m = m0 + i, n = m / (g.grid_h * g.grid_w), y = (m / g.grid_w) % g.grid_h, x = m % g.grid_w;
            dst_row[i] = ((n * g.dst_h + g.dst_y0 + y * g.dst_sy) * g.dst_w + g.dst_x0 + x * g.dst_sx) * K;
            std::memcpy(g.dst + dst_row[i] + jr * kNR, tmp + i * kNR, ncols * sizeof(float));
          }
        }
      }
    }
  }
}

// Packs B[(tap, c), k] = weight(k, c, tap) into 16-column panels; `get(c, tap, k)` reads one weight.
template <typename Get>
void pack_panels(int64_t in_ch, int64_t out_ch, int64_t taps, float* dst, Get&& get) {
  const int64_t panels = div_up(out_ch, kNR), panel_floats = taps * in_ch * kNR;
  for (int64_t jr = 0; jr < panels; ++jr)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t c = 0; c < in_ch; ++c) {
        float* d = dst + jr * panel_floats + (t * in_ch + c) * kNR;
        for (int64_t j = 0; j < kNR; ++j) {
          const int64_t k = jr * kNR + j;
          d[j] = k < out_ch ? get(c, t, k) : 0.0f;
        }
      }
}

// ---- backward_filter ----

class ConvGemm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.convgemm"; }

  Support supports(const ConvProblem& p) const override {
    if (p.groups != 1) return Support::no("convgemm: needs groups == 1");
    if (p.layout == Layout::nhwc && p.r * p.s > kMaxTaps)
      return Support::no("convgemm: NHWC filters up to 256 taps (16x16)");
    return Support::yes();
  }

  int64_t workspace_floats(const ConvProblem& p) const override {
    if (p.layout == Layout::nchw) return convgemm::nchw_workspace_floats(p);
    return std::max({forward_layout(p).total, backward_data_layout(p).total, filter_dwt_floats(p)});
  }

  int64_t op_events(const ConvProblem&, ConvDir dir) const override { return dir == ConvDir::bwd_filter ? 3 : 2; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    if (p.layout == Layout::nchw) return convgemm::nchw_forward(p, x, w, bias, y, ws);
    const GatherLayout L = forward_layout(p);
    const int64_t RS = p.r * p.s, C = p.c, K = p.k;
    OpScope op(OpCode::fwd_reshape_w);
    pack_panels(C, K, RS, ws + L.b, [&](int64_t c, int64_t t, int64_t k) { return w[(c * RS + t) * K + k]; });
    if (bias) {
      std::fill(ws + L.init, ws + L.init + round_up(K, kNR), 0.0f);
      std::copy(bias, bias + K, ws + L.init);
    }
    std::fill(ws + L.zero, ws + L.zero + C, 0.0f);
    Gather g;
    g.src = x, g.src_h = p.h, g.src_w = p.w, g.src_c = C;
    g.dst = y, g.dst_h = p.p(), g.dst_w = p.q(), g.dst_k = K;
    g.n = p.n, g.grid_h = p.p(), g.grid_w = p.q();
    g.src_sy = p.stride_h, g.src_sx = p.stride_w;
    g.ntaps = static_cast<int>(RS);
    for (int64_t r = 0; r < p.r; ++r)
      for (int64_t s = 0; s < p.s; ++s) {
        const int64_t t = r * p.s + s;
        g.tap_y[t] = r * p.dil_h - p.pad_h;
        g.tap_x[t] = s * p.dil_w - p.pad_w;
        g.btap[t] = static_cast<int>(t);
      }
    g.b = ws + L.b, g.panel_floats = RS * C * kNR;
    g.init = bias ? ws + L.init : nullptr;
    g.zero = ws + L.zero;
    op.next(OpCode::fwd_convgemm);
    run_gather(g, cpu::threads());
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    if (p.layout == Layout::nchw) return convgemm::nchw_backward_data(p, dy, w, dx);
    const GatherLayout L = backward_data_layout(p);
    const int64_t RS = p.r * p.s, C = p.c, K = p.k, P = p.p(), Q = p.q();
    // B[(tap, k), c] = w(c, tap, k): the gather reduces over dy's K channels and writes dx's C channels.
    OpScope op(OpCode::bwd_transpose_w);
    pack_panels(K, C, RS, ws + L.b, [&](int64_t k, int64_t t, int64_t c) { return w[(c * RS + t) * K + k]; });
    std::fill(ws + L.zero, ws + L.zero + K, 0.0f);
    Gather g;
    g.src = dy, g.src_h = P, g.src_w = Q, g.src_c = K;
    g.dst = dx, g.dst_h = p.h, g.dst_w = p.w, g.dst_k = C;
    g.n = p.n, g.dst_sy = p.stride_h, g.dst_sx = p.stride_w;
    g.src_sy = 1, g.src_sx = 1;
    g.b = ws + L.b, g.panel_floats = RS * K * kNR;
    g.zero = ws + L.zero;
    op.next(OpCode::bwd_dx_convgemm);
    // dx pixel h = a + stride*i receives tap r iff (a + pad - r*dil) is a multiple of the stride; it then
    // reads dy row i + (a + pad - r*dil) / stride.
    for (int64_t a = 0; a < std::min(p.stride_h, p.h); ++a)
      for (int64_t b = 0; b < std::min(p.stride_w, p.w); ++b) {
        g.dst_y0 = a, g.dst_x0 = b;
        g.grid_h = div_up(p.h - a, p.stride_h), g.grid_w = div_up(p.w - b, p.stride_w);
        g.ntaps = 0;
        for (int64_t r = 0; r < p.r; ++r) {
          const int64_t oy = a + p.pad_h - r * p.dil_h;
          if (oy % p.stride_h != 0) continue;
          for (int64_t s = 0; s < p.s; ++s) {
            const int64_t ox = b + p.pad_w - s * p.dil_w;
            if (ox % p.stride_w != 0) continue;
            g.tap_y[g.ntaps] = oy / p.stride_h;
            g.tap_x[g.ntaps] = ox / p.stride_w;
            g.btap[g.ntaps] = static_cast<int>(r * p.s + s);
            ++g.ntaps;
          }
        }
        run_gather(g, cpu::threads());
      }
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    if (p.layout == Layout::nchw) {
      convgemm::nchw_backward_filter(p, x, dy, dw, ws);
      const OpScope op(db ? OpCode::bwd_bias : OpCode::none);
      return conv_sum_bias(p, dy, db, 0, p.n, false);
    }
    OpScope op(OpCode::bwd_dw_convgemm);
    const int threads = cpu::threads();
    const int64_t RS = p.r * p.s, C = p.c, K = p.k, P = p.p(), Q = p.q();
    const int64_t kt_count = div_up(K, kMR), ct_count = div_up(C, kNR), Cpad = ct_count * kNR;
    const int64_t ldo = RS * Cpad;  // dW^T row (one output channel k): taps x padded input channels
    float* dwt = ws;
    const int64_t rows = p.n * P, rows_per_block = filter_rows_per_block(p);
    const int64_t tiles = RS * kt_count * ct_count;  // (tap, k tile, c tile)
    const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, tiles)));
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num(), T = omp_get_num_threads();
      const int64_t first = tiles * t / T, last = tiles * (t + 1) / T;
      Segment segs[kMaxBlockRows];
      for (int64_t row0 = 0; row0 < rows; row0 += rows_per_block) {
        const int64_t row1 = std::min(rows, row0 + rows_per_block);
        int64_t seg_tap = -1;
        int nsegs = 0;
        for (int64_t tile = first; tile < last; ++tile) {
          const int64_t tap = tile / (kt_count * ct_count), kt = (tile / ct_count) % kt_count, ct = tile % ct_count;
          if (tap != seg_tap) {  // the (dy run, x run) pairs of this tap over the block's image rows
            seg_tap = tap;
            nsegs = 0;
            const int64_t r = tap / p.s, s = tap % p.s, off = s * p.dil_w - p.pad_w;
            const int64_t lo = off >= 0 ? 0 : std::min(Q, (-off + p.stride_w - 1) / p.stride_w);
            const int64_t hi = p.w - off > 0 ? std::min(Q, (p.w - off - 1) / p.stride_w + 1) : 0;
            for (int64_t row = row0; row < row1 && hi > lo; ++row) {
              const int64_t n = row / P, oh = row % P, ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
              if (ih < 0 || ih >= p.h) continue;
              segs[nsegs++] = {dy + (row * Q + lo) * K, x + ((n * p.h + ih) * p.w + lo * p.stride_w + off) * C, hi - lo};
            }
          }
          const int mr = static_cast<int>(std::min<int64_t>(kMR, K - kt * kMR));
          const int nb = static_cast<int>(std::min<int64_t>(kNR, C - ct * kNR));
          convgemm::tile_segments_any(mr, nb < kNR, segs, nsegs, kt * kMR, ct * kNR, K, p.stride_w * C, nb, row0 > 0,
                          dwt + kt * kMR * ldo + tap * Cpad + ct * kNR, ldo);
        }
      }
      if (rows == 0)  // no pixels: the gradient is zero
        for (int64_t tile = first; tile < last; ++tile) {
          const int64_t tap = tile / (kt_count * ct_count), kt = (tile / ct_count) % kt_count, ct = tile % ct_count;
          convgemm::tile_segments_any(kMR, false, nullptr, 0, 0, 0, 0, 0, kNR, false, dwt + kt * kMR * ldo + tap * Cpad + ct * kNR, ldo);
        }
#pragma omp barrier
      if (t == 0) op.next(OpCode::bwd_reshape_dw);  // every thread's tiles are done (thread 0: the caller)
#pragma omp for schedule(static)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t tap = 0; tap < RS; ++tap)
          for (int64_t k = 0; k < K; ++k) dw[(c * RS + tap) * K + k] = dwt[k * ldo + tap * Cpad + c];
    }
    op.next(db ? OpCode::bwd_bias : OpCode::none);
    conv_sum_bias(p, dy, db, 0, p.n * P * Q, false);
  }
};

}  // namespace

const ConvAlgorithm& conv_convgemm() {
  static const ConvGemm algo;
  return algo;
}

}  // namespace dtnn
