// Tests for engine/backend/cpu/pool: cpu::pool_forward / pool_backward against a double-precision
// definition of backend/pool.h's semantics, over both layouts and problems that reach every path:
// the AVX2 2x2 window (forward; backward when the windows tile the input), padding, stride, dilation,
// windows that lie entirely in padding, a global pool, and ties (the first maximum wins).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/pool.h"
#include "conv/conv_problem.h"
#include "helpers.h"

namespace dtnn {
namespace {

struct Problem {
  const char* name;
  int64_t c, h, w, r, s, sh, sw, ph, pw, dh, dw;
};

PoolGeometry geometry(const Problem& pb, Layout layout, bool max) {
  PoolGeometry g;
  g.max = max;
  g.layout = layout;
  g.c = pb.c; g.h = pb.h; g.w = pb.w; g.r = pb.r; g.s = pb.s;
  g.sh = pb.sh; g.sw = pb.sw; g.ph = pb.ph; g.pw = pb.pw; g.dh = pb.dh; g.dw = pb.dw;
  g.p = ConvProblem::out_size(g.h, g.ph, g.dh, g.r, g.sh);
  g.q = ConvProblem::out_size(g.w, g.pw, g.dw, g.s, g.sw);
  return g;
}

int64_t offset(Layout layout, int64_t C, int64_t H, int64_t W, int64_t b, int64_t c, int64_t i, int64_t j) {
  return layout == Layout::nhwc ? ((b * H + i) * W + j) * C + c : ((b * C + c) * H + i) * W + j;
}

// The definition, in double: y and the winning input offset (-1: empty window) of every output, and dx
// from dy.
struct Reference {
  std::vector<double> y, dx;
  std::vector<int64_t> winner;
};

Reference reference(const PoolGeometry& g, int64_t n, const std::vector<float>& x, const std::vector<float>& dy) {
  Reference ref{std::vector<double>(n * g.c * g.p * g.q), std::vector<double>(x.size(), 0.0),
                std::vector<int64_t>(n * g.c * g.p * g.q, -1)};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t oh = 0; oh < g.p; ++oh)
        for (int64_t ow = 0; ow < g.q; ++ow) {
          std::vector<int64_t> taps;
          for (int64_t i = 0; i < g.r; ++i)
            for (int64_t j = 0; j < g.s; ++j) {
              const int64_t ih = oh * g.sh - g.ph + i * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
              if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) taps.push_back(offset(g.layout, g.c, g.h, g.w, b, c, ih, iw));
            }
          const int64_t yo = offset(g.layout, g.c, g.p, g.q, b, c, oh, ow);
          double v = 0.0;
          if (g.max) {
            for (int64_t t : taps)
              if (ref.winner[yo] < 0 || x[t] > v) v = x[t], ref.winner[yo] = t;
            if (ref.winner[yo] >= 0) ref.dx[ref.winner[yo]] += dy[yo];
          } else if (!taps.empty()) {
            for (int64_t t : taps) v += x[t];
            v /= static_cast<double>(taps.size());
            for (int64_t t : taps) ref.dx[t] += dy[yo] / static_cast<double>(taps.size());
          }
          ref.y[yo] = v;
        }
  return ref;
}

double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  return test::max_rel_error(got, std::vector<float>(want.begin(), want.end()));
}

const Problem kProblems[] = {
    {"2x2 stride 2 (AVX2, tiles the input)", 16, 6, 8, 2, 2, 2, 2, 0, 0, 1, 1},
    {"2x2 stride 1 (AVX2 forward, overlapping)", 8, 5, 5, 2, 2, 1, 1, 0, 0, 1, 1},
    {"3x3 stride 2 pad 1 (resnet stem)", 3, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1},
    {"3x3 stride 1 pad 1 dilation 2", 5, 6, 7, 3, 3, 1, 1, 1, 1, 2, 2},
    {"2x3 stride (1,2) pad (0,1) dilation (2,1)", 4, 7, 9, 2, 3, 1, 2, 0, 1, 2, 1},
    {"1x1 pad 2 stride 3 (windows all in padding)", 8, 2, 2, 1, 1, 3, 3, 2, 2, 1, 1},
    {"global 5x4", 3, 5, 4, 5, 4, 1, 1, 0, 0, 1, 1},
};

TEST_CASE("cpu::pool_forward and pool_backward match the double-precision definition", "[backend][pool]") {
  const Problem pb = GENERATE(from_range(std::begin(kProblems), std::end(kProblems)));
  const Layout layout = GENERATE(Layout::nhwc, Layout::nchw);
  const bool max = GENERATE(true, false);
  const PoolGeometry g = geometry(pb, layout, max);
  const int64_t n = 3;
  INFO(pb.name << ", " << (layout == Layout::nhwc ? "NHWC" : "NCHW") << (max ? ", max" : ", average"));
  REQUIRE(g.p > 0);
  REQUIRE(g.q > 0);
  Rng rng(17);
  std::vector<float> x(n * g.c * g.h * g.w), dy(n * g.c * g.p * g.q);
  test::fill_uniform(x, rng);
  test::fill_uniform(dy, rng);
  const Reference ref = reference(g, n, x, dy);

  std::vector<float> y(dy.size(), -7.0f), dx(x.size(), -7.0f);  // stale values must be overwritten
  std::vector<int32_t> argmax(max ? dy.size() : 0, -7);
  cpu::pool_forward(g, n, x.data(), y.data(), max ? argmax.data() : nullptr);
  cpu::pool_backward(g, n, dy.data(), max ? argmax.data() : nullptr, dx.data());
  CHECK(max_rel_error(y, ref.y) <= 1e-6);
  CHECK(max_rel_error(dx, ref.dx) <= 1e-6);
  for (size_t i = 0; i < argmax.size(); ++i) {
    INFO("output " << i);
    REQUIRE(argmax[i] == ref.winner[i]);
  }
}

TEST_CASE("cpu::pool_forward: the first of equal maxima wins", "[backend][pool]") {
  const Problem pb = GENERATE(kProblems[0], kProblems[2], kProblems[4]);
  const Layout layout = GENERATE(Layout::nhwc, Layout::nchw);
  const PoolGeometry g = geometry(pb, layout, true);
  const int64_t n = 2;
  INFO(pb.name << ", " << (layout == Layout::nhwc ? "NHWC" : "NCHW"));
  std::vector<float> x(n * g.c * g.h * g.w, 0.5f), dy(n * g.c * g.p * g.q, 1.0f);
  const Reference ref = reference(g, n, x, dy);
  std::vector<float> y(dy.size());
  std::vector<int32_t> argmax(dy.size());
  cpu::pool_forward(g, n, x.data(), y.data(), argmax.data());
  for (size_t i = 0; i < argmax.size(); ++i) {
    INFO("output " << i);
    REQUIRE(argmax[i] == ref.winner[i]);
  }
}

}  // namespace
}  // namespace dtnn
