// cpu.winograd_f2 / cpu.winograd_f4: NHWC 3x3 stride-1 convolutions by Winograd's minimal filtering,
// F(2x2,3x3) (4x4 tiles) and F(4x4,3x3) (6x6 tiles), all three directions.
//
// forward        Y = A^T [ (G g G^T) (.) (B^T d B) ] A  per output tile of m x m pixels, i.e. for each of the
//                alpha^2 transform points xi a GEMM  M_xi[tiles x K] = V_xi[tiles x C] . U_xi[C x K]  with
//                V the transformed input tiles and U the transformed filters (packed once per call).
// backward_data  the forward algorithm on dy with the filters rotated by 180 degrees and C/K swapped
//                (stride 1: dx = conv(dy, rot(w)^T) with padding 2 - pad).
// backward_filter  F(3x3, m x m): the 3x3 weight gradient is the "output", the m x m dy tile the "filter"
//                and the alpha x alpha x tile the data, summed over every tile of the batch:
//                dW = A'^T [ sum_tiles (G' dy G'^T) (.) (B'^T x B') ] A'  (one GEMM per point, reducing over tiles).
// The matrices are built by Toom-Cook from interpolation points (0, +-1, +-1/2 and infinity) in double:
// A^T[i][j] = p_j^i, G[j][k] = p_j^k, B^T = (V^-1)^T with V the alpha x alpha Vandermonde matrix of the
// points (the point at infinity picks the leading coefficient). Half-integer points keep F(4x4,3x3)'s
// float error near 1e-5 relative on unit-scale data; tests allow 1e-4 (f2) and 1e-3 (f4).
//
// The GEMMs use convgemm's 6x16 register tile (one "tap": the 6 rows are 6 tiles' transformed channels).
// Tiles are processed in blocks sized so a block's V and M stay in L2; threads take contiguous ranges of
// tiles, each with its own block buffers in the workspace (so the workspace grows with cpu::threads()).
// backward_filter keeps one partial transform-domain gradient per thread, summed in thread order at the end.
// Tracing (trace/op_trace.h): forward and backward_data record the filter transform and then the tiles
// (input transform, GEMMs, output transform: interleaved per block in every thread, so one event), split at
// the barrier that ends the filter transform; backward_filter records the whole pass, then the bias sum.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/blas.h"
#include "conv/cpu/convgemm_kernels.h"
#include "conv/cpu/cpu_algorithms.h"
#include "core/error.h"
#include "trace/op_trace.h"

namespace dtnn {
namespace {

using convgemm::kMR;
using convgemm::kNR;
using convgemm::Segment;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t div_up(int64_t v, int64_t m) { return (v + m - 1) / m; }

constexpr int kMaxAlpha = 6;
constexpr int64_t kBlockBytes = 1024 * 1024;  // a block's transformed tiles (V and M) per thread

// Toom-Cook matrices of F(m, r), alpha = m + r - 1, in float (row-major, alpha <= 6).
struct Matrices {
  int m = 0, r = 0, alpha = 0;
  float at[kMaxAlpha][kMaxAlpha] = {};  // m x alpha
  float g[kMaxAlpha][kMaxAlpha] = {};   // alpha x r
  float bt[kMaxAlpha][kMaxAlpha] = {};  // alpha x alpha
};

Matrices toom_cook(int m, int r) {
  const double points[] = {0.0, 1.0, -1.0, 0.5, -0.5};
  Matrices t;
  t.m = m, t.r = r, t.alpha = m + r - 1;
  const int a = t.alpha;
  auto pw = [](double x, int e) {
    double v = 1.0;
    for (int i = 0; i < e; ++i) v *= x;
    return v;
  };
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < a; ++j) t.at[i][j] = static_cast<float>(j < a - 1 ? pw(points[j], i) : (i == m - 1));
  for (int j = 0; j < a; ++j)
    for (int k = 0; k < r; ++k) t.g[j][k] = static_cast<float>(j < a - 1 ? pw(points[j], k) : (k == r - 1));
  // V[j][l] = p_j^l (last row: the leading coefficient); B^T = (V^-1)^T by Gauss-Jordan with pivoting.
  double v[kMaxAlpha][2 * kMaxAlpha] = {};
  for (int j = 0; j < a; ++j) {
    for (int l = 0; l < a; ++l) v[j][l] = j < a - 1 ? pw(points[j], l) : (l == a - 1);
    v[j][a + j] = 1.0;
  }
  for (int col = 0; col < a; ++col) {
    int piv = col;
    for (int row = col + 1; row < a; ++row)
      if (std::abs(v[row][col]) > std::abs(v[piv][col])) piv = row;
    std::swap(v[col], v[piv]);
    const double d = v[col][col];
    for (int l = 0; l < 2 * a; ++l) v[col][l] /= d;
    for (int row = 0; row < a; ++row)
      if (row != col) {
        const double f = v[row][col];
        for (int l = 0; l < 2 * a; ++l) v[row][l] -= f * v[col][l];
      }
  }
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j) t.bt[i][j] = static_cast<float>(v[j][a + i]);  // (V^-1)^T
  return t;
}

