// cpu.winograd_x16 and cpu.winograd_x16_f4: NHWC 3x3 stride-1 convolutions by Winograd F(2x2,3x3) and
// F(4x4,3x3) with AVX-512 or AVX2 kernels for channel counts in multiples of 16 (winograd_x16.h), all three
// directions:
//   forward        y = A^T [ (G g G^T) (.) (B^T x B) ] A per MxM output tile
//   backward_data  the forward algorithm on dy with the filters rotated by 180 degrees and C/K swapped,
//                  padding 2 - pad
//   backward_filter  dW = G^T [ sum over dy's tiles (A dy A^T) (.) (B^T x B) ] G, the transposed algorithm
// F(2x2,3x3) multiplies 16 times per 2x2 tile where direct convolution multiplies 36 (2.25x fewer), with
// transforms of additions only, and its rounding stays near direct convolution's; F(4x4,3x3) multiplies 36
// times per 4x4 tile (4x fewer) with longer transforms and about ten times the rounding (tolerance 1e-4, as
// cpu.winograd_f4 and oneDNN's). Written for the 16-channel layers that oneDNN's F(4x4,3x3) loses on; auto
// takes F(4x4,3x3) here for 3x3 stride-1 layers of 16 to 64 channels (results/baselines/conv_cpu_2core.md).
//
// Threads take contiguous ranges of tiles in blocks of kTiles; the weight gradient sums one transform-domain
// partial per thread, in thread order (equal across thread counts up to rounding, like cpu.winograd_f2's).
// Workspace: [U, or the summed weight gradient: points x C x K][per thread: forward, backward_data: the block
// buffer; backward_filter: the thread's partial sum, then the block buffer][forward_moments: each block's
// moments, as doubles]. forward_moments merges the blocks' moments in block order (core/moments.h).
// Tracing: the filter transform, then the tiles (forward, backward_data); the tiles, then the bias sum.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "backend/cpu/blas.h"
#include "conv/cpu/convgemm_kernels.h"
#include "conv/cpu/cpu_algorithms.h"
#include "conv/cpu/winograd_x16.h"
#include "core/moments.h"
#include "trace/op_trace.h"

namespace dtnn {

namespace {

using winograd_x16::kFilterTiles;
using winograd_x16::kTiles;
using winograd_x16::points;

// G of F(MxM,3x3), rows matching the kernels' B^T (winograd_x16_tiles.h): F(4x4,3x3)'s rows carry the
// inverse of the scaling that gave B^T integer rows.
template <int M>
struct Filters;
template <>
struct Filters<2> {
  static constexpr double g[4][3] = {{1.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0.0, 0.0, 1.0}};
};
template <>
struct Filters<4> {
  static constexpr double g[6][3] = {{1.0, 0.0, 0.0},           {1.0 / 6, 1.0 / 6, 1.0 / 6},
                                     {1.0 / 6, -1.0 / 6, 1.0 / 6}, {4.0 / 3, 2.0 / 3, 1.0 / 3},
                                     {4.0 / 3, -2.0 / 3, 1.0 / 3}, {0.0, 0.0, 0.25}};
};

int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }
template <int M>
int64_t tiles_of(int64_t n, int64_t p, int64_t q) {
  return n * ((p + M - 1) / M) * ((q + M - 1) / M);
}

// 16 filters' G g G^T, in double, rounded once: g(r, s)[l] = src[r][s][l], point pt's 16 results to
// dst[pt * pt_stride + l] (the loops over l vectorised).
template <int M>
void transform_16(const float* const (&src)[3][3], float* dst, int64_t pt_stride) {
  constexpr int N = M + 2;
  const auto& G = Filters<M>::g;
  double tmp[N][3][16] = {};  // G along r
  for (int i = 0; i < N; ++i)
    for (int s = 0; s < 3; ++s)
      for (int r = 0; r < 3; ++r) {
        const float* g = src[r][s];
#pragma omp simd
        for (int l = 0; l < 16; ++l) tmp[i][s][l] += G[i][r] * g[l];
      }
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      double v[16] = {};
      for (int s = 0; s < 3; ++s)
#pragma omp simd
        for (int l = 0; l < 16; ++l) v[l] += tmp[i][s][l] * G[j][s];
      float* out = dst + (i * N + j) * pt_stride;
      for (int l = 0; l < 16; ++l) out[l] = static_cast<float>(v[l]);
    }
}

