// cpu.winograd_x16's AVX-512 kernels (contracts in winograd_x16.h). This file alone of the algorithm is
// compiled with -mavx512f -mfma (engine/CMakeLists.txt); winograd_x16.cpp calls it only where AVX-512F runs.
//
// F(2x2,3x3) (Lavin and Gray), as correlation:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   A^T = [1 1 1 0; 0 1 -1 -1]
// so an input line (d0..d3) transforms to (d0 - d2, d1 + d2, d2 - d1, d1 - d3) and a transformed output
// line (m0..m3) back to (m0 + m1 + m2, m1 - m2 - m3). The weight gradient uses the transposed algorithm:
// dy's 2x2 tile goes through A (a line (e0, e1) to (e0, e0 + e1, e0 - e1, -e1)), x's window through B^T as
// in the forward pass.
#include "conv/cpu/winograd_x16.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#include <algorithm>

namespace dtnn::winograd_x16 {
namespace {

// One line of B^T d.
inline void bt_line(__m512& d0, __m512& d1, __m512& d2, __m512& d3) {
  const __m512 t0 = _mm512_sub_ps(d0, d2), t1 = _mm512_add_ps(d1, d2), t2 = _mm512_sub_ps(d2, d1),
               t3 = _mm512_sub_ps(d1, d3);
  d0 = t0, d1 = t1, d2 = t2, d3 = t3;
}

// The 4x4 window of `img` ([h][w][ch], one sample) with top-left pixel (y0, x0), channels [c0, c0 + 16),
// zero outside the image, as B^T d B: point pt = 4 i + j goes to v[pt * stride].
inline void input_tile(const float* img, int64_t h, int64_t w, int64_t ch, int64_t y0, int64_t x0, int64_t c0,
                       float* v, int64_t stride) {
  __m512 d[4][4];
  if (y0 >= 0 && y0 + 4 <= h && x0 >= 0 && x0 + 4 <= w) {  // inside the image: no tests per pixel
    const float* base = img + (y0 * w + x0) * ch + c0;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) d[i][j] = _mm512_loadu_ps(base + (i * w + j) * ch);
  } else {
    for (int i = 0; i < 4; ++i) {
      const int64_t y = y0 + i;
      for (int j = 0; j < 4; ++j) {
        const int64_t x = x0 + j;
        d[i][j] = y >= 0 && y < h && x >= 0 && x < w ? _mm512_loadu_ps(img + (y * w + x) * ch + c0) : _mm512_setzero_ps();
      }
    }
  }
  for (int j = 0; j < 4; ++j) bt_line(d[0][j], d[1][j], d[2][j], d[3][j]);
  for (int i = 0; i < 4; ++i) bt_line(d[i][0], d[i][1], d[i][2], d[i][3]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(v + (4 * i + j) * stride, d[i][j]);
}

// B^T down column x of the 4-row window from row y0 of `img` (channels [c0, c0 + 16)), zero outside.
inline void input_column(const float* img, int64_t h, int64_t w, int64_t ch, int64_t y0, int64_t x, int64_t c0,
                         __m512 col[4]) {
  const bool in = x >= 0 && x < w;
  for (int i = 0; i < 4; ++i) {
    const int64_t y = y0 + i;
    col[i] = in && y >= 0 && y < h ? _mm512_loadu_ps(img + (y * w + x) * ch + c0) : _mm512_setzero_ps();
  }
  bt_line(col[0], col[1], col[2], col[3]);
}

// Transforms, for channels [c0, c0 + 16), the input windows of tiles that follow each other: a tile right of
// the previous one in the same row shares two of its window's columns with it, so only two columns are
// loaded and transformed down (B^T d) per tile along a row; then B across each row.
class InputRow {
 public:
  InputRow(const float* img, int64_t h, int64_t w, int64_t ch, int64_t c0) : img_(img), h_(h), w_(w), ch_(ch), c0_(c0) {}
  // The window with top-left pixel (y0, x0) of sample image `img`, to v[pt * stride].
  void tile(const float* img, int64_t y0, int64_t x0, float* v, int64_t stride) {
    if (img == img_ && y0 == y0_ && x0 == x0_ + 2) {
      for (int i = 0; i < 4; ++i) col_[0][i] = col_[2][i], col_[1][i] = col_[3][i];
      input_column(img, h_, w_, ch_, y0, x0 + 2, c0_, col_[2]);
      input_column(img, h_, w_, ch_, y0, x0 + 3, c0_, col_[3]);
    } else {
      for (int j = 0; j < 4; ++j) input_column(img, h_, w_, ch_, y0, x0 + j, c0_, col_[j]);
    }
    img_ = img, y0_ = y0, x0_ = x0;
    for (int i = 0; i < 4; ++i) {
      __m512 r0 = col_[0][i], r1 = col_[1][i], r2 = col_[2][i], r3 = col_[3][i];
      bt_line(r0, r1, r2, r3);
      _mm512_storeu_ps(v + (4 * i) * stride, r0);
      _mm512_storeu_ps(v + (4 * i + 1) * stride, r1);
      _mm512_storeu_ps(v + (4 * i + 2) * stride, r2);
      _mm512_storeu_ps(v + (4 * i + 3) * stride, r3);
    }
  }

