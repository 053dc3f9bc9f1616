// cpu.winograd_x16's and cpu.winograd_x16_f4's AVX-512 kernels (contracts in winograd_x16.h). This file alone
// of the algorithms is compiled with -mavx512f -mfma (engine/CMakeLists.txt); winograd_x16.cpp calls it only
// where AVX-512F runs. The tile code is written once over M; Lines<M> holds each algorithm's three 1-D
// transforms, applied down the columns and then along the rows of a tile.
//
// F(2x2,3x3) (Lavin and Gray), as correlation:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   A^T = [1 1 1 0; 0 1 -1 -1]
// F(4x4,3x3) from the points 0, 1, -1, 1/2, -1/2 and infinity (as cpu.winograd_f4, whose float error they
// keep near 1e-5 relative), B^T's rows scaled to small integers (G's rows by the inverse, winograd_x16.cpp):
//   B^T = [1 0 -5 0 4 0; 0 -1 -1 4 4 0; 0 1 -1 -4 4 0; 0 1 2 -1 -2 0; 0 -1 2 1 -2 0; 0 1 0 -5 0 4]
//   A^T = [1 1 1 1 1 0; 0 1 -1 1/2 -1/2 0; 0 1 1 1/4 1/4 0; 0 1 -1 1/8 -1/8 1]
// The weight gradient uses the transposed algorithm: dy's MxM tile goes through A, x's window through B^T as
// in the forward pass.
#include "conv/cpu/winograd_x16.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace dtnn::winograd_x16 {
namespace {

template <int M>
struct Lines;

template <>
struct Lines<2> {
  static constexpr int N = 4;
  // d = B^T d, in place.
  static void input(__m512* d) {
    const __m512 t0 = _mm512_sub_ps(d[0], d[2]), t1 = _mm512_add_ps(d[1], d[2]), t2 = _mm512_sub_ps(d[2], d[1]),
                 t3 = _mm512_sub_ps(d[1], d[3]);
    d[0] = t0, d[1] = t1, d[2] = t2, d[3] = t3;
  }
  // y = A^T m (N values to M).
  static void output(const __m512* m, __m512* y) {
    y[0] = _mm512_add_ps(_mm512_add_ps(m[0], m[1]), m[2]);
    y[1] = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
  }
  // r = A e (M values to N).
  static void gradient(const __m512* e, __m512* r) {
    r[0] = e[0];
    r[1] = _mm512_add_ps(e[0], e[1]);
    r[2] = _mm512_sub_ps(e[0], e[1]);
    r[3] = _mm512_sub_ps(_mm512_setzero_ps(), e[1]);
  }
};

template <>
struct Lines<4> {
  static constexpr int N = 6;
  static void input(__m512* d) {
    const __m512 four = _mm512_set1_ps(4.0f), five = _mm512_set1_ps(5.0f), two = _mm512_set1_ps(2.0f);
    const __m512 a = _mm512_fmsub_ps(four, d[4], d[2]), b = _mm512_fmsub_ps(four, d[3], d[1]);  // 4d4 - d2, 4d3 - d1
    const __m512 c = _mm512_sub_ps(d[2], d[4]), e = _mm512_sub_ps(d[1], d[3]);
    const __m512 t0 = _mm512_fmadd_ps(four, d[4], _mm512_fnmadd_ps(five, d[2], d[0]));
    const __m512 t5 = _mm512_fmadd_ps(four, d[5], _mm512_fnmadd_ps(five, d[3], d[1]));
    d[0] = t0, d[1] = _mm512_add_ps(a, b), d[2] = _mm512_sub_ps(a, b);
    d[3] = _mm512_fmadd_ps(two, c, e), d[4] = _mm512_fmsub_ps(two, c, e), d[5] = t5;
  }
  static void output(const __m512* m, __m512* y) {
    const __m512 s12 = _mm512_add_ps(m[1], m[2]), d12 = _mm512_sub_ps(m[1], m[2]);
    const __m512 s34 = _mm512_add_ps(m[3], m[4]), d34 = _mm512_sub_ps(m[3], m[4]);
    y[0] = _mm512_add_ps(_mm512_add_ps(m[0], s12), s34);
    y[1] = _mm512_fmadd_ps(_mm512_set1_ps(0.5f), d34, d12);
    y[2] = _mm512_fmadd_ps(_mm512_set1_ps(0.25f), s34, s12);
    y[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(0.125f), d34, d12), m[5]);
  }
  static void gradient(const __m512* e, __m512* r) {
    const __m512 p = _mm512_add_ps(e[0], e[2]), q = _mm512_add_ps(e[1], e[3]);
    const __m512 p4 = _mm512_fmadd_ps(_mm512_set1_ps(0.25f), e[2], e[0]);  // e0 + e2/4
    const __m512 q4 = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_fmadd_ps(_mm512_set1_ps(0.25f), e[3], e[1]));
    r[0] = e[0], r[1] = _mm512_add_ps(p, q), r[2] = _mm512_sub_ps(p, q);
    r[3] = _mm512_add_ps(p4, q4), r[4] = _mm512_sub_ps(p4, q4), r[5] = e[3];
  }
};