// out[i*os + c] = sum_j mat[i][j] * in[j*is + c] for i < rows, j < cols, c < n (zero entries skipped).
void apply_rows(const float (*mat)[kMaxAlpha], int rows, int cols, const float* in, int64_t is, float* out,
                int64_t os, int64_t n) {
  for (int i = 0; i < rows; ++i) {
    float* o = out + i * os;
    std::fill(o, o + n, 0.0f);
    for (int j = 0; j < cols; ++j) {
      const float f = mat[i][j];
      if (f == 0.0f) continue;
      const float* x = in + j * is;
#pragma omp simd
      for (int64_t c = 0; c < n; ++c) o[c] += f * x[c];
    }
  }
}

// Transforms a rows x cols patch of channel vectors P(i, j) (pointer per position, null = zeros) by
// T = L P L^T, L being rows_out x rows: out(xi1, xi2)[c] at out + (xi1 * rows_out + xi2) * ostride.
// scratch: rows_out * cols * n floats.
void transform_2d(const float (*l)[kMaxAlpha], int rows_out, int rows, const float* const* patch, int64_t n,
                  float* scratch, float* out, int64_t ostride) {
  // first pass over i: s(xi1, j) = sum_i L[xi1][i] P(i, j)
  for (int x1 = 0; x1 < rows_out; ++x1)
    for (int j = 0; j < rows; ++j) {
      float* s = scratch + (x1 * rows + j) * n;
      std::fill(s, s + n, 0.0f);
      for (int i = 0; i < rows; ++i) {
        const float f = l[x1][i];
        const float* p = patch[i * rows + j];
        if (f == 0.0f || !p) continue;
#pragma omp simd
        for (int64_t c = 0; c < n; ++c) s[c] += f * p[c];
      }
    }
  // second pass over j: out(xi1, xi2) = sum_j s(xi1, j) L[xi2][j]
  for (int x1 = 0; x1 < rows_out; ++x1)
    for (int x2 = 0; x2 < rows_out; ++x2) {
      float* o = out + (x1 * rows_out + x2) * ostride;
      std::fill(o, o + n, 0.0f);
      for (int j = 0; j < rows; ++j) {
        const float f = l[x2][j];
        if (f == 0.0f) continue;
        const float* s = scratch + (x1 * rows + j) * n;
#pragma omp simd
        for (int64_t c = 0; c < n; ++c) o[c] += f * s[c];
      }
    }
}

// A convolution as the forward Winograd sees it: src (N, H, W, C) NHWC, dst (N, P, Q, K) with
// P = H + 2*pad_h - 2, filter element (c, k, r, s) = weight(c, k, r, s).
struct FwdView {
  const float* src;
  int64_t n, h, w, c;
  float* dst;
  int64_t p, q, k;
  int64_t pad_h, pad_w;
};

struct FwdSizes {
  int64_t kp, tb, u, per_thread, v, mm;  // padded K, tiles per block, buffer sizes
};

