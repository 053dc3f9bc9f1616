#include "conv/cpu/implicit_forward.h"

#include <algorithm>
#include <cstring>
#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace dtnn {
namespace {

int64_t padded_numel(const ConvProblem& p) { return p.n * (p.h + 2 * p.pad_h) * (p.w + 2 * p.pad_w) * p.c; }
int64_t lanes(const ConvProblem& p) { return p.k <= 8 ? 8 : 16; }  // K rounded up to whole vectors

}  // namespace

#ifdef __AVX2__

bool implicit_forward_supported(const ConvProblem& p) {
  return p.layout == Layout::nhwc && p.groups == 1 && (p.k == 4 || p.k == 8 || p.k == 16);
}

int64_t implicit_forward_workspace(const ConvProblem& p) {
  return (padded_numel(p) + 15) / 16 * 16 + p.r * p.s * p.c * lanes(p) + 16;
}

namespace {

// K == 8*NV: NV vectors per output pixel, PIX pixels per step (8 independent accumulators, enough to
// hide the FMA latency).
template <int NV, int PIX>
void run_vectors(const ConvProblem& p, const float* xp, const float* wt, const float* bias, float* y) {
  const int64_t P = p.p(), Q = p.q(), C = p.c, K = p.k, Wp = p.w + 2 * p.pad_w, Hp = p.h + 2 * p.pad_h;
  const int64_t L = NV * 8, pix = p.stride_w * C;  // lanes, input step between neighbouring output pixels
  __m256 b[NV];
  for (int v = 0; v < NV; ++v) b[v] = _mm256_loadu_ps(bias + 8 * v);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < P; ++oh) {
      const float* xrow = xp + (n * Hp + oh * p.stride_h) * Wp * C;
      float* yrow = y + (n * P + oh) * Q * K;
      // The last block overlaps the previous one instead of leaving a remainder (recomputing a few
      // pixels is far cheaper than a one-pixel loop bound by FMA latency).
      int64_t ow = 0;
      for (int64_t start = 0; Q >= PIX && start < Q; start += PIX) {
        ow = std::min(start, Q - PIX);
        if constexpr (NV == 1 && PIX == 8) {
          // Named accumulators: GCC keeps a 2-D array of them on the stack across the runtime-length tap
          // loops (measured 3x slower), but these stay in registers.
          __m256 a0 = b[0], a1 = b[0], a2 = b[0], a3 = b[0], a4 = b[0], a5 = b[0], a6 = b[0], a7 = b[0];
          const float* x0 = xrow + ow * pix;
          for (int64_t r = 0; r < p.r; ++r)
            for (int64_t s = 0; s < p.s; ++s) {
              const float* xs = x0 + (r * p.dil_h * Wp + s * p.dil_w) * C;
              const float* ws = wt + (r * p.s + s) * C * 8;
              for (int64_t c = 0; c < C; ++c, ++xs) {
                const __m256 w = _mm256_loadu_ps(ws + c * 8);
                a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs), w, a0);
                a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + pix), w, a1);
                a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + 2 * pix), w, a2);
                a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + 3 * pix), w, a3);
                a4 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + 4 * pix), w, a4);
                a5 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + 5 * pix), w, a5);
                a6 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + 6 * pix), w, a6);
                a7 = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + 7 * pix), w, a7);
              }
            }
          float* out = yrow + ow * 8;
          _mm256_storeu_ps(out, a0);
          _mm256_storeu_ps(out + 8, a1);
          _mm256_storeu_ps(out + 16, a2);
          _mm256_storeu_ps(out + 24, a3);
          _mm256_storeu_ps(out + 32, a4);
          _mm256_storeu_ps(out + 40, a5);
          _mm256_storeu_ps(out + 48, a6);
          _mm256_storeu_ps(out + 56, a7);
          continue;
        }
        __m256 acc[PIX][NV];
        for (int j = 0; j < PIX; ++j)
          for (int v = 0; v < NV; ++v) acc[j][v] = b[v];
        const float* x0 = xrow + ow * pix;
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) {
            const float* xs = x0 + (r * p.dil_h * Wp + s * p.dil_w) * C;
            const float* ws = wt + (r * p.s + s) * C * L;
            for (int64_t c = 0; c < C; ++c) {
              __m256 w[NV];
#pragma GCC unroll 2
              for (int v = 0; v < NV; ++v) w[v] = _mm256_loadu_ps(ws + c * L + 8 * v);
#pragma GCC unroll 8
              for (int j = 0; j < PIX; ++j) {
                const __m256 a = _mm256_broadcast_ss(xs + j * pix + c);
#pragma GCC unroll 2
                for (int v = 0; v < NV; ++v) acc[j][v] = _mm256_fmadd_ps(a, w[v], acc[j][v]);
              }
            }
          }
        for (int j = 0; j < PIX; ++j)
          for (int v = 0; v < NV; ++v) _mm256_storeu_ps(yrow + (ow + j) * K + 8 * v, acc[j][v]);
      }
      for (ow = Q >= PIX ? Q : 0; ow < Q; ++ow) {
        __m256 acc[NV];
        for (int v = 0; v < NV; ++v) acc[v] = b[v];
        const float* x0 = xrow + ow * pix;
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) {
            const float* xs = x0 + (r * p.dil_h * Wp + s * p.dil_w) * C;
            const float* ws = wt + (r * p.s + s) * C * L;
            for (int64_t c = 0; c < C; ++c) {
              const __m256 a = _mm256_broadcast_ss(xs + c);
              for (int v = 0; v < NV; ++v) acc[v] = _mm256_fmadd_ps(a, _mm256_loadu_ps(ws + c * L + 8 * v), acc[v]);
            }
          }
        for (int v = 0; v < NV; ++v) _mm256_storeu_ps(yrow + ow * K + 8 * v, acc[v]);
      }
    }
}