// Pixel (y, x) of `img` ([h][w][ch], one sample), channels [c0, c0 + 16); zero outside the image.
inline __m512 pixel(const float* img, int64_t h, int64_t w, int64_t ch, int64_t y, int64_t x, int64_t c0) {
  return y >= 0 && y < h && x >= 0 && x < w ? _mm512_loadu_ps(img + (y * w + x) * ch + c0) : _mm512_setzero_ps();
}

// B^T down column x of the M+2 rows from y0 of `img` (channels [c0, c0 + 16)), zero outside.
template <int M>
inline void input_column(const float* img, int64_t h, int64_t w, int64_t ch, int64_t y0, int64_t x, int64_t c0,
                         __m512* col) {
  if (x >= 0 && x < w && y0 >= 0 && y0 + Lines<M>::N <= h) {  // inside the image: no test per pixel
    const float* at = img + (y0 * w + x) * ch + c0;
    for (int i = 0; i < Lines<M>::N; ++i) col[i] = _mm512_loadu_ps(at + i * w * ch);
  } else {
    for (int i = 0; i < Lines<M>::N; ++i) col[i] = pixel(img, h, w, ch, y0 + i, x, c0);
  }
  Lines<M>::input(col);
}

// B across the rows of a window whose columns went through B^T (cols[j][i]): point N i + j to v[pt * stride].
template <int M>
inline void input_rows(const __m512 (*cols)[Lines<M>::N], float* v, int64_t stride) {
  constexpr int N = Lines<M>::N;
  for (int i = 0; i < N; ++i) {
    __m512 r[N];
    for (int j = 0; j < N; ++j) r[j] = cols[j][i];
    Lines<M>::input(r);
    for (int j = 0; j < N; ++j) _mm512_storeu_ps(v + (N * i + j) * stride, r[j]);
  }
}

// The (M+2)x(M+2) window at (y0, x0) of `img` ([h][w][ch], one sample) as B^T d B.
template <int M>
inline void input_tile(const float* img, int64_t h, int64_t w, int64_t ch, int64_t y0, int64_t x0, int64_t c0,
                       float* v, int64_t stride) {
  __m512 cols[Lines<M>::N][Lines<M>::N];
  for (int j = 0; j < Lines<M>::N; ++j) input_column<M>(img, h, w, ch, y0, x0 + j, c0, cols[j]);
  input_rows<M>(cols, v, stride);
}

// input_tile for tiles that follow each other: a tile right of the previous one in the same row shares two of
// its window's columns with it, so only M columns are loaded and transformed down per tile along a row.
template <int M>
class InputRow {
 public:
  static constexpr int N = Lines<M>::N;
  InputRow(int64_t h, int64_t w, int64_t ch, int64_t c0) : h_(h), w_(w), ch_(ch), c0_(c0) {}
  // The window with top-left pixel (y0, x0) of sample image `img`.
  void tile(const float* img, int64_t y0, int64_t x0, float* v, int64_t stride) {
    if (img == img_ && y0 == y0_ && x0 == x0_ + M) {
      for (int j = 0; j < N - M; ++j)
        for (int i = 0; i < N; ++i) col_[j][i] = col_[j + M][i];
      for (int j = N - M; j < N; ++j) input_column<M>(img, h_, w_, ch_, y0, x0 + j, c0_, col_[j]);
    } else {
      for (int j = 0; j < N; ++j) input_column<M>(img, h_, w_, ch_, y0, x0 + j, c0_, col_[j]);
    }
    img_ = img, y0_ = y0, x0_ = x0;
    input_rows<M>(col_, v, stride);
  }

 private:
  const float* img_ = nullptr;
  int64_t h_, w_, ch_, c0_, y0_ = -1000, x0_ = -1000;
  __m512 col_[N][N];  // B^T down each column of the last window
};

