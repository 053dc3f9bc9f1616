// cpu.direct: vectorised direct convolution for NHWC with no workspace at all (workspace_floats() == 0):
// every direction reads x, w and dy where they lie. It is the option for layers where a GEMM formulation
// wastes its tiles or its im2row copy: few input channels (first layers, C = 1 or 3), few output channels,
// grouped layers (any groups, any stride, padding and dilation).
//
//   forward          a register tile of MR <= 6 consecutive output pixels of a row x 16 output channels,
//                    summed over the taps and the group's input channels: per input channel, MR broadcasts
//                    of x and two weight vectors (w is (C/G, R, S, K): output channels are contiguous) feed
//                    2*MR FMAs. Pixels whose taps all land inside the input go in blocks of 6, the few border
//                    pixels one at a time with their own valid taps. Threads split output rows.
//   backward_data    dx[c] of an input pixel is a dot product over the output channels of the dy pixels its
//                    taps reach: a 4-channel x 3-pixel tile of vector accumulators runs along k (dy and w are
//                    both contiguous in k) and is reduced horizontally once, at the end. The 3 pixels are one
//                    stride apart (the same stride phase, so the same taps). Threads split input rows.
//   backward_filter  per tap, a 6-channel x 16-output-channel tile summed over every output pixel whose tap
//                    lands inside the input (runs of a row), with convgemm's segment kernel. Tiles (group,
//                    tap, channel block, output-channel block) are split between threads and each is summed in
//                    one fixed order, so results do not depend on the thread count. Few input channels
//                    (C < 6, dil_w == 1): the tile's rows are (s, c) pairs of one filter row instead
//                    (backward_filter_few_channels), so a 3-channel first layer fills its 6 rows.
#include <algorithm>
#include <cstring>
#include <utility>

#include "backend/cpu/blas.h"
#include "conv/cpu/convgemm_kernels.h"
#include "conv/cpu/cpu_algorithms.h"
#include "trace/op_trace.h"

#include <immintrin.h>