 private:
  const float* img_;
  int64_t h_, w_, ch_, c0_, y0_ = -1000, x0_ = -1000;
  __m512 col_[4][4];
};

// dy's 2x2 tile at (y0, x0) of `img` ([p][q][ch], one sample), channels [k0, k0 + 16), zero outside, as
// A e A^T into v[pt * stride].
inline void grad_tile(const float* img, int64_t p, int64_t q, int64_t ch, int64_t y0, int64_t x0, int64_t k0,
                      float* v, int64_t stride) {
  __m512 e[2][2];
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      e[a][b] = y0 + a < p && x0 + b < q ? _mm512_loadu_ps(img + ((y0 + a) * q + x0 + b) * ch + k0) : _mm512_setzero_ps();
  __m512 r[4][2];
  for (int b = 0; b < 2; ++b) {
    r[0][b] = e[0][b];
    r[1][b] = _mm512_add_ps(e[0][b], e[1][b]);
    r[2][b] = _mm512_sub_ps(e[0][b], e[1][b]);
    r[3][b] = _mm512_sub_ps(_mm512_setzero_ps(), e[1][b]);
  }
  for (int i = 0; i < 4; ++i) {
    _mm512_storeu_ps(v + (4 * i) * stride, r[i][0]);
    _mm512_storeu_ps(v + (4 * i + 1) * stride, _mm512_add_ps(r[i][0], r[i][1]));
    _mm512_storeu_ps(v + (4 * i + 2) * stride, _mm512_sub_ps(r[i][0], r[i][1]));
    _mm512_storeu_ps(v + (4 * i + 3) * stride, _mm512_sub_ps(_mm512_setzero_ps(), r[i][1]));
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

// A^T m A + bias for one tile and 16 output channels (m's points at m[pt * stride]), written to the output
// pixels (oy, ox) .. (oy + 1, ox + 1) of `img` ([p][q][ko]) that exist.
inline void output_tile(const float* m, int64_t stride, __m512 bias, float* img, int64_t p, int64_t q, int64_t ko,
                        int64_t oy, int64_t ox) {
  __m512 r[2][4];
  for (int j = 0; j < 4; ++j) {
    const __m512 m0 = _mm512_loadu_ps(m + j * stride), m1 = _mm512_loadu_ps(m + (4 + j) * stride),
                 m2 = _mm512_loadu_ps(m + (8 + j) * stride), m3 = _mm512_loadu_ps(m + (12 + j) * stride);
    r[0][j] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
    r[1][j] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
  }
  for (int a = 0; a < 2 && oy + a < p; ++a) {
    float* row = img + (oy + a) * q * ko;
    _mm512_storeu_ps(row + ox * ko, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(r[a][0], r[a][1]), r[a][2]), bias));
    if (ox + 1 < q)
      _mm512_storeu_ps(row + (ox + 1) * ko,
                       _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(r[a][1], r[a][2]), r[a][3]), bias));
  }
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

}  // namespace