FwdSizes fwd_sizes(const Matrices& t, int64_t C, int64_t K) {
  FwdSizes s;
  const int64_t a2 = t.alpha * t.alpha;
  s.kp = round_up(K, kNR);
  s.tb = std::max<int64_t>(kMR, kBlockBytes / (4 * a2 * (C + s.kp)) / kMR * kMR);
  s.u = round_up(a2 * s.kp * C, 16);
  s.v = round_up(a2 * s.tb * C, 16);
  s.mm = round_up(a2 * s.tb * s.kp, 16);
  s.per_thread = s.v + s.mm + round_up(t.alpha * t.alpha * std::max(C, s.kp), 16);
  return s;
}

// `transform_op`, `tiles_op`: what tracing calls the filter transform and the tiles (forward or backward_data).
template <typename Weight>
void winograd_forward(const Matrices& t, const FwdView& f, Weight&& weight, const float* bias, float* ws,
                      OpCode transform_op, OpCode tiles_op) {
  const int m = t.m, a = t.alpha, a2 = a * a;
  const int64_t C = f.c, K = f.k;
  const FwdSizes sz = fwd_sizes(t, C, K);
  float* u = ws;
  const int64_t th = div_up(f.p, m), tw = div_up(f.q, m), tiles = f.n * th * tw;
  const int threads = cpu::threads();
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, div_up(tiles, sz.tb))));
  OpScope op(transform_op);
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), T = omp_get_num_threads();
    float* v = ws + sz.u + tid * sz.per_thread;
    float* mm = v + sz.v;
    float* scratch = mm + sz.mm;
    // U_xi[c][k] = (G g G^T)[xi] packed as 16-column panels: u + xi*kp*C + (k/16)*C*16 + c*16 + k%16.
#pragma omp for schedule(static)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < sz.kp; ++k) {
        float gg[kMaxAlpha][kMaxAlpha] = {}, tmp[kMaxAlpha][3] = {};
        if (k < K) {
          for (int i = 0; i < a; ++i)
            for (int s = 0; s < 3; ++s)
              for (int r = 0; r < 3; ++r) tmp[i][s] += t.g[i][r] * weight(c, k, r, s);
          for (int i = 0; i < a; ++i)
            for (int j = 0; j < a; ++j)
              for (int s = 0; s < 3; ++s) gg[i][j] += tmp[i][s] * t.g[j][s];
        }
        for (int xi = 0; xi < a2; ++xi) u[xi * sz.kp * C + (k / kNR) * C * kNR + c * kNR + k % kNR] = gg[xi / a][xi % a];
      }
    if (tid == 0) op.next(tiles_op);  // after the omp for's barrier: every thread's share of U is done
    const int64_t first = tiles * tid / T, last = tiles * (tid + 1) / T;
    const float* patch[kMaxAlpha * kMaxAlpha];
    const float* rows[kMR];
    const int btap[1] = {0};
    for (int64_t b0 = first; b0 < last; b0 += sz.tb) {
      const int64_t nb = std::min(sz.tb, last - b0), nbp = round_up(nb, kMR);
      // V_xi[tile][c] = (B^T d B)[xi]
      for (int64_t i = 0; i < nbp; ++i) {
        if (i >= nb) {
          for (int xi = 0; xi < a2; ++xi) std::fill(v + (xi * sz.tb + i) * C, v + (xi * sz.tb + i + 1) * C, 0.0f);
          continue;
        }
        const int64_t tile = b0 + i, n = tile / (th * tw), y0 = (tile / tw) % th * m - f.pad_h,
                      x0 = tile % tw * m - f.pad_w;
        for (int di = 0; di < a; ++di)
          for (int dj = 0; dj < a; ++dj) {
            const int64_t y = y0 + di, x = x0 + dj;
            patch[di * a + dj] = y >= 0 && y < f.h && x >= 0 && x < f.w ? f.src + ((n * f.h + y) * f.w + x) * C : nullptr;
          }
        transform_2d(t.bt, a, a, patch, C, scratch, v + i * C, sz.tb * C);
      }
      // M_xi[tile][k] = V_xi[tile][:] . U_xi
      for (int xi = 0; xi < a2; ++xi)
        for (int64_t jr = 0; jr < sz.kp / kNR; ++jr)
          for (int64_t i = 0; i < nbp; i += kMR) {
            for (int r = 0; r < kMR; ++r) rows[r] = v + (xi * sz.tb + i + r) * C;
            convgemm::tile_gather(1, rows, btap, C, u + xi * sz.kp * C + jr * C * kNR, nullptr,
                                  mm + (xi * sz.tb + i) * sz.kp + jr * kNR, sz.kp);
          }
      // Y = A^T M A (+ bias), written where the tile lies inside the output
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t tile = b0 + i, n = tile / (th * tw), y0 = (tile / tw) % th * m, x0 = tile % tw * m;
        // s(xi1, j) = sum_xi2 M(xi1, xi2) A[xi2][j]: rows of A^T applied along xi2
        float* s = scratch;  // a x m vectors of kp
        for (int x1 = 0; x1 < a; ++x1) {
          const float* mrow = mm + (x1 * a * sz.tb + i) * sz.kp;  // M(x1, 0); M(x1, x2) at + x2*tb*kp
          apply_rows(t.at, m, a, mrow, sz.tb * sz.kp, s + x1 * m * sz.kp, sz.kp, K);
        }
        for (int oi = 0; oi < m && y0 + oi < f.p; ++oi)
          for (int oj = 0; oj < m && x0 + oj < f.q; ++oj) {
            float* out = f.dst + ((n * f.p + y0 + oi) * f.q + x0 + oj) * K;
            if (bias) std::copy(bias, bias + K, out);
            else std::fill(out, out + K, 0.0f);
            for (int x1 = 0; x1 < a; ++x1) {
              const float fa = t.at[oi][x1];
              if (fa == 0.0f) continue;
              const float* sv = s + (x1 * m + oj) * sz.kp;
#pragma omp simd
              for (int64_t k = 0; k < K; ++k) out[k] += fa * sv[k];
            }
          }
      }
    }
  }
}

