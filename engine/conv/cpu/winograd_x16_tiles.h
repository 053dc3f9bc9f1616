// The tile code of cpu.winograd_x16 and cpu.winograd_x16_f4 (contracts in winograd_x16.h), written once over a
// 16-float vector type V and included only by the files that instantiate it for one instruction set:
// winograd_x16_avx512.cpp (V = one zmm register, compiled with -mavx512f) and winograd_x16_avx2.cpp (V = two ymm
// registers). Everything here has internal linkage, so each of them compiles its own copy with its own flags.
//
// V provides: V::load(p), V::zero(), V::splat(x), V::store(p, v), V::stream(p, v) (non-temporal, p 64-byte
// aligned); a + b, a - b, a * b, fmadd(a, b, c) = a b + c, fmsub(a, b, c) = a b - c, fnmadd(a, b, c) = c - a b;
// and the two GEMM kernels whose register blocking depends on the register file:
//   V::point_gemm_for(ci): a function (v, ci, u, ko, m) with m[t * ko + 0:16] = sum_c v[t * ci + c] u[c * ko + 0:16]
//                          for t < kTiles (the block's tiles at one transform point, 16 output channels);
//   V::accumulate(s, lds, v, ldv, e, lde, count): s[r * lds + 0:16] += sum_{t < count} v[t * ldv + r] e[t * lde + 0:16]
//                          for r < 16 (16 x 16 sums of the weight gradient at one point).
//
// The tile code is written once over M; Lines<V, M> holds each algorithm's three 1-D transforms, applied down
// the columns and then along the rows of a tile.
// F(2x2,3x3) (Lavin and Gray), as correlation:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   A^T = [1 1 1 0; 0 1 -1 -1]
// F(4x4,3x3) from the points 0, 1, -1, 1/2, -1/2 and infinity (as cpu.winograd_f4, whose float error they
// keep near 1e-5 relative), B^T's rows scaled to small integers (G's rows by the inverse, winograd_x16.cpp):
//   B^T = [1 0 -5 0 4 0; 0 -1 -1 4 4 0; 0 1 -1 -4 4 0; 0 1 2 -1 -2 0; 0 -1 2 1 -2 0; 0 1 0 -5 0 4]
//   A^T = [1 1 1 1 1 0; 0 1 -1 1/2 -1/2 0; 0 1 1 1/4 1/4 0; 0 1 -1 1/8 -1/8 1]
// The weight gradient uses the transposed algorithm: dy's MxM tile goes through A, x's window through B^T as
// in the forward pass.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "conv/cpu/winograd_x16.h"