void forward_tiles(const Conv& c, int64_t first, int count, float* buf) {
  const int64_t ci = c.ci, ko = c.ko, th = (c.p + 1) / 2, tw = (c.q + 1) / 2;
  float* v = buf;                                  // [16][kTiles][ci]
  float* m = buf + int64_t{kPoints} * kTiles * ci;  // [16][kTiles][ko]
  for (int t = count; t < kTiles; ++t)  // a short last block: zeros, so the GEMMs multiply nothing undefined
    for (int pt = 0; pt < kPoints; ++pt) std::fill_n(v + (int64_t{pt} * kTiles + t) * ci, ci, 0.0f);
  for (int64_t c0 = 0; c0 < ci; c0 += 16) {
    InputRow row(nullptr, c.h, c.w, ci, c0);
    TileCursor in(first, th, tw);
    for (int t = 0; t < count; ++t, in.next())
      row.tile(c.in + in.n * c.h * c.w * ci, 2 * in.ty - c.pad_h, 2 * in.tx - c.pad_w, v + t * ci + c0, kTiles * ci);
  }
  const auto gemm = ci == 16 ? point_gemm<16> : ci == 32 ? point_gemm<32> : ci == 64 ? point_gemm<64> : point_gemm<0>;
  for (int pt = 0; pt < kPoints; ++pt)
    for (int64_t k0 = 0; k0 < ko; k0 += 16)
      gemm(v + int64_t{pt} * kTiles * ci, ci, c.u + pt * ci * ko + k0, ko, m + int64_t{pt} * kTiles * ko + k0);
  TileCursor out(first, th, tw);
  for (int t = 0; t < count; ++t, out.next()) {
    float* img = c.out + out.n * c.p * c.q * ko;
    for (int64_t k0 = 0; k0 < ko; k0 += 16) {
      const __m512 bias = c.bias ? _mm512_loadu_ps(c.bias + k0) : _mm512_setzero_ps();
      output_tile(m + t * ko + k0, kTiles * ko, bias, img + k0, c.p, c.q, ko, 2 * out.ty, 2 * out.tx);
    }
  }
}

void filter_tiles(const Filter& f, int64_t first, int count, float* s, float* buf) {
  const int64_t ch = f.c, k = f.k, th = (f.p + 1) / 2, tw = (f.q + 1) / 2;
  float* v = buf;                                  // [16][kTiles][c]
  float* e = buf + int64_t{kPoints} * kTiles * ch;  // [16][kTiles][k]
  TileCursor at(first, th, tw);
  for (int t = 0; t < count; ++t, at.next()) {
    const float* x = f.x + at.n * f.h * f.w * ch;
    const float* dy = f.dy + at.n * f.p * f.q * k;
    for (int64_t c0 = 0; c0 < ch; c0 += 16)
      input_tile(x, f.h, f.w, ch, 2 * at.ty - f.pad_h, 2 * at.tx - f.pad_w, c0, v + t * ch + c0, kTiles * ch);
    for (int64_t k0 = 0; k0 < k; k0 += 16)
      grad_tile(dy, f.p, f.q, k, 2 * at.ty, 2 * at.tx, k0, e + t * k + k0, kTiles * k);
  }
  // s[pt][c][k0..] += sum_t v[pt][t][c] e[pt][t][k0..]: 16 rows of s in registers per (point, c0, k0)
  for (int pt = 0; pt < kPoints; ++pt)
    for (int64_t c0 = 0; c0 < ch; c0 += 16)
      for (int64_t k0 = 0; k0 < k; k0 += 16) {
        float* srow = s + (pt * ch + c0) * k + k0;
        __m512 acc[16];
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) acc[r] = _mm512_loadu_ps(srow + r * k);
        for (int t = 0; t < count; ++t) {
          const __m512 et = _mm512_loadu_ps(e + (int64_t{pt} * kTiles + t) * k + k0);
          const float* vt = v + (int64_t{pt} * kTiles + t) * ch + c0;
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(vt[r]), et, acc[r]);
        }
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) _mm512_storeu_ps(srow + r * k, acc[r]);
      }
}

}  // namespace dtnn::winograd_x16

#endif