// U = G g G^T per point from the layer's weights w[C][3][3][K]. Forward: g(c, k, r, s) = w[c][r][s][k] into
// u[pt][c][k], 16 filters (k) at a time, read and written contiguously.
template <int M>
void transform_filters(const float* w, int64_t C, int64_t K, float* u) {
#pragma omp for schedule(static)
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
      const float* src[3][3];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) src[r][s] = w + ((c * 3 + r) * 3 + s) * K + k0;
      transform_16<M>(src, u + c * K + k0, C * K);
    }
}

// Backward data: the filters rotated by 180 degrees with C and K swapped, g(k, c, r, s) = w[c][2-r][2-s][k], into
// u[pt][k][c], 16 channels (c) at a time. A 16 x 16 block of (c, k) is read row by row (16 contiguous k of each
// c and tap) and transposed in L1 first: reading the 16 channels of one k directly, 9 K floats apart, touches a
// cache line (and at 512 channels a page) per float, which took longer than the tiles themselves there.
template <int M>
void transform_filters_rotated(const float* w, int64_t C, int64_t K, float* u) {
#pragma omp for schedule(static)
  for (int64_t k0 = 0; k0 < K; k0 += 16)
    for (int64_t c0 = 0; c0 < C; c0 += 16) {
      alignas(64) float block[3][3][16][16];  // [r][s][k - k0][c - c0], the rotation applied
      for (int c = 0; c < 16; ++c)
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) {
            const float* row = w + (((c0 + c) * 3 + 2 - r) * 3 + 2 - s) * K + k0;
            for (int k = 0; k < 16; ++k) block[r][s][k][c] = row[k];
          }
      for (int k = 0; k < 16; ++k) {
        const float* src[3][3];
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) src[r][s] = block[r][s][k];
        transform_16<M>(src, u + (k0 + k) * C + c0, C * K);
      }
    }
}

// dW[c][r][s][k] = sum_{i,j} G[i][r] G[j][s] sum[N i + j][c][k], in double, 16 filters at a time (vectorised).
template <int M>
void filters_from_transform(int64_t C, int64_t K, const float* sum, float* dw) {
  constexpr int N = M + 2;
  const auto& G = Filters<M>::g;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
      double tmp[3][N][16] = {};  // G^T applied along i
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < N; ++j)
          for (int i = 0; i < N; ++i) {
            const float* row = sum + ((i * N + j) * C + c) * K + k0;
#pragma omp simd
            for (int l = 0; l < 16; ++l) tmp[r][j][l] += G[i][r] * row[l];
          }
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) {
          double v[16] = {};
          for (int j = 0; j < N; ++j)
#pragma omp simd
            for (int l = 0; l < 16; ++l) v[l] += tmp[r][j][l] * G[j][s];
          float* out = dw + ((c * 3 + r) * 3 + s) * K + k0;
          for (int l = 0; l < 16; ++l) out[l] = static_cast<float>(v[l]);
        }
    }
}

// Threads for `tiles` tiles in blocks of `block`: no more than there are blocks.
int threads_for(int64_t tiles, int block) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cpu::threads(), (tiles + block - 1) / block)));
}

// Floats of the workspace's per-thread region: the block buffers (forward, backward data), or the weight
// gradient's partial sum and block buffer.
int64_t per_thread_floats(int m, int64_t c, int64_t k) {
  const int64_t u = round16(int64_t{points(m)} * c * k);
  return std::max(round16(winograd_x16::buffer_floats(m, c, k)), u + round16(winograd_x16::filter_buffer_floats(m, c, k)));
}

// The kernels for this CPU (winograd_x16.h): AVX-512 where convgemm's run, AVX2 elsewhere.
const winograd_x16::Kernels& kernels() {
  const winograd_x16::Kernels* k = convgemm::avx512_kernels() ? winograd_x16::avx512_kernels() : nullptr;
  return k ? *k : winograd_x16::avx2_kernels();
}