// dy's MxM tile at (y0, x0) of `img` ([p][q][ch], one sample), channels [k0, k0 + 16), zero outside, as
// A e A^T into v[pt * stride].
template <int M>
inline void grad_tile(const float* img, int64_t p, int64_t q, int64_t ch, int64_t y0, int64_t x0, int64_t k0,
                      float* v, int64_t stride) {
  constexpr int N = Lines<M>::N;
  __m512 cols[M][N];  // A down each of the tile's columns
  const bool inside = y0 + M <= p && x0 + M <= q;  // no test per pixel
  for (int b = 0; b < M; ++b) {
    __m512 e[M];
    for (int a = 0; a < M; ++a)
      e[a] = inside ? _mm512_loadu_ps(img + ((y0 + a) * q + x0 + b) * ch + k0) : pixel(img, p, q, ch, y0 + a, x0 + b, k0);
    Lines<M>::gradient(e, cols[b]);
  }
  for (int i = 0; i < N; ++i) {
    __m512 e[M], r[N];
    for (int b = 0; b < M; ++b) e[b] = cols[b][i];
    Lines<M>::gradient(e, r);
    for (int j = 0; j < N; ++j) _mm512_storeu_ps(v + (N * i + j) * stride, r[j]);
  }
}

// m[t * ko] = sum_c v[t * ci + c] u[c * ko] for the kTiles tiles of a block: one point, 16 output channels.
// CI > 0: ci known when compiled, so every tile's broadcast is one base register plus a constant offset
// (a runtime ci needs a register per tile row, more than x86-64 has for kTiles rows).
template <int CI>
inline void point_gemm(const float* v, int64_t ci_runtime, const float* u, int64_t ko, float* m) {
  const int64_t ci = CI > 0 ? CI : ci_runtime;
  __m512 acc[kTiles];
#pragma GCC unroll 16
  for (int t = 0; t < kTiles; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t c = 0; c < ci; ++c) {
    const __m512 uc = _mm512_loadu_ps(u + c * ko);
#pragma GCC unroll 16
    for (int t = 0; t < kTiles; ++t) acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(v[t * ci + c]), uc, acc[t]);
  }
#pragma GCC unroll 16
  for (int t = 0; t < kTiles; ++t) _mm512_storeu_ps(m + t * ko, acc[t]);
}

// Sums of one 16-channel group over a block's output pixels for their moments: s = sum (v - shift) and
// q = sum (v - shift)^2, shift the block's first value. A shift inside the data bounds the cancellation of
// q - s^2 / n: (shift - mean)^2 <= n var for any one of n values, so m2 keeps all but log2(n) of float's bits
// however large the mean (a zero shift loses them all once |mean| >> std).
struct ShiftedSums {
  __m512 shift = _mm512_setzero_ps(), s = _mm512_setzero_ps(), q = _mm512_setzero_ps();
  bool started = false;
  void add(__m512 v) {
    if (!started) shift = v, started = true;
    const __m512 d = _mm512_sub_ps(v, shift);
    s = _mm512_add_ps(s, d);
    q = _mm512_fmadd_ps(d, d, q);
  }
  // The mean and the sum of squared deviations of `pixels` values per lane, in double.
  void moments(double pixels, double* mean, double* m2) const {
    alignas(64) float sh[16], ss[16], qq[16];
    _mm512_store_ps(sh, shift), _mm512_store_ps(ss, s), _mm512_store_ps(qq, q);
    for (int l = 0; l < 16; ++l) {
      mean[l] = sh[l] + ss[l] / pixels;
      m2[l] = std::max(0.0, qq[l] - static_cast<double>(ss[l]) * ss[l] / pixels);
    }
  }
};

// A^T m A + bias for one tile and 16 output channels (m's points at m[pt * stride]), written to the output
// pixels (oy, ox) .. (oy + M - 1, ox + M - 1) of `img` ([p][q][ko]) that exist; with `stream`, by non-temporal
// stores (img 64-byte aligned); with `add` (shaped like img), its value at each pixel added after the bias; with
// `sums`, each written value added to them.
template <int M>
inline void output_tile(const float* m, int64_t stride, __m512 bias, float* img, const float* add, int64_t p,
                        int64_t q, int64_t ko, int64_t oy, int64_t ox, bool stream, ShiftedSums* sums) {
  constexpr int N = Lines<M>::N;
  __m512 r[M][N];  // A^T down each column
  for (int j = 0; j < N; ++j) {
    __m512 col[N], y[M];
    for (int i = 0; i < N; ++i) col[i] = _mm512_loadu_ps(m + (N * i + j) * stride);
    Lines<M>::output(col, y);
    for (int a = 0; a < M; ++a) r[a][j] = y[a];
  }
  for (int a = 0; a < M && oy + a < p; ++a) {
    __m512 y[M];
    Lines<M>::output(r[a], y);
    float* row = img + (oy + a) * q * ko;
    for (int b = 0; b < M && ox + b < q; ++b) {
      __m512 v = _mm512_add_ps(y[b], bias);
      if (add) v = _mm512_add_ps(v, _mm512_loadu_ps(add + ((oy + a) * q + ox + b) * ko));
      if (sums) sums->add(v);
      if (stream) _mm512_stream_ps(row + (ox + b) * ko, v);
      else _mm512_storeu_ps(row + (ox + b) * ko, v);
    }
  }
}

