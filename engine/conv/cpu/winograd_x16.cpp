// cpu.winograd_x16: NHWC 3x3 stride-1 convolutions by Winograd F(2x2,3x3) with AVX-512 kernels for channel
// counts in multiples of 16 (winograd_x16.h), all three directions:
//   forward        y = A^T [ (G g G^T) (.) (B^T x B) ] A per 2x2 output tile
//   backward_data  the forward algorithm on dy with the filters rotated by 180 degrees and C/K swapped,
//                  padding 2 - pad
//   backward_filter  dW = G^T [ sum over dy's tiles (A dy A^T) (.) (B^T x B) ] G, the transposed algorithm
// F(2x2,3x3) multiplies 16 times per tile where direct convolution multiplies 36 (2.25x fewer), with
// transforms of additions only, and its rounding stays near direct convolution's. Written for the 16-channel
// layers that oneDNN's F(4x4,3x3) loses on (results/baselines/conv_cpu_2core.md).
//
// Threads take contiguous ranges of tiles in blocks of kTiles; the weight gradient sums one transform-domain
// partial per thread, in thread order (equal across thread counts up to rounding, like cpu.winograd_f2's).
// Workspace: [U, or the summed weight gradient: 16 x C x K][per thread: forward, backward_data: the block
// buffer; backward_filter: the thread's partial sum, then the block buffer].
// Tracing: the filter transform, then the tiles (forward, backward_data); the tiles, then the bias sum.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/blas.h"
#include "conv/cpu/convgemm_kernels.h"
#include "conv/cpu/cpu_algorithms.h"
#include "conv/cpu/winograd_x16.h"
#include "trace/op_trace.h"

namespace dtnn {

namespace {

using winograd_x16::kPoints;
using winograd_x16::kTiles;

constexpr float kG[4][3] = {{1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0.0f, 0.0f, 1.0f}};

int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }
int64_t tiles_of(int64_t n, int64_t p, int64_t q) { return n * ((p + 1) / 2) * ((q + 1) / 2); }

// u[pt][ci][ko] = (G g G^T)[pt] for the correlation's filter g(ci, ko, r, s).
template <typename Weight>
void transform_filters(int64_t ci, int64_t ko, Weight&& g, float* u) {
#pragma omp for schedule(static)
  for (int64_t c = 0; c < ci; ++c)
    for (int64_t k = 0; k < ko; ++k) {
      float tmp[4][3] = {};
      for (int i = 0; i < 4; ++i)
        for (int s = 0; s < 3; ++s)
          for (int r = 0; r < 3; ++r) tmp[i][s] += kG[i][r] * g(c, k, r, s);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          float v = 0.0f;
          for (int s = 0; s < 3; ++s) v += tmp[i][s] * kG[j][s];
          u[((i * 4 + j) * ci + c) * ko + k] = v;
        }
    }
}

int threads_for(int64_t tiles) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cpu::threads(), (tiles + kTiles - 1) / kTiles)));
}

// The correlation `c` (its u in ws) with the filter g: transform, then every tile.
template <typename Weight>
void run_forward(winograd_x16::Conv c, int64_t n, Weight&& g, float* ws, OpCode transform_op, OpCode tiles_op) {
#if DTNN_AVX512_KERNELS
  float* u = ws;
  c.u = u;
  const int64_t tiles = tiles_of(n, c.p, c.q), per_thread = round16(winograd_x16::buffer_floats(c.ci, c.ko));
  const int nt = threads_for(tiles);
  OpScope op(transform_op);
#pragma omp parallel num_threads(nt)
  {
    transform_filters(c.ci, c.ko, g, u);  // ends with the omp for's barrier
    const int tid = omp_get_thread_num(), T = omp_get_num_threads();
    if (tid == 0) op.next(tiles_op);
    float* buf = ws + round16(int64_t{kPoints} * c.ci * c.ko) + tid * per_thread;
    const int64_t blocks = (tiles + kTiles - 1) / kTiles, b0 = blocks * tid / T, b1 = blocks * (tid + 1) / T;
    for (int64_t b = b0; b < b1; ++b)
      winograd_x16::forward_tiles(c, b * kTiles, static_cast<int>(std::min<int64_t>(kTiles, tiles - b * kTiles)), buf);
  }
#else
  (void)c, (void)n, (void)g, (void)ws, (void)transform_op, (void)tiles_op;
#endif
}