// ---- backward_filter: F(3x3, m x m) ----

struct FilterSizes {
  int64_t k6, c16, tb, per_thread, v, d, acc;
};

FilterSizes filter_sizes(const Matrices& t, int64_t C, int64_t K) {
  FilterSizes s;
  const int64_t a2 = t.alpha * t.alpha;
  s.k6 = round_up(K, kMR);
  s.c16 = round_up(C, kNR);
  s.tb = std::max<int64_t>(kMR, kBlockBytes / (4 * a2 * (C + K)));
  s.v = round_up(a2 * s.tb * C, 16);
  s.d = round_up(a2 * s.tb * K, 16);
  s.acc = round_up(a2 * s.k6 * s.c16, 16);
  s.per_thread = s.v + s.d + s.acc + round_up(t.alpha * t.alpha * std::max(C, K), 16);
  return s;
}

void winograd_filter(const Matrices& t, const ConvProblem& p, const float* x, const float* dy, float* dw,
                     float* ws) {
  // t: F(3, m); the data tile is alpha x alpha of x, the "filter" m x m of dy, the output 3 x 3 of dW.
  const int m = t.r, a = t.alpha, a2 = a * a;
  const int64_t C = p.c, K = p.k, P = p.p(), Q = p.q();
  const FilterSizes sz = filter_sizes(t, C, K);
  const int64_t th = div_up(P, m), tw = div_up(Q, m), tiles = p.n * th * tw;
  const int nt = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cpu::threads(), div_up(tiles, sz.tb))));
  const int64_t ld = sz.c16;  // acc_xi[k][c], row length c16
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num(), T = omp_get_num_threads();
    float* v = ws + tid * sz.per_thread;
    float* d = v + sz.v;
    float* acc = d + sz.d;
    float* scratch = acc + sz.acc;
    std::fill(acc, acc + sz.acc, 0.0f);
    const int64_t first = tiles * tid / T, last = tiles * (tid + 1) / T;
    const float* patch[kMaxAlpha * kMaxAlpha];
    for (int64_t b0 = first; b0 < last; b0 += sz.tb) {
      const int64_t nb = std::min(sz.tb, last - b0);
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t tile = b0 + i, n = tile / (th * tw), oy = (tile / tw) % th * m, ox = tile % tw * m;
        // x tile: rows oy - pad .. + alpha; dy tile: m x m from (oy, ox), zeros outside
        for (int di = 0; di < a; ++di)
          for (int dj = 0; dj < a; ++dj) {
            const int64_t y = oy - p.pad_h + di, xx = ox - p.pad_w + dj;
            patch[di * a + dj] = y >= 0 && y < p.h && xx >= 0 && xx < p.w ? x + ((n * p.h + y) * p.w + xx) * C : nullptr;
          }
        transform_2d(t.bt, a, a, patch, C, scratch, v + i * C, sz.tb * C);
        for (int di = 0; di < m; ++di)
          for (int dj = 0; dj < m; ++dj) {
            const int64_t y = oy + di, xx = ox + dj;
            patch[di * m + dj] = y < P && xx < Q ? dy + ((n * P + y) * Q + xx) * K : nullptr;
          }
        // (G' dy G'^T): G' is alpha x m; transform_2d takes a square L, so apply it as two passes here.
        for (int x1 = 0; x1 < a; ++x1)
          for (int j = 0; j < m; ++j) {
            float* s = scratch + (x1 * m + j) * K;
            std::fill(s, s + K, 0.0f);
            for (int ii = 0; ii < m; ++ii) {
              const float fg = t.g[x1][ii];
              const float* src = patch[ii * m + j];
              if (fg == 0.0f || !src) continue;
#pragma omp simd
              for (int64_t k = 0; k < K; ++k) s[k] += fg * src[k];
            }
          }
        for (int x1 = 0; x1 < a; ++x1)
          for (int x2 = 0; x2 < a; ++x2) {
            float* o = d + ((x1 * a + x2) * sz.tb + i) * K;
            std::fill(o, o + K, 0.0f);
            for (int j = 0; j < m; ++j) {
              const float fg = t.g[x2][j];
              if (fg == 0.0f) continue;
              const float* s = scratch + (x1 * m + j) * K;
#pragma omp simd
              for (int64_t k = 0; k < K; ++k) o[k] += fg * s[k];
            }
          }
      }
      // acc_xi[k][c] += sum_tiles D_xi[tile][k] V_xi[tile][c]
      for (int xi = 0; xi < a2; ++xi) {
        const Segment seg{d + xi * sz.tb * K, v + xi * sz.tb * C, nb};
        for (int64_t k0 = 0; k0 < K; k0 += kMR)
          for (int64_t c0 = 0; c0 < C; c0 += kNR) {
            const int mr = static_cast<int>(std::min<int64_t>(kMR, K - k0));
            const int nbc = static_cast<int>(std::min<int64_t>(kNR, C - c0));
            float* out = acc + (xi * sz.k6 + k0) * ld + c0;
            convgemm::tile_segments_any(mr, nbc < kNR, &seg, 1, k0, c0, K, C, nbc, true, out, ld);
          }
      }
    }