// The correlation `c` with the layer's weights w (rotated for backward data; its U in ws): transform, then
// every tile (each block's moments to c.moments when not null).
template <int M, bool kRotated>
void run_forward(winograd_x16::Conv c, int64_t n, const float* w, float* ws, OpCode transform_op, OpCode tiles_op) {
  const winograd_x16::ForwardTiles kernel = kernels().forward<M>();
  float* u = ws;
  c.u = u;
  c.n = n;
  const int64_t tiles = tiles_of<M>(n, c.p, c.q), per_thread = round16(winograd_x16::buffer_floats(M, c.ci, c.ko));
  const int nt = threads_for(tiles, kTiles);
  OpScope op(transform_op);
#pragma omp parallel num_threads(nt)
  {
    // ends with the omp for's barrier; the layer's C and K are the correlation's ci, ko (ko, ci when rotated)
    if (kRotated) transform_filters_rotated<M>(w, c.ko, c.ci, u);
    else transform_filters<M>(w, c.ci, c.ko, u);
    const int tid = omp_get_thread_num(), T = omp_get_num_threads();
    if (tid == 0) op.next(tiles_op);
    float* buf = ws + round16(int64_t{points(M)} * c.ci * c.ko) + tid * per_thread;
    const int64_t blocks = (tiles + kTiles - 1) / kTiles, b0 = blocks * tid / T, b1 = blocks * (tid + 1) / T;
    for (int64_t b = b0; b < b1; ++b)
      kernel(c, b * kTiles, static_cast<int>(std::min<int64_t>(kTiles, tiles - b * kTiles)), buf);
  }
  if (!c.moments) return;
  // The blocks' moments merged in block order: the same for any thread count.
  const int64_t K = c.ko, stride = winograd_x16::moment_stride(K), blocks = (tiles + kTiles - 1) / kTiles;
  double* mean = c.moments + blocks * stride;
  double* m2 = mean + K;
  std::fill_n(mean, 2 * K, 0.0);
  double seen = 0.0;
  for (int64_t b = 0; b < blocks; ++b) {
    const double* block = c.moments + b * stride;
    merge_moments(K, seen, mean, m2, block[2 * K], block, block + K);
    seen += block[2 * K];
  }
}

// dW from x and dy: per-thread partial sums in the transform domain, summed in thread order, transformed back.
template <int M>
void run_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* ws) {
  const winograd_x16::FilterTiles kernel = kernels().filter<M>();
  const winograd_x16::Filter f{x, p.h, p.w, p.c, dy, p.p(), p.q(), p.k, p.pad_h, p.pad_w, p.n};
  const int64_t C = p.c, K = p.k, s_floats = round16(int64_t{points(M)} * C * K);
  const int64_t per_thread = round16(winograd_x16::filter_buffer_floats(M, C, K)) + s_floats;
  const int64_t tiles = tiles_of<M>(p.n, f.p, f.q);
  const int nt = threads_for(tiles, kFilterTiles);
  float* base = ws + s_floats;  // ws itself: the sum of the partials
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), T = omp_get_num_threads();
    float* s = base + tid * per_thread;
    float* buf = s + s_floats;
    std::fill_n(s, s_floats, 0.0f);
    const int64_t blocks = (tiles + kFilterTiles - 1) / kFilterTiles, b0 = blocks * tid / T, b1 = blocks * (tid + 1) / T;
    for (int64_t b = b0; b < b1; ++b)
      kernel(f, b * kFilterTiles, static_cast<int>(std::min<int64_t>(kFilterTiles, tiles - b * kFilterTiles)), s, buf);
  }
  float* sum = ws;
  std::memcpy(sum, base, sizeof(float) * s_floats);
  for (int t = 1; t < nt; ++t) {
    const float* s = base + t * per_thread;
    for (int64_t i = 0; i < s_floats; ++i) sum[i] += s[i];
  }
  filters_from_transform<M>(C, K, sum, dw);
}