// K == 4: two neighbouring pixels share a vector (their NHWC outputs are adjacent), 16 pixels per step.
// The packed weights hold each tap's 4 channels twice (lanes 0-3 and 4-7).
void run_pairs(const ConvProblem& p, const float* xp, const float* wt, const float* bias, float* y) {
  const int64_t P = p.p(), Q = p.q(), C = p.c, Wp = p.w + 2 * p.pad_w, Hp = p.h + 2 * p.pad_h;
  const int64_t pix = p.stride_w * C;
  const __m256 b = _mm256_loadu_ps(bias);
  const auto pair = [](const float* lo, const float* hi) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_broadcast_ss(lo)), _mm_broadcast_ss(hi), 1);
  };
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < P; ++oh) {
      const float* xrow = xp + (n * Hp + oh * p.stride_h) * Wp * C;
      float* yrow = y + (n * P + oh) * Q * 4;
      int64_t ow = 0;
      for (int64_t start = 0; Q >= 16 && start < Q; start += 16) {  // overlapping last block, as above
        ow = std::min(start, Q - 16);
        __m256 a0 = b, a1 = b, a2 = b, a3 = b, a4 = b, a5 = b, a6 = b, a7 = b;  // in registers (see above)
        const float* x0 = xrow + ow * pix;
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) {
            const float* xs = x0 + (r * p.dil_h * Wp + s * p.dil_w) * C;
            const float* ws = wt + (r * p.s + s) * C * 8;
            for (int64_t c = 0; c < C; ++c, ++xs) {
              const __m256 w = _mm256_loadu_ps(ws + c * 8);
              a0 = _mm256_fmadd_ps(pair(xs, xs + pix), w, a0);
              a1 = _mm256_fmadd_ps(pair(xs + 2 * pix, xs + 3 * pix), w, a1);
              a2 = _mm256_fmadd_ps(pair(xs + 4 * pix, xs + 5 * pix), w, a2);
              a3 = _mm256_fmadd_ps(pair(xs + 6 * pix, xs + 7 * pix), w, a3);
              a4 = _mm256_fmadd_ps(pair(xs + 8 * pix, xs + 9 * pix), w, a4);
              a5 = _mm256_fmadd_ps(pair(xs + 10 * pix, xs + 11 * pix), w, a5);
              a6 = _mm256_fmadd_ps(pair(xs + 12 * pix, xs + 13 * pix), w, a6);
              a7 = _mm256_fmadd_ps(pair(xs + 14 * pix, xs + 15 * pix), w, a7);
            }
          }
        float* out = yrow + ow * 4;
        _mm256_storeu_ps(out, a0);
        _mm256_storeu_ps(out + 8, a1);
        _mm256_storeu_ps(out + 16, a2);
        _mm256_storeu_ps(out + 24, a3);
        _mm256_storeu_ps(out + 32, a4);
        _mm256_storeu_ps(out + 40, a5);
        _mm256_storeu_ps(out + 48, a6);
        _mm256_storeu_ps(out + 56, a7);
      }
      for (ow = Q >= 16 ? Q : 0; ow < Q; ++ow) {  // narrow rows: one pixel at a time, the low half only
        __m128 acc = _mm256_castps256_ps128(b);
        const float* x0 = xrow + ow * pix;
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) {
            const float* xs = x0 + (r * p.dil_h * Wp + s * p.dil_w) * C;
            const float* ws = wt + (r * p.s + s) * C * 8;
            for (int64_t c = 0; c < C; ++c)
              acc = _mm_fmadd_ps(_mm_broadcast_ss(xs + c), _mm_loadu_ps(ws + c * 8), acc);
          }
        _mm_storeu_ps(yrow + ow * 4, acc);
      }
    }
}

}  // namespace