namespace dtnn {
namespace {

constexpr int kMaxTaps = 64;  // taps per kernel call; larger filters are summed in several calls

// Output positions o (of `out`) whose tap t lands inside [0, in): o*stride - pad + t*dil in [0, in).
// Empty when *lo > *hi.
inline void valid_range(int64_t t, int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t dil, int64_t* lo,
                        int64_t* hi) {
  const int64_t off = t * dil - pad;  // input index = o*stride + off
  *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  *hi = off >= in ? -1 : std::min(out - 1, (in - 1 - off) / stride);
}

// Output columns [*qa, *qb) whose S taps all land inside the input row (empty: *qa == *qb).
inline void interior_columns(const ConvProblem& p, int64_t* qa, int64_t* qb) {
  *qa = 0, *qb = p.q();
  for (int64_t s = 0; s < p.s; ++s) {
    int64_t lo, hi;
    valid_range(s, p.w, p.q(), p.stride_w, p.pad_w, p.dil_w, &lo, &hi);
    *qa = std::max(*qa, lo);
    *qb = std::min(*qb, hi + 1);
  }
  if (*qb < *qa) *qb = *qa;
}

inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// ---- kernels ----
// fwd_tile: y[i*ystep + j] = init_j + sum_{t < ntaps} sum_{c < C} x[xoff[t] + i*xstep + c] * w[woff[t] + c*wstep + j]
//   for pixels i < MR and output channels j < nb (NV vectors of 8; kMasked: nb < 8*NV, the rest untouched);
//   init_j = y[i*ystep + j] when accumulate, else bias[j] (0 when bias is null).
// bwd_data_tile: dx[j*dxstep + c] = sum_t sum_{k < K} dy[dyoff[t] + j*dystep + k] * w[woff[t] + c*wcstep + k]
//   for channels c < MC <= 4 and pixels j < MP <= 3; overwrites dx.

inline __m256i lane_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#define DTNN_PIXELS(X) X(0) X(1) X(2) X(3) X(4) X(5)

template <int MR, int NV, bool kMasked>
void fwd_tile(int ntaps, const int64_t* xoff, const int64_t* woff, const float* x, const float* w, int64_t C,
              int64_t xstep, int64_t wstep, bool accumulate, const float* bias, float* y, int64_t ystep, int nb) {
  static_assert(MR >= 1 && MR <= 6 && (NV == 1 || NV == 2), "fwd_tile: MR <= 6 pixels, 1 or 2 vectors");
  const __m256i m0 = kMasked ? lane_mask(nb) : _mm256_set1_epi32(-1);
  const __m256i m1 = kMasked ? lane_mask(nb - 8) : _mm256_set1_epi32(-1);
  auto load = [&](const float* p, int v) {
    if constexpr (kMasked) return _mm256_maskload_ps(p, v == 0 ? m0 : m1);
    return _mm256_loadu_ps(p);
  };
  const __m256 z = _mm256_setzero_ps();
  const __m256 b0 = bias ? load(bias, 0) : z, b1 = bias && NV == 2 ? load(bias + 8, 1) : z;
#define DTNN_DECL(i)                                                                     \
  __m256 c##i##0 = accumulate && (i) < MR ? load(y + (i) * ystep, 0) : b0;               \
  __m256 c##i##1 = accumulate && (i) < MR && NV == 2 ? load(y + (i) * ystep + 8, 1) : b1;
  DTNN_PIXELS(DTNN_DECL)
#undef DTNN_DECL
  for (int t = 0; t < ntaps; ++t) {
    const float* a = x + xoff[t];
    const float* wp = w + woff[t];
#pragma GCC unroll 2
    for (int64_t c = 0; c < C; ++c) {
      const __m256 w0 = load(wp, 0);
      const __m256 w1 = NV == 2 ? load(wp + 8, 1) : z;
#define DTNN_FMA(i)                                           \
  if constexpr ((i) < MR) {                                   \
    const __m256 av = _mm256_broadcast_ss(a + (i) * xstep);   \
    c##i##0 = _mm256_fmadd_ps(av, w0, c##i##0);               \
    if constexpr (NV == 2) c##i##1 = _mm256_fmadd_ps(av, w1, c##i##1); \
  }
      DTNN_PIXELS(DTNN_FMA)
#undef DTNN_FMA
      ++a;
      wp += wstep;
    }
  }
#define DTNN_STORE(i)                                                                \
  if constexpr ((i) < MR) {                                                          \
    if constexpr (kMasked) {                                                         \
      _mm256_maskstore_ps(y + (i) * ystep, m0, c##i##0);                             \
      if constexpr (NV == 2) _mm256_maskstore_ps(y + (i) * ystep + 8, m1, c##i##1);  \
    } else {                                                                         \
      _mm256_storeu_ps(y + (i) * ystep, c##i##0);                                    \
      if constexpr (NV == 2) _mm256_storeu_ps(y + (i) * ystep + 8, c##i##1);         \
    }                                                                                \
  }
  DTNN_PIXELS(DTNN_STORE)
#undef DTNN_STORE
}
#undef DTNN_PIXELS

// Sums of the 8 lanes of a, b, c, d as one 4-vector.
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

#define DTNN_TILE(X) X(0, 0) X(0, 1) X(0, 2) X(1, 0) X(1, 1) X(1, 2) X(2, 0) X(2, 1) X(2, 2) X(3, 0) X(3, 1) X(3, 2)

template <int MC, int MP>
void bwd_data_tile(int ntaps, const int64_t* dyoff, const int64_t* woff, const float* dy, const float* w, int64_t K,
                   int64_t dystep, int64_t wcstep, float* dx, int64_t dxstep) {
  static_assert(MC >= 1 && MC <= 4 && MP >= 1 && MP <= 3, "bwd_data_tile: MC <= 4 channels, MP <= 3 pixels");
#define DTNN_DECL(c, j) __m256 a##c##j = _mm256_setzero_ps();
  DTNN_TILE(DTNN_DECL)
#undef DTNN_DECL
  const int64_t kfull = K & ~int64_t{7};
  const __m256i tail = lane_mask(static_cast<int>(K - kfull));
  for (int t = 0; t < ntaps; ++t) {
    const float* d = dy + dyoff[t];
    const float* wp = w + woff[t];
    auto step = [&](int64_t k, bool masked) {
      __m256 g[3], v[4];
      for (int j = 0; j < MP; ++j)
        g[j] = masked ? _mm256_maskload_ps(d + j * dystep + k, tail) : _mm256_loadu_ps(d + j * dystep + k);
      for (int c = 0; c < MC; ++c)
        v[c] = masked ? _mm256_maskload_ps(wp + c * wcstep + k, tail) : _mm256_loadu_ps(wp + c * wcstep + k);
#define DTNN_FMA(c, j) \
  if constexpr ((c) < MC && (j) < MP) a##c##j = _mm256_fmadd_ps(v[c], g[j], a##c##j);
      DTNN_TILE(DTNN_FMA)
#undef DTNN_FMA
    };
    for (int64_t k = 0; k < kfull; k += 8) step(k, false);
    if (kfull < K) step(kfull, true);
  }
  const __m128i cmask = _mm_cmpgt_epi32(_mm_set1_epi32(MC), _mm_setr_epi32(0, 1, 2, 3));
  auto put = [&](int j, __m128 sums) {
    if constexpr (MC == 4) _mm_storeu_ps(dx + j * dxstep, sums);
    else _mm_maskstore_ps(dx + j * dxstep, cmask, sums);
  };
  put(0, hsum4(a00, a10, a20, a30));
  if constexpr (MP > 1) put(1, hsum4(a01, a11, a21, a31));
  if constexpr (MP > 2) put(2, hsum4(a02, a12, a22, a32));
}
#undef DTNN_TILE


// Run-time choice of the kernels' compile-time shapes.
using FwdTile = void (*)(int, const int64_t*, const int64_t*, const float*, const float*, int64_t, int64_t, int64_t,
                         bool, const float*, float*, int64_t, int);
template <int MR>
FwdTile fwd_tile_for(int nb) {
  if (nb == 16) return fwd_tile<MR, 2, false>;
  if (nb == 8) return fwd_tile<MR, 1, false>;
  return nb < 8 ? fwd_tile<MR, 1, true> : fwd_tile<MR, 2, true>;
}
FwdTile fwd_tile_for(int mr, int nb) {
  switch (mr) {
    case 1: return fwd_tile_for<1>(nb);
    case 2: return fwd_tile_for<2>(nb);
    case 3: return fwd_tile_for<3>(nb);
    case 4: return fwd_tile_for<4>(nb);
    case 5: return fwd_tile_for<5>(nb);
    default: return fwd_tile_for<6>(nb);
  }
}

using BwdDataTile = void (*)(int, const int64_t*, const int64_t*, const float*, const float*, int64_t, int64_t,
                             int64_t, float*, int64_t);
template <int MC>
BwdDataTile bwd_data_tile_for(int mp) {
  return mp == 1 ? bwd_data_tile<MC, 1> : mp == 2 ? bwd_data_tile<MC, 2> : bwd_data_tile<MC, 3>;
}
BwdDataTile bwd_data_tile_for(int mc, int mp) {
  switch (mc) {
    case 1: return bwd_data_tile_for<1>(mp);
    case 2: return bwd_data_tile_for<2>(mp);
    case 3: return bwd_data_tile_for<3>(mp);
    default: return bwd_data_tile_for<4>(mp);
  }
}

class Direct final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.direct"; }
  Support supports(const ConvProblem& p) const override {
    if (p.layout != Layout::nhwc) return Support::no("cpu.direct: needs NHWC (channels innermost)");
    return Support::yes();
  }
  int64_t workspace_floats(const ConvProblem&) const override { return 0; }
  // Tracing (trace/op_trace.h): one event per direction (its loops), and backward_filter's bias sum.
  int64_t op_events(const ConvProblem&, ConvDir dir) const override { return dir == ConvDir::bwd_filter ? 2 : 1; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float*) const override {
    const int64_t C = p.c, K = p.k, Cg = C / p.groups, Kg = K / p.groups, P = p.p(), Q = p.q();
    int64_t qa, qb;
    interior_columns(p, &qa, &qb);
    const OpScope op(OpCode::fwd_direct);
#pragma omp parallel for collapse(2) schedule(static) num_threads(cpu::threads())
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t oh = 0; oh < P; ++oh) {
        int64_t xoff[kMaxTaps], woff[kMaxTaps];
        float* yrow = y + (n * P + oh) * Q * K;
        for (int64_t q = 0; q < Q;) {
          const bool inside = q >= qa && q < qb;
          const int mr = inside ? static_cast<int>(std::min<int64_t>(6, qb - q)) : 1;
          // Taps (r, s) valid for all mr pixels, in chunks of kMaxTaps.
          int64_t tap = 0;
          bool first = true;
          for (;;) {
            int ntaps = 0;
            for (; tap < p.r * p.s && ntaps < kMaxTaps; ++tap) {
              const int64_t r = tap / p.s, s = tap % p.s;
              const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
              const int64_t iw = q * p.stride_w - p.pad_w + s * p.dil_w;
              if (ih < 0 || ih >= p.h || (!inside && (iw < 0 || iw >= p.w))) continue;
              xoff[ntaps] = ((n * p.h + ih) * p.w + iw) * C;
              woff[ntaps++] = (r * p.s + s) * K;
            }
            if (ntaps > 0 || first) {
              for (int64_t g = 0; g < p.groups; ++g)
                for (int64_t k0 = g * Kg; k0 < (g + 1) * Kg; k0 += 16) {
                  const int nb = static_cast<int>(std::min<int64_t>(16, (g + 1) * Kg - k0));
                  fwd_tile_for(mr, nb)(ntaps, xoff, woff, x + g * Cg, w + k0, Cg, p.stride_w * C, p.r * p.s * K,
                                       !first, bias ? bias + k0 : nullptr, yrow + q * K + k0, K, nb);
                }
            }
            first = false;
            if (tap >= p.r * p.s) break;
          }
          q += mr;
        }
      }
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float*) const override {
    const int64_t C = p.c, K = p.k, Cg = C / p.groups, Kg = K / p.groups, P = p.p(), Q = p.q();
    const int64_t RSK = p.r * p.s * K, phases = std::min(p.stride_w, p.w);
    const OpScope op(OpCode::bwd_dx_direct);
#pragma omp parallel for collapse(2) schedule(static) num_threads(cpu::threads())
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t ih = 0; ih < p.h; ++ih) {
        int64_t dyoff[kMaxTaps], woff[kMaxTaps];
        float* dxrow = dx + (n * p.h + ih) * p.w * C;
        for (int64_t phase = 0; phase < phases; ++phase) {
          // Pixels iw = phase + j*stride_w (j < J); tap s reaches output column ow = t0(s) + j when
          // phase + pad_w - s*dil_w is a multiple of the stride.
          const int64_t J = (p.w - phase + p.stride_w - 1) / p.stride_w;
          int64_t ja = 0, jb = J;  // pixels every reaching tap keeps inside the output row
          for (int64_t s = 0; s < p.s; ++s) {
            const int64_t t = phase + p.pad_w - s * p.dil_w;
            if (((t % p.stride_w) + p.stride_w) % p.stride_w != 0) continue;
            const int64_t t0 = floor_div(t, p.stride_w);
            ja = std::max(ja, -t0);
            jb = std::min(jb, Q - t0);
          }
          if (jb < ja) jb = ja;
          for (int64_t j = 0; j < J;) {
            const bool inside = j >= ja && j < jb;
            const int mp = inside ? static_cast<int>(std::min<int64_t>(3, jb - j)) : 1;
            const int64_t iw = phase + j * p.stride_w;
            int64_t tap = 0;
            bool first = true;
            for (;;) {
              int ntaps = 0;
              for (; tap < p.r * p.s && ntaps < kMaxTaps; ++tap) {
                const int64_t r = tap / p.s, s = tap % p.s;
                const int64_t th = ih + p.pad_h - r * p.dil_h, tw = iw + p.pad_w - s * p.dil_w;
                if (th < 0 || th % p.stride_h != 0 || th / p.stride_h >= P) continue;
                if (((tw % p.stride_w) + p.stride_w) % p.stride_w != 0) continue;
                const int64_t ow = floor_div(tw, p.stride_w);
                if (!inside && (ow < 0 || ow >= Q)) continue;
                dyoff[ntaps] = ((n * P + th / p.stride_h) * Q + ow) * K;
                woff[ntaps++] = (r * p.s + s) * K;
              }
              for (int64_t g = 0; g < p.groups; ++g)
                for (int64_t c0 = 0; c0 < Cg; c0 += 4) {
                  const int mc = static_cast<int>(std::min<int64_t>(4, Cg - c0));
                  float* out = dxrow + iw * C + g * Cg + c0;
                  if (first) {
                    bwd_data_tile_for(mc, mp)(ntaps, dyoff, woff, dy + g * Kg, w + c0 * RSK + g * Kg, Kg, K, RSK,
                                              out, p.stride_w * C);
                    continue;
                  }
                  float part[3 * 4];  // a later chunk of taps: add its sums
                  bwd_data_tile_for(mc, mp)(ntaps, dyoff, woff, dy + g * Kg, w + c0 * RSK + g * Kg, Kg, K, RSK, part,
                                            4);
                  for (int jj = 0; jj < mp; ++jj)
                    for (int c = 0; c < mc; ++c) out[jj * p.stride_w * C + c] += part[jj * 4 + c];
                }
              first = false;
              if (tap >= p.r * p.s) break;
            }
            j += mp;
          }
        }
      }
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float*) const override {
    OpScope op(OpCode::bwd_dw_direct);
    if (few_channels(p)) backward_filter_few_channels(p, x, dy, dw);
    else backward_filter_per_tap(p, x, dy, dw);
    op.next(db ? OpCode::bwd_bias : OpCode::none);
    if (db) conv_sum_bias(p, dy, db, 0, p.n * p.p() * p.q(), false);
  }

 private:
  // Tiles of (tap, 6 input channels of a group, 16 output channels), each summed over all output pixels.
  static void backward_filter_per_tap(const ConvProblem& p, const float* x, const float* dy, float* dw) {
    const int64_t C = p.c, K = p.k, Cg = C / p.groups, Kg = K / p.groups, P = p.p(), Q = p.q();
    const int64_t RS = p.r * p.s, RSK = RS * K;
    const int64_t cblocks = (Cg + convgemm::kMR - 1) / convgemm::kMR, kblocks = (Kg + convgemm::kNR - 1) / convgemm::kNR;
    const int64_t tasks = p.groups * RS * cblocks * kblocks;
#pragma omp parallel for schedule(dynamic) num_threads(cpu::threads())
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t kb = task % kblocks, cb = task / kblocks % cblocks, tap = task / (kblocks * cblocks) % RS,
                    g = task / (kblocks * cblocks * RS);
      const int64_t r = tap / p.s, s = tap % p.s, c0 = cb * convgemm::kMR, k0 = kb * convgemm::kNR;
      const int mr = static_cast<int>(std::min<int64_t>(convgemm::kMR, Cg - c0));
      const int nb = static_cast<int>(std::min<int64_t>(convgemm::kNR, Kg - k0));
      float* dst = dw + (c0 * RS + tap) * K + g * Kg + k0;
      // The kernel writes whole 6 x 16 tiles: edge tiles go through a scratch tile.
      const bool whole = mr == convgemm::kMR && nb == convgemm::kNR;
      alignas(64) float scratch[convgemm::kMR * convgemm::kNR];
      float* out = whole ? dst : scratch;
      const int64_t ldo = whole ? RSK : convgemm::kNR;
      int64_t ow0, ow1;
      valid_range(s, p.w, Q, p.stride_w, p.pad_w, p.dil_w, &ow0, &ow1);
      constexpr int kSegs = 128;
      convgemm::Segment segs[kSegs];
      int nsegs = 0;
      bool accumulate = false;
      auto flush = [&] {
        convgemm::tile_segments_any(mr, nb < convgemm::kNR, segs, nsegs, c0, k0, p.stride_w * C, K, nb, accumulate,
                                    out, ldo);
        accumulate = true;
        nsegs = 0;
      };
      if (ow0 <= ow1)
        for (int64_t n = 0; n < p.n; ++n)
          for (int64_t oh = 0; oh < P; ++oh) {
            const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
            if (ih < 0 || ih >= p.h) continue;
            const int64_t iw = ow0 * p.stride_w - p.pad_w + s * p.dil_w;
            segs[nsegs++] = {x + ((n * p.h + ih) * p.w + iw) * C + g * Cg, dy + ((n * P + oh) * Q + ow0) * K + g * Kg,
                             ow1 - ow0 + 1};
            if (nsegs == kSegs) flush();
          }
      if (nsegs > 0 || !accumulate) flush();
      if (!whole)
        for (int i = 0; i < mr; ++i) std::memcpy(dst + i * RSK, scratch + i * convgemm::kNR, nb * sizeof(float));
    }
  }

  // Few input channels (C < 6, first layers): a per-tap tile would leave most of its 6 rows empty. With
  // dil_w == 1 the S taps of a filter row read S*C consecutive floats of x (pixel ow*stride_w - pad_w
  // onwards), so the tiles' rows are (s, c) pairs of one filter row r: row i = s*C + c. Columns [qa, qb),
  // where every tap lands inside the input, run as segments (one per output row) over those S*C floats;
  // each border column afterwards adds the rows of its valid taps, with segments running down the
  // column (one per sample). A task (r, 16 output channels) keeps all its row blocks' tiles in memory and
  // feeds each chunk of output rows to all of them while that chunk of dy is in cache (the layer is
  // otherwise bound by streaming dy once per tile).
  static constexpr int64_t kFewChannelBlocks = 8;  // S*C <= 48 rows
  static bool few_channels(const ConvProblem& p) {
    return p.groups == 1 && p.dil_w == 1 && p.c < convgemm::kMR && p.s > 1 &&
           p.s * p.c <= kFewChannelBlocks * convgemm::kMR;
  }
  static void backward_filter_few_channels(const ConvProblem& p, const float* x, const float* dy, float* dw) {
    constexpr int kMR = convgemm::kMR, kNR = convgemm::kNR;
    const int64_t C = p.c, K = p.k, P = p.p(), Q = p.q(), SC = p.s * C;
    int64_t qa, qb;
    interior_columns(p, &qa, &qb);
    const int64_t rblocks = (SC + kMR - 1) / kMR, kblocks = (K + kNR - 1) / kNR;
#pragma omp parallel for schedule(dynamic) num_threads(cpu::threads())
    for (int64_t task = 0; task < p.r * kblocks; ++task) {
      const int64_t kb = task % kblocks, r = task / kblocks, k0 = kb * kNR;
      const int nb = static_cast<int>(std::min<int64_t>(kNR, K - k0));
      alignas(64) float tiles[kFewChannelBlocks][kMR * kNR], row[kMR * kNR];
      constexpr int kSegs = 32;  // segments per kernel call: output rows (interior), samples (border columns)
      convgemm::Segment segs[kSegs];
      int nsegs = 0;
      bool started = false;
      auto flush_tiles = [&] {
        for (int64_t rb = 0; rb < rblocks; ++rb)
          convgemm::tile_segments_any(static_cast<int>(std::min<int64_t>(kMR, SC - rb * kMR)), nb < kNR, segs, nsegs,
                                      rb * kMR, k0, p.stride_w * C, K, nb, started, tiles[rb], kNR);
        started = true;
        nsegs = 0;
      };
      for (int64_t n = 0; n < p.n && qa < qb; ++n)
        for (int64_t oh = 0; oh < P; ++oh) {
          const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dil_h;
          if (ih < 0 || ih >= p.h) continue;
          segs[nsegs++] = {x + ((n * p.h + ih) * p.w + qa * p.stride_w - p.pad_w) * C,
                           dy + ((n * P + oh) * Q + qa) * K, qb - qa};
          if (nsegs == kSegs) flush_tiles();
        }
      if (nsegs > 0 || !started) flush_tiles();
      // Border columns: the taps valid at column ow are a range [s_lo, s_hi], i.e. the rows
      // [s_lo*C, (s_hi+1)*C); one segment per sample runs down the column (steps of a row of x and of dy).
      int64_t oh0, oh1;
      valid_range(r, p.h, P, p.stride_h, p.pad_h, p.dil_h, &oh0, &oh1);
      for (int64_t ow = 0; ow < Q && oh0 <= oh1 && p.n > 0; ++ow) {
        if (ow == qa) ow = std::max(qa, qb);
        if (ow >= Q) break;
        const int64_t iw0 = ow * p.stride_w - p.pad_w;  // input column of tap s: iw0 + s
        const int64_t s_lo = std::max<int64_t>(0, -iw0), s_hi = std::min(p.s - 1, p.w - 1 - iw0);
        if (s_lo > s_hi) continue;
        const int64_t i_lo = s_lo * C, i_hi = (s_hi + 1) * C;
        for (int64_t rb = i_lo / kMR; rb * kMR < i_hi; ++rb) {
          const int64_t first = std::max(i_lo, rb * kMR), last = std::min(i_hi, rb * kMR + kMR);
          for (int64_t n0 = 0; n0 < p.n; n0 += kSegs) {
            for (int64_t n = n0; n < std::min(p.n, n0 + kSegs); ++n)
              segs[n - n0] = {x + ((n * p.h + oh0 * p.stride_h - p.pad_h + r * p.dil_h) * p.w + iw0 + s_lo) * C,
                              dy + ((n * P + oh0) * Q + ow) * K, oh1 - oh0 + 1};
            convgemm::tile_segments_any(static_cast<int>(last - first), nb < kNR, segs,
                                        static_cast<int>(std::min<int64_t>(kSegs, p.n - n0)), first - i_lo, k0,
                                        p.stride_h * p.w * C, Q * K, nb, n0 > 0, row, kNR);
          }
          for (int64_t i = first; i < last; ++i)
            for (int j = 0; j < nb; ++j) tiles[i / kMR][(i % kMR) * kNR + j] += row[(i - first) * kNR + j];
        }
      }
      for (int64_t i = 0; i < SC; ++i) {
        const int64_t s = i / C, c = i % C;
        std::memcpy(dw + ((c * p.r + r) * p.s + s) * K + k0, tiles[i / kMR] + (i % kMR) * kNR, nb * sizeof(float));
      }
    }
  }
};

}  // namespace

const ConvAlgorithm& conv_direct() {
  static const Direct algo;
  return algo;
}

}  // namespace dtnn