template <int M>
class ConvWinogradX16 final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return M == 2 ? "cpu.winograd_x16" : "cpu.winograd_x16_f4"; }
  // F(2x2,3x3)'s transforms (entries 0, +-1/2, +-1) add little rounding: as cpu.winograd_f2. F(4x4,3x3)'s
  // add about ten times more: as cpu.winograd_f4.
  double tolerance() const override { return M == 2 ? 1e-5 : 1e-4; }

  Support supports(const ConvProblem& p) const override {
    const std::string n(name().substr(4));
    if (p.layout != Layout::nhwc) return Support::no(n + ": needs NHWC");
    if (p.groups != 1) return Support::no(n + ": needs groups == 1");
    if (p.c % 16 || p.k % 16) return Support::no(n + ": needs channels and filters in multiples of 16");
    if (p.r != 3 || p.s != 3) return Support::no(n + ": needs a 3x3 filter");
    if (p.stride_h != 1 || p.stride_w != 1 || p.dil_h != 1 || p.dil_w != 1)
      return Support::no(n + ": needs stride 1 and dilation 1");
    if (p.pad_h > 2 || p.pad_w > 2) return Support::no(n + ": needs padding <= 2");
    return Support::yes();
  }

  // U (or the weight gradient's sum) + the per-thread regions (backward_data's fit: ci + ko = c + k) + the blocks'
  // moments and their merge (forward_moments; doubles, 2 floats each).
  int64_t workspace_floats(const ConvProblem& p) const override {
    const int64_t u = round16(int64_t{points(M)} * p.c * p.k);
    return u + cpu::threads() * per_thread_floats(M, p.c, p.k) + 2 * moments_doubles(p);
  }

  int64_t op_events(const ConvProblem&, ConvDir) const override { return 2; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    run_forward<M, false>(forward_conv(p, x, bias, y), p.n, w, ws, OpCode::fwd_winograd_w, OpCode::fwd_winograd);
  }

  bool has_forward_moments(const ConvProblem& p) const override { return supports(p).ok(); }
  bool forward_moments(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y, float* ws,
                       double* mean, double* m2) const override {
    if (!has_forward_moments(p)) return false;
    winograd_x16::Conv c = forward_conv(p, x, bias, y);
    // After U and the per-thread regions; 64-byte aligned like every region of ws.
    c.moments = reinterpret_cast<double*>(ws + round16(int64_t{points(M)} * p.c * p.k) +
                                          cpu::threads() * per_thread_floats(M, p.c, p.k));
    run_forward<M, false>(c, p.n, w, ws, OpCode::fwd_winograd_w, OpCode::fwd_winograd);
    const double* merged = c.moments + moments_doubles(p) - 2 * p.k;
    std::copy_n(merged, p.k, mean);
    std::copy_n(merged + p.k, p.k, m2);
    return true;
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    run_forward<M, true>(backward_conv(p, dy, dx), p.n, w, ws, OpCode::bwd_winograd_w, OpCode::bwd_dx_winograd);
  }

  bool has_backward_data_add(const ConvProblem& p) const override { return supports(p).ok(); }
  bool backward_data_add(const ConvProblem& p, const float* dy, const float* w, const float* add, float* dx,
                         float* ws) const override {
    if (!has_backward_data_add(p)) return false;
    winograd_x16::Conv c = backward_conv(p, dy, dx);
    c.add = add;
    run_forward<M, true>(c, p.n, w, ws, OpCode::bwd_winograd_w, OpCode::bwd_dx_winograd);
    return true;
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    OpScope op(OpCode::bwd_dw_winograd);
    run_filter<M>(p, x, dy, dw, ws);
    op.next(db ? OpCode::bwd_bias : OpCode::none);
    conv_sum_bias(p, dy, db, 0, p.n * p.p() * p.q(), false);
  }

 private:
  static winograd_x16::Conv forward_conv(const ConvProblem& p, const float* x, const float* bias, float* y) {
    winograd_x16::Conv c;
    c.in = x, c.h = p.h, c.w = p.w, c.ci = p.c, c.out = y, c.p = p.p(), c.q = p.q(), c.ko = p.k;
    c.pad_h = p.pad_h, c.pad_w = p.pad_w, c.bias = bias;
    return c;
  }
  // dx = corr(dy, w rotated by 180 degrees, C and K swapped), padding 2 - pad.
  static winograd_x16::Conv backward_conv(const ConvProblem& p, const float* dy, float* dx) {
    winograd_x16::Conv c;
    c.in = dy, c.h = p.p(), c.w = p.q(), c.ci = p.k, c.out = dx, c.p = p.h, c.q = p.w, c.ko = p.c;
    c.pad_h = 2 - p.pad_h, c.pad_w = 2 - p.pad_w;
    return c;
  }
  // Doubles of forward_moments' region: each block's moments, then the merged mean and m2.
  static int64_t moments_doubles(const ConvProblem& p) {
    const int64_t blocks = (tiles_of<M>(p.n, p.p(), p.q()) + kTiles - 1) / kTiles;
    return blocks * winograd_x16::moment_stride(p.k) + 2 * p.k;
  }
};

}  // namespace

const ConvAlgorithm& conv_winograd_x16() {
  static const ConvWinogradX16<2> algo;
  return algo;
}

const ConvAlgorithm& conv_winograd_x16_f4() {
  static const ConvWinogradX16<4> algo;
  return algo;
}

}  // namespace dtnn