#pragma omp barrier
    // sum the threads' partials into thread 0's, then dW(c, r, s, k) = (A'^T acc A')[r][s]
    float* acc0 = ws + sz.v + sz.d;
#pragma omp for schedule(static)
    for (int64_t e = 0; e < sz.acc; ++e)
      for (int o = 1; o < T; ++o) acc0[e] += ws[o * sz.per_thread + sz.v + sz.d + e];
#pragma omp for schedule(static)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < K; ++k) {
        float tmp[3][kMaxAlpha] = {};
        for (int r = 0; r < 3; ++r)
          for (int x1 = 0; x1 < a; ++x1)
            for (int x2 = 0; x2 < a; ++x2) tmp[r][x2] += t.at[r][x1] * acc0[((x1 * a + x2) * sz.k6 + k) * ld + c];
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) {
            float sum = 0.0f;
            for (int x2 = 0; x2 < a; ++x2) sum += tmp[r][x2] * t.at[s][x2];
            dw[((c * 3 + r) * 3 + s) * K + k] = sum;
          }
      }
  }
}

class ConvWinograd final : public ConvAlgorithm {
 public:
  ConvWinograd(int m, const char* name) : name_(name), fwd_(toom_cook(m, 3)), filt_(toom_cook(3, m)) {}
  std::string_view name() const override { return name_; }
  // The transforms add rounding: F(2x2,3x3) stays near 1e-6, F(4x4,3x3) (6x6 tiles, entries up to
  // 1/0.5^4) near 1e-5, AVX2 and AVX-512 tiles alike; a wrong transform entry is off by far more.
  double tolerance() const override { return fwd_.m == 4 ? 1e-4 : 1e-5; }