// dW from x and dy: per-thread partial sums in the transform domain, summed in thread order, transformed back.
void run_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* ws) {
#if DTNN_AVX512_KERNELS
  const winograd_x16::Filter f{x, p.h, p.w, p.c, dy, p.p(), p.q(), p.k, p.pad_h, p.pad_w};
  const int64_t C = p.c, K = p.k, s_floats = round16(int64_t{kPoints} * C * K);
  const int64_t per_thread = round16(winograd_x16::buffer_floats(C, K)) + s_floats;
  const int64_t tiles = tiles_of(p.n, f.p, f.q);
  const int nt = threads_for(tiles);
  float* base = ws + s_floats;  // ws itself: the sum of the partials
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), T = omp_get_num_threads();
    float* s = base + tid * per_thread;
    float* buf = s + s_floats;
    std::fill_n(s, s_floats, 0.0f);
    const int64_t blocks = (tiles + kTiles - 1) / kTiles, b0 = blocks * tid / T, b1 = blocks * (tid + 1) / T;
    for (int64_t b = b0; b < b1; ++b)
      winograd_x16::filter_tiles(f, b * kTiles, static_cast<int>(std::min<int64_t>(kTiles, tiles - b * kTiles)), s, buf);
  }
  float* sum = ws;
  std::memcpy(sum, base, sizeof(float) * s_floats);
  for (int t = 1; t < nt; ++t) {
    const float* s = base + t * per_thread;
    for (int64_t i = 0; i < s_floats; ++i) sum[i] += s[i];
  }
  // dW[c][r][s][k] = sum_{i,j} G[i][r] G[j][s] sum[4 i + j][c][k]
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < K; ++k) {
      float tmp[3][4] = {};  // G^T applied along i
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) tmp[r][j] += kG[i][r] * sum[((i * 4 + j) * C + c) * K + k];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) {
          float v = 0.0f;
          for (int j = 0; j < 4; ++j) v += tmp[r][j] * kG[j][s];
          dw[((c * 3 + r) * 3 + s) * K + k] = v;
        }
    }
#else
  (void)p, (void)x, (void)dy, (void)dw, (void)ws;
#endif
}

class ConvWinogradX16 final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "cpu.winograd_x16"; }
  // F(2x2,3x3)'s transforms (entries 0, +-1/2, +-1) add little rounding: as cpu.winograd_f2.
  double tolerance() const override { return 1e-5; }

  Support supports(const ConvProblem& p) const override {
    if (!convgemm::avx512_kernels())
      return Support::no("winograd_x16: needs AVX-512F (this CPU, this build or DTNN_MAX_CPU_ISA=AVX2 lacks it)");
    if (p.layout != Layout::nhwc) return Support::no("winograd_x16: needs NHWC");
    if (p.groups != 1) return Support::no("winograd_x16: needs groups == 1");
    if (p.c % 16 || p.k % 16) return Support::no("winograd_x16: needs channels and filters in multiples of 16");
    if (p.r != 3 || p.s != 3) return Support::no("winograd_x16: needs a 3x3 filter");
    if (p.stride_h != 1 || p.stride_w != 1 || p.dil_h != 1 || p.dil_w != 1)
      return Support::no("winograd_x16: needs stride 1 and dilation 1");
    if (p.pad_h > 2 || p.pad_w > 2) return Support::no("winograd_x16: needs padding <= 2");
    return Support::yes();
  }

  int64_t workspace_floats(const ConvProblem& p) const override {
    const int64_t u = round16(int64_t{kPoints} * p.c * p.k), buf = round16(winograd_x16::buffer_floats(p.c, p.k));
    return u + cpu::threads() * (buf + u);  // forward: U + buffers; weight gradient: sum + (partial + buffer)
  }

  int64_t op_events(const ConvProblem&, ConvDir) const override { return 2; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    const int64_t K = p.k;
    winograd_x16::Conv c;
    c.in = x, c.h = p.h, c.w = p.w, c.ci = p.c, c.out = y, c.p = p.p(), c.q = p.q(), c.ko = K;
    c.pad_h = p.pad_h, c.pad_w = p.pad_w, c.bias = bias;
    run_forward(c, p.n, [&](int64_t ci, int64_t k, int r, int s) { return w[((ci * 3 + r) * 3 + s) * K + k]; }, ws,
                OpCode::fwd_winograd_w, OpCode::fwd_winograd);
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    const int64_t K = p.k;
    winograd_x16::Conv c;  // dx = corr(dy, w rotated by 180 degrees, C and K swapped), padding 2 - pad
    c.in = dy, c.h = p.p(), c.w = p.q(), c.ci = K, c.out = dx, c.p = p.h, c.q = p.w, c.ko = p.c;
    c.pad_h = 2 - p.pad_h, c.pad_w = 2 - p.pad_w;
    run_forward(c, p.n, [&](int64_t k, int64_t ci, int r, int s) { return w[((ci * 3 + 2 - r) * 3 + 2 - s) * K + k]; },
                ws, OpCode::bwd_winograd_w, OpCode::bwd_dx_winograd);
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    OpScope op(OpCode::bwd_dw_winograd);
    run_filter(p, x, dy, dw, ws);
    op.next(db ? OpCode::bwd_bias : OpCode::none);
    conv_sum_bias(p, dy, db, 0, p.n * p.p() * p.q(), false);
  }
};

}  // namespace

const ConvAlgorithm& conv_winograd_x16() {
  static const ConvWinogradX16 algo;
  return algo;
}

}  // namespace dtnn