// Prefetches floats [p, p + floats) into L2 (not L1: a block's transforms and U fill it).
inline void prefetch_l2(const float* p, int64_t floats) {
  for (int64_t i = 0; i < floats; i += 16) _mm_prefetch(reinterpret_cast<const char*>(p + i), _MM_HINT_T1);
}

// A tile's sample and position, stepped through consecutive tile numbers without dividing per tile.
struct TileCursor {
  int64_t th, tw, n, ty, tx;
  TileCursor(int64_t tile, int64_t rows, int64_t cols)
      : th(rows), tw(cols), n(tile / (rows * cols)), ty(tile / cols % rows), tx(tile % cols) {}
  void next() {
    if (++tx < tw) return;
    tx = 0;
    if (++ty < th) return;
    ty = 0;
    ++n;
  }
};

// Prefetches the image rows that tiles [first, first + count) of an n-sample batch (ceil-tiled th x tw) read
// from img ([n][h][w][ch]) through their windows at (M ty - pad_h, M tx - pad_w), span x span pixels (M + 2 for
// the input, M for dy); a tile right of another skips the columns it shares with it.
template <int M>
inline void prefetch_tiles(const float* img, int64_t n, int64_t h, int64_t w, int64_t ch, int64_t th, int64_t tw,
                           int64_t pad_h, int64_t pad_w, int span, int64_t first, int count) {
  const int64_t total = n * th * tw;
  if (first >= total) return;
  TileCursor at(first, th, tw);
  for (int t = 0; t < count && first + t < total; ++t, at.next()) {
    const int64_t y0 = M * at.ty - pad_h, x0 = M * at.tx - pad_w;
    const int64_t xa = std::max<int64_t>(0, at.tx > 0 ? x0 + span - M : x0), xb = std::min<int64_t>(w, x0 + span);
    if (xa >= xb) continue;
    for (int64_t y = std::max<int64_t>(0, y0); y < std::min<int64_t>(h, y0 + span); ++y)
      prefetch_l2(img + ((at.n * h + y) * w + xa) * ch, (xb - xa) * ch);
  }
}

}  // namespace

template <int M>
void forward_tiles(const Conv& c, int64_t first, int count, float* buf) {
  constexpr int P = points(M);
  const int64_t ci = c.ci, ko = c.ko, th = (c.p + M - 1) / M, tw = (c.q + M - 1) / M;
  float* v = buf;                            // [P][kTiles][ci]
  float* m = buf + int64_t{P} * kTiles * ci;  // [P][kTiles][ko]
  for (int t = count; t < kTiles; ++t)  // a short last block: zeros, so the GEMMs multiply nothing undefined
    for (int pt = 0; pt < P; ++pt) std::fill_n(v + (int64_t{pt} * kTiles + t) * ci, ci, 0.0f);
  for (int64_t c0 = 0; c0 < ci; c0 += 16) {
    InputRow<M> row(c.h, c.w, ci, c0);
    TileCursor in(first, th, tw);
    for (int t = 0; t < count; ++t, in.next())
      row.tile(c.in + in.n * c.h * c.w * ci, M * in.ty - c.pad_h, M * in.tx - c.pad_w, v + t * ci + c0, kTiles * ci);
  }
  const auto gemm = ci == 16 ? point_gemm<16> : ci == 32 ? point_gemm<32> : ci == 64 ? point_gemm<64> : point_gemm<0>;
  for (int pt = 0; pt < P; ++pt)
    for (int64_t k0 = 0; k0 < ko; k0 += 16)
      gemm(v + int64_t{pt} * kTiles * ci, ci, c.u + pt * ci * ko + k0, ko, m + int64_t{pt} * kTiles * ko + k0);
  prefetch_tiles<M>(c.in, c.n, c.h, c.w, ci, th, tw, c.pad_h, c.pad_w, M + 2, first + kTiles, kTiles);
  if (c.add) prefetch_tiles<M>(c.add, c.n, c.p, c.q, ko, th, tw, 0, 0, M, first + kTiles, kTiles);
  // The output goes to memory by non-temporal stores where it is aligned for them: a training step's
  // activations and gradients are written to buffers the cache no longer holds, and a normal store first reads
  // each line back (resnet20: the x16 convolutions' forward passes 28-31 -> 20-22 ms a step, the step 6-12 %
  // faster, though the batch normalization after them then reads from memory; conv_cpu_2core.md).
  const bool stream = reinterpret_cast<uintptr_t>(c.out) % 64 == 0;
  double* moments = c.moments ? c.moments + first / kTiles * moment_stride(ko) : nullptr;
  double pixels = 0.0;
  for (int64_t k0 = 0; k0 < ko; k0 += 16) {
    const __m512 bias = c.bias ? _mm512_loadu_ps(c.bias + k0) : _mm512_setzero_ps();
    ShiftedSums sums;
    TileCursor out(first, th, tw);
    for (int t = 0; t < count; ++t, out.next()) {
      const int64_t image = out.n * c.p * c.q * ko;
      output_tile<M>(m + t * ko + k0, kTiles * ko, bias, c.out + image + k0, c.add ? c.add + image + k0 : nullptr,
                     c.p, c.q, ko, M * out.ty, M * out.tx, stream, moments ? &sums : nullptr);
      if (moments && k0 == 0) pixels += std::min<int64_t>(M, c.p - M * out.ty) * std::min<int64_t>(M, c.q - M * out.tx);
    }
    if (moments) sums.moments(pixels, moments + k0, moments + ko + k0);
  }
  if (moments) moments[2 * ko] = pixels;
  if (stream) _mm_sfence();  // ordered before whatever reads them next, on this thread or another
}