  Support supports(const ConvProblem& p) const override {
    const std::string n(name_.substr(4));
    if (p.layout != Layout::nhwc) return Support::no(n + ": needs NHWC");
    if (p.groups != 1) return Support::no(n + ": needs groups == 1");
    if (p.r != 3 || p.s != 3) return Support::no(n + ": needs a 3x3 filter");
    if (p.stride_h != 1 || p.stride_w != 1 || p.dil_h != 1 || p.dil_w != 1)
      return Support::no(n + ": needs stride 1 and dilation 1");
    if (p.pad_h > 2 || p.pad_w > 2) return Support::no(n + ": needs padding <= 2");
    return Support::yes();
  }

  int64_t workspace_floats(const ConvProblem& p) const override {
    const int64_t threads = cpu::threads();
    const FwdSizes f = fwd_sizes(fwd_, p.c, p.k), b = fwd_sizes(fwd_, p.k, p.c);
    const FilterSizes w = filter_sizes(filt_, p.c, p.k);
    return std::max({f.u + threads * f.per_thread, b.u + threads * b.per_thread, threads * w.per_thread});
  }

  int64_t op_events(const ConvProblem&, ConvDir) const override { return 2; }

  void forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
               float* ws) const override {
    const FwdView v{x, p.n, p.h, p.w, p.c, y, p.p(), p.q(), p.k, p.pad_h, p.pad_w};
    const int64_t K = p.k;
    winograd_forward(fwd_, v, [&](int64_t c, int64_t k, int64_t r, int64_t s) { return w[((c * 3 + r) * 3 + s) * K + k]; },
                     bias, ws, OpCode::fwd_winograd_w, OpCode::fwd_winograd);
  }

  void backward_data(const ConvProblem& p, const float* dy, const float* w, float* dx, float* ws) const override {
    // dx = conv(dy, w rotated 180 degrees with C and K swapped), padding 2 - pad.
    const FwdView v{dy, p.n, p.p(), p.q(), p.k, dx, p.h, p.w, p.c, 2 - p.pad_h, 2 - p.pad_w};
    const int64_t K = p.k;
    winograd_forward(fwd_, v,
                     [&](int64_t k, int64_t c, int64_t r, int64_t s) { return w[((c * 3 + 2 - r) * 3 + 2 - s) * K + k]; },
                     nullptr, ws, OpCode::bwd_winograd_w, OpCode::bwd_dx_winograd);
  }

  void backward_filter(const ConvProblem& p, const float* x, const float* dy, float* dw, float* db,
                       float* ws) const override {
    OpScope op(OpCode::bwd_dw_winograd);
    winograd_filter(filt_, p, x, dy, dw, ws);
    op.next(db ? OpCode::bwd_bias : OpCode::none);
    conv_sum_bias(p, dy, db, 0, p.n * p.p() * p.q(), false);
  }

 private:
  std::string_view name_;
  Matrices fwd_, filt_;
};

}  // namespace

const ConvAlgorithm& conv_winograd_f2() {
  static const ConvWinograd algo(2, "cpu.winograd_f2");
  return algo;
}

const ConvAlgorithm& conv_winograd_f4() {
  static const ConvWinograd algo(4, "cpu.winograd_f4");
  return algo;
}

}  // namespace dtnn
