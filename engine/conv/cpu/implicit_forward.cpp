#include "conv/cpu/implicit_forward.h"

#include <algorithm>
#include <cstring>
#include <immintrin.h>

namespace dtnn {
namespace {

int64_t padded_numel(const ConvProblem& p) { return p.n * (p.h + 2 * p.pad_h) * (p.w + 2 * p.pad_w) * p.c; }

}  // namespace


bool implicit_forward_supported(const ConvProblem& p) {
  return p.layout == Layout::nhwc && p.groups == 1 && (p.k == 4 || p.k == 8);
}

int64_t implicit_forward_workspace(const ConvProblem& p) {
  return (padded_numel(p) + 15) / 16 * 16 + p.r * p.s * p.c * 8 + 16;
}

namespace {

// One kernel for K == 8 and K == 4: each of 8 accumulators (named, so GCC keeps them in registers across
// the runtime-length tap loops; as an array they were spilled, 3x slower) holds 8 output floats, which is
// one pixel for K == 8 (PPA = 1) or two neighbouring pixels for K == 4 (PPA = 2: their NHWC outputs are
// adjacent, and the packed weights hold each tap's 4 channels twice). A row is covered by blocks of
// 8 * PPA pixels whose last one overlaps the previous block instead of leaving a latency-bound tail.
template <int PPA>
void run(const ConvProblem& p, const float* xp, const float* wt, const float* bias, float* y) {
  constexpr int64_t K = 8 / PPA, kBlock = 8 * PPA;
  const int64_t P = p.p(), Q = p.q(), C = p.c, Wp = p.w + 2 * p.pad_w, Hp = p.h + 2 * p.pad_h;
  const int64_t pix = p.stride_w * C;  // input step between neighbouring output pixels
  const __m256 b = _mm256_loadu_ps(bias);
  const auto lanes = [pix](const float* xs, int q) {
    if constexpr (PPA == 1) return _mm256_broadcast_ss(xs + q * pix);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_broadcast_ss(xs + 2 * q * pix)),
                                _mm_broadcast_ss(xs + (2 * q + 1) * pix), 1);
  };
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oh = 0; oh < P; ++oh) {
      const float* xrow = xp + (n * Hp + oh * p.stride_h) * Wp * C;
      float* yrow = y + (n * P + oh) * Q * K;
      for (int64_t start = 0; Q >= kBlock && start < Q; start += kBlock) {
        const int64_t ow = std::min(start, Q - kBlock);
        __m256 a0 = b, a1 = b, a2 = b, a3 = b, a4 = b, a5 = b, a6 = b, a7 = b;
        const float* x0 = xrow + ow * pix;
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) {
            const float* xs = x0 + (r * p.dil_h * Wp + s * p.dil_w) * C;
            const float* ws = wt + (r * p.s + s) * C * 8;
            for (int64_t c = 0; c < C; ++c, ++xs) {
              const __m256 w = _mm256_loadu_ps(ws + c * 8);
              a0 = _mm256_fmadd_ps(lanes(xs, 0), w, a0);
              a1 = _mm256_fmadd_ps(lanes(xs, 1), w, a1);
              a2 = _mm256_fmadd_ps(lanes(xs, 2), w, a2);
              a3 = _mm256_fmadd_ps(lanes(xs, 3), w, a3);
              a4 = _mm256_fmadd_ps(lanes(xs, 4), w, a4);
              a5 = _mm256_fmadd_ps(lanes(xs, 5), w, a5);
              a6 = _mm256_fmadd_ps(lanes(xs, 6), w, a6);
              a7 = _mm256_fmadd_ps(lanes(xs, 7), w, a7);
            }
          }
        float* out = yrow + ow * K;
        _mm256_storeu_ps(out, a0);
        _mm256_storeu_ps(out + 8, a1);
        _mm256_storeu_ps(out + 16, a2);
        _mm256_storeu_ps(out + 24, a3);
        _mm256_storeu_ps(out + 32, a4);
        _mm256_storeu_ps(out + 40, a5);
        _mm256_storeu_ps(out + 48, a6);
        _mm256_storeu_ps(out + 56, a7);
      }
      for (int64_t ow = Q >= kBlock ? Q : 0; ow < Q; ++ow) {  // rows narrower than a block
        __m256 acc = b;
        const float* x0 = xrow + ow * pix;
        for (int64_t r = 0; r < p.r; ++r)
          for (int64_t s = 0; s < p.s; ++s) {
            const float* xs = x0 + (r * p.dil_h * Wp + s * p.dil_w) * C;
            const float* ws = wt + (r * p.s + s) * C * 8;
            for (int64_t c = 0; c < C; ++c)
              acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xs + c), _mm256_loadu_ps(ws + c * 8), acc);
          }
        if constexpr (K == 8)
          _mm256_storeu_ps(yrow + ow * 8, acc);
        else
          _mm_storeu_ps(yrow + ow * 4, _mm256_castps256_ps128(acc));
      }
    }
}

}  // namespace

void implicit_forward(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y, float* ws) {
  const int64_t Hp = p.h + 2 * p.pad_h, Wp = p.w + 2 * p.pad_w, C = p.c, L = 8, T = p.r * p.s * C;
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
    run<2>(p, xp, wt, b, y);
  else
    run<1>(p, xp, wt, b, y);
}


}  // namespace dtnn