void implicit_forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y, float* ws) {
  const int64_t Hp = p.h + 2 * p.pad_h, Wp = p.w + 2 * p.pad_w, C = p.c, L = lanes(p), T = p.r * p.s * C;
  // Workspace: [padded x][weights (R, S, C, L), zero lanes past K][bias, 16 lanes]
  // (the padded x comes first so the 64-byte-aligned workspace keeps the weights 32-byte aligned).
  float* xp = ws;
  const int64_t xp_size = (padded_numel(p) + 15) / 16 * 16;
  float* wt = ws + xp_size;
  float* b = wt + T * L;
  std::memset(xp, 0, padded_numel(p) * sizeof(float));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t h = 0; h < p.h; ++h)
      std::memcpy(xp + ((n * Hp + h + p.pad_h) * Wp + p.pad_w) * C, x + (n * p.h + h) * p.w * C, p.w * C * sizeof(float));
  std::memset(wt, 0, T * L * sizeof(float));
  // (C, R, S, K) -> (R, S, C, L); for K == 4 the 4 channels are stored twice (pixel pairs).
  const int64_t copies = p.k == 4 ? 2 : 1;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t rs = 0; rs < p.r * p.s; ++rs)
      for (int64_t d = 0; d < copies; ++d)
        std::memcpy(wt + (rs * C + c) * L + d * p.k, w + (c * p.r * p.s + rs) * p.k, p.k * sizeof(float));
  for (int64_t k = 0; k < 16; ++k) b[k] = bias ? bias[k % p.k] : 0.0f;
  if (p.k == 4)
    run_pairs(p, xp, wt, b, y);
  else if (p.k == 8)
    run_vectors<1, 8>(p, xp, wt, b, y);
  else
    run_vectors<2, 4>(p, xp, wt, b, y);
}

#else  // no AVX2: never selected

bool implicit_forward_supported(const ConvProblem&) { return false; }
int64_t implicit_forward_workspace(const ConvProblem&) { return 0; }
void implicit_forward(const ConvProblem&, const float*, const float*, const float*, float*, float*) {}

#endif

}  // namespace dtnn