template <int M>
void filter_tiles(const Filter& f, int64_t first, int count, float* s, float* buf) {
  constexpr int P = points(M);
  const int64_t ch = f.c, k = f.k, th = (f.p + M - 1) / M, tw = (f.q + M - 1) / M;
  float* v = buf;                                  // [P][kFilterTiles][c]
  float* e = buf + int64_t{P} * kFilterTiles * ch;  // [P][kFilterTiles][k]
  for (int64_t c0 = 0; c0 < ch; c0 += 16) {
    InputRow<M> row(f.h, f.w, ch, c0);
    TileCursor at(first, th, tw);
    for (int t = 0; t < count; ++t, at.next())
      row.tile(f.x + at.n * f.h * f.w * ch, M * at.ty - f.pad_h, M * at.tx - f.pad_w, v + t * ch + c0,
               kFilterTiles * ch);
  }
  prefetch_tiles<M>(f.x, f.n, f.h, f.w, ch, th, tw, f.pad_h, f.pad_w, M + 2, first + kFilterTiles, kFilterTiles);
  prefetch_tiles<M>(f.dy, f.n, f.p, f.q, k, th, tw, 0, 0, M, first + kFilterTiles, kFilterTiles);
  TileCursor at(first, th, tw);
  for (int t = 0; t < count; ++t, at.next())
    for (int64_t k0 = 0; k0 < k; k0 += 16)
      grad_tile<M>(f.dy + at.n * f.p * f.q * k, f.p, f.q, k, M * at.ty, M * at.tx, k0, e + t * k + k0,
                   kFilterTiles * k);
  // s[pt][c][k0..] += sum_t v[pt][t][c] e[pt][t][k0..]: 16 rows of s in registers per (point, c0, k0)
  for (int pt = 0; pt < P; ++pt)
    for (int64_t c0 = 0; c0 < ch; c0 += 16)
      for (int64_t k0 = 0; k0 < k; k0 += 16) {
        float* srow = s + (pt * ch + c0) * k + k0;
        __m512 acc[16];
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) acc[r] = _mm512_loadu_ps(srow + r * k);
        for (int t = 0; t < count; ++t) {
          const __m512 et = _mm512_loadu_ps(e + (int64_t{pt} * kFilterTiles + t) * k + k0);
          const float* vt = v + (int64_t{pt} * kFilterTiles + t) * ch + c0;
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(vt[r]), et, acc[r]);
        }
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) _mm512_storeu_ps(srow + r * k, acc[r]);
      }
}

template void forward_tiles<2>(const Conv&, int64_t, int, float*);
template void forward_tiles<4>(const Conv&, int64_t, int, float*);
template void filter_tiles<2>(const Filter&, int64_t, int, float*, float*);
template void filter_tiles<4>(const Filter&, int64_t, int, float*, float*);

}  // namespace dtnn::winograd_x16

#endif