namespace dtnn::winograd_x16 {
namespace {

template <class V, int M>
struct Lines;

template <class V>
struct Lines<V, 2> {
  static constexpr int N = 4;
  // d = B^T d, in place.
  static void input(V* d) {
    const V t0 = d[0] - d[2], t1 = d[1] + d[2], t2 = d[2] - d[1], t3 = d[1] - d[3];
    d[0] = t0, d[1] = t1, d[2] = t2, d[3] = t3;
  }
  // y = A^T m (N values to M).
  static void output(const V* m, V* y) {
    y[0] = (m[0] + m[1]) + m[2];
    y[1] = (m[1] - m[2]) - m[3];
  }
  // r = A e (M values to N).
  static void gradient(const V* e, V* r) {
    r[0] = e[0];
    r[1] = e[0] + e[1];
    r[2] = e[0] - e[1];
    r[3] = V::zero() - e[1];
  }
};

template <class V>
struct Lines<V, 4> {
  static constexpr int N = 6;
  static void input(V* d) {
    const V four = V::splat(4.0f), five = V::splat(5.0f), two = V::splat(2.0f);
    const V a = fmsub(four, d[4], d[2]), b = fmsub(four, d[3], d[1]);  // 4d4 - d2, 4d3 - d1
    const V c = d[2] - d[4], e = d[1] - d[3];
    const V t0 = fmadd(four, d[4], fnmadd(five, d[2], d[0]));
    const V t5 = fmadd(four, d[5], fnmadd(five, d[3], d[1]));
    d[0] = t0, d[1] = a + b, d[2] = a - b;
    d[3] = fmadd(two, c, e), d[4] = fmsub(two, c, e), d[5] = t5;
  }
  static void output(const V* m, V* y) {
    const V s12 = m[1] + m[2], d12 = m[1] - m[2];
    const V s34 = m[3] + m[4], d34 = m[3] - m[4];
    y[0] = (m[0] + s12) + s34;
    y[1] = fmadd(V::splat(0.5f), d34, d12);
    y[2] = fmadd(V::splat(0.25f), s34, s12);
    y[3] = fmadd(V::splat(0.125f), d34, d12) + m[5];
  }
  static void gradient(const V* e, V* r) {
    const V p = e[0] + e[2], q = e[1] + e[3];
    const V p4 = fmadd(V::splat(0.25f), e[2], e[0]);  // e0 + e2/4
    const V q4 = V::splat(0.5f) * fmadd(V::splat(0.25f), e[3], e[1]);
    r[0] = e[0], r[1] = p + q, r[2] = p - q;
    r[3] = p4 + q4, r[4] = p4 - q4, r[5] = e[3];
  }
};

// Pixel (y, x) of `img` ([h][w][ch], one sample), channels [c0, c0 + 16); zero outside the image.
template <class V>
inline V pixel(const float* img, int64_t h, int64_t w, int64_t ch, int64_t y, int64_t x, int64_t c0) {
  return y >= 0 && y < h && x >= 0 && x < w ? V::load(img + (y * w + x) * ch + c0) : V::zero();
}

// B^T down column x of the M+2 rows from y0 of `img` (channels [c0, c0 + 16)), zero outside.
template <class V, int M>
inline void input_column(const float* img, int64_t h, int64_t w, int64_t ch, int64_t y0, int64_t x, int64_t c0,
                         V* col) {
  constexpr int N = Lines<V, M>::N;
  if (x >= 0 && x < w && y0 >= 0 && y0 + N <= h) {  // inside the image: no test per pixel
    const float* at = img + (y0 * w + x) * ch + c0;
    for (int i = 0; i < N; ++i) col[i] = V::load(at + i * w * ch);
  } else {
    for (int i = 0; i < N; ++i) col[i] = pixel<V>(img, h, w, ch, y0 + i, x, c0);
  }
  Lines<V, M>::input(col);
}

// B across the rows of a window whose columns went through B^T (cols[j][i]): point N i + j to v[pt * stride].
template <class V, int M>
inline void input_rows(const V (*cols)[Lines<V, M>::N], float* v, int64_t stride) {
  constexpr int N = Lines<V, M>::N;
  for (int i = 0; i < N; ++i) {
    V r[N];
    for (int j = 0; j < N; ++j) r[j] = cols[j][i];
    Lines<V, M>::input(r);
    for (int j = 0; j < N; ++j) V::store(v + (N * i + j) * stride, r[j]);
  }
}

// The (M+2)x(M+2) windows of tiles that follow each other, as B^T d B: a tile right of the previous one in the
// same row shares two of its window's columns with it, so only M columns are loaded and transformed down per
// tile along a row.
template <class V, int M>
class InputRow {
 public:
  static constexpr int N = Lines<V, M>::N;
  InputRow(int64_t h, int64_t w, int64_t ch, int64_t c0) : h_(h), w_(w), ch_(ch), c0_(c0) {}
  // The window with top-left pixel (y0, x0) of sample image `img`.
  void tile(const float* img, int64_t y0, int64_t x0, float* v, int64_t stride) {
    if (img == img_ && y0 == y0_ && x0 == x0_ + M) {
      for (int j = 0; j < N - M; ++j)
        for (int i = 0; i < N; ++i) col_[j][i] = col_[j + M][i];
      for (int j = N - M; j < N; ++j) input_column<V, M>(img, h_, w_, ch_, y0, x0 + j, c0_, col_[j]);
    } else {
      for (int j = 0; j < N; ++j) input_column<V, M>(img, h_, w_, ch_, y0, x0 + j, c0_, col_[j]);
    }
    img_ = img, y0_ = y0, x0_ = x0;
    input_rows<V, M>(col_, v, stride);
  }

 private:
  const float* img_ = nullptr;
  int64_t h_, w_, ch_, c0_, y0_ = -1000, x0_ = -1000;
  V col_[N][N];  // B^T down each column of the last window
};

// dy's MxM tile at (y0, x0) of `img` ([p][q][ch], one sample), channels [k0, k0 + 16), zero outside, as
// A e A^T into v[pt * stride].
template <class V, int M>
inline void grad_tile(const float* img, int64_t p, int64_t q, int64_t ch, int64_t y0, int64_t x0, int64_t k0,
                      float* v, int64_t stride) {
  constexpr int N = Lines<V, M>::N;
  V cols[M][N];  // A down each of the tile's columns
  const bool inside = y0 + M <= p && x0 + M <= q;  // no test per pixel
  for (int b = 0; b < M; ++b) {
    V e[M];
    for (int a = 0; a < M; ++a)
      e[a] = inside ? V::load(img + ((y0 + a) * q + x0 + b) * ch + k0) : pixel<V>(img, p, q, ch, y0 + a, x0 + b, k0);
    Lines<V, M>::gradient(e, cols[b]);
  }
  for (int i = 0; i < N; ++i) {
    V e[M], r[N];
    for (int b = 0; b < M; ++b) e[b] = cols[b][i];
    Lines<V, M>::gradient(e, r);
    for (int j = 0; j < N; ++j) V::store(v + (N * i + j) * stride, r[j]);
  }
}

// Sums of one 16-channel group over a block's output pixels for their moments: s = sum (v - shift) and
// q = sum (v - shift)^2, shift the block's first value. A shift inside the data bounds the cancellation of
// q - s^2 / n: (shift - mean)^2 <= n var for any one of n values, so m2 keeps all but log2(n) of float's bits
// however large the mean (a zero shift loses them all once |mean| >> std).
template <class V>
struct ShiftedSums {
  V shift = V::zero(), s = V::zero(), q = V::zero();
  bool started = false;
  void add(V v) {
    if (!started) shift = v, started = true;
    const V d = v - shift;
    s = s + d;
    q = fmadd(d, d, q);
  }
  // The mean and the sum of squared deviations of `pixels` values per lane, in double.
  void moments(double pixels, double* mean, double* m2) const {
    alignas(64) float sh[16], ss[16], qq[16];
    V::store(sh, shift), V::store(ss, s), V::store(qq, q);
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
template <class V, int M>
inline void output_tile(const float* m, int64_t stride, V bias, float* img, const float* add, int64_t p, int64_t q,
                        int64_t ko, int64_t oy, int64_t ox, bool stream, ShiftedSums<V>* sums) {
  constexpr int N = Lines<V, M>::N;
  V r[M][N];  // A^T down each column
  for (int j = 0; j < N; ++j) {
    V col[N], y[M];
    for (int i = 0; i < N; ++i) col[i] = V::load(m + (N * i + j) * stride);
    Lines<V, M>::output(col, y);
    for (int a = 0; a < M; ++a) r[a][j] = y[a];
  }
  for (int a = 0; a < M && oy + a < p; ++a) {
    V y[M];
    Lines<V, M>::output(r[a], y);
    float* row = img + (oy + a) * q * ko;
    for (int b = 0; b < M && ox + b < q; ++b) {
      V v = y[b] + bias;
      if (add) v = v + V::load(add + ((oy + a) * q + ox + b) * ko);
      if (sums) sums->add(v);
      if (stream) V::stream(row + (ox + b) * ko, v);
      else V::store(row + (ox + b) * ko, v);
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

// The inputs of tiles [first, first + count) transformed into v ([P][kTiles][ci]); a short block's missing tiles
// as zeros, so the GEMMs multiply nothing undefined.
template <class V, int M>
void input_block(const Conv& c, int64_t first, int count, float* v) {
  constexpr int P = points(M);
  const int64_t ci = c.ci, th = (c.p + M - 1) / M, tw = (c.q + M - 1) / M;
  for (int t = count; t < kTiles; ++t)
    for (int pt = 0; pt < P; ++pt) std::fill_n(v + (int64_t{pt} * kTiles + t) * ci, ci, 0.0f);
  for (int64_t c0 = 0; c0 < ci; c0 += 16) {
    InputRow<V, M> row(c.h, c.w, ci, c0);
    TileCursor in(first, th, tw);
    for (int t = 0; t < count; ++t, in.next())
      row.tile(c.in + in.n * c.h * c.w * ci, M * in.ty - c.pad_h, M * in.tx - c.pad_w, v + t * ci + c0, kTiles * ci);
  }
}

template <class V, int M>
void forward_tiles_on(const Conv& c, int64_t first, int count, float* buf) {
  constexpr int P = points(M);
  const int64_t ci = c.ci, ko = c.ko, th = (c.p + M - 1) / M, tw = (c.q + M - 1) / M;
  float* v = buf;                             // [P][kTiles][ci]
  float* m = buf + int64_t{P} * kTiles * ci;  // [P][kTiles][ko]
  input_block<V, M>(c, first, count, v);
  const auto gemm = V::point_gemm_for(ci);
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
    const V bias = c.bias ? V::load(c.bias + k0) : V::zero();
    ShiftedSums<V> sums;
    TileCursor out(first, th, tw);
    for (int t = 0; t < count; ++t, out.next()) {
      const int64_t image = out.n * c.p * c.q * ko;
      output_tile<V, M>(m + t * ko + k0, kTiles * ko, bias, c.out + image + k0, c.add ? c.add + image + k0 : nullptr,
                        c.p, c.q, ko, M * out.ty, M * out.tx, stream, moments ? &sums : nullptr);
      if (moments && k0 == 0) pixels += std::min<int64_t>(M, c.p - M * out.ty) * std::min<int64_t>(M, c.q - M * out.tx);
    }
    if (moments) sums.moments(pixels, moments + k0, moments + ko + k0);
  }
  if (moments) moments[2 * ko] = pixels;
  if (stream) _mm_sfence();  // ordered before whatever reads them next, on this thread or another
}

template <class V, int M>
void filter_tiles_on(const Filter& f, int64_t first, int count, float* s, float* buf) {
  constexpr int P = points(M);
  const int64_t ch = f.c, k = f.k, th = (f.p + M - 1) / M, tw = (f.q + M - 1) / M;
  float* v = buf;                                   // [P][kFilterTiles][c]
  float* e = buf + int64_t{P} * kFilterTiles * ch;  // [P][kFilterTiles][k]
  for (int64_t c0 = 0; c0 < ch; c0 += 16) {
    InputRow<V, M> row(f.h, f.w, ch, c0);
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
      grad_tile<V, M>(f.dy + at.n * f.p * f.q * k, f.p, f.q, k, M * at.ty, M * at.tx, k0, e + t * k + k0,
                      kFilterTiles * k);
  for (int pt = 0; pt < P; ++pt)
    for (int64_t c0 = 0; c0 < ch; c0 += 16)
      for (int64_t k0 = 0; k0 < k; k0 += 16)
        V::accumulate(s + (pt * ch + c0) * k + k0, k, v + int64_t{pt} * kFilterTiles * ch + c0, ch,
                      e + int64_t{pt} * kFilterTiles * k + k0, k, count);
}

}  // namespace
}  // namespace dtnn::winograd_x16
