// Initializers (layers/layer.h, init_fill): the moments of many draws against each initializer's
// definition (Keras': uniform limits sqrt(3 scale / fan); truncated normals inside 2 sigma) and d2l's
// N(0, 0.01^2), which is not truncated and ignores the fans.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "layers/layer.h"

using namespace dtnn;

namespace {
struct Moments {
  double mean = 0, sd = 0, max_abs = 0;
};
Moments draw(Init init, int64_t fan_in, int64_t fan_out, int64_t n) {
  Rng rng(7);
  std::vector<float> v(n);
  init_fill(init, fan_in, fan_out, rng, v.data(), n);
  Moments m;
  for (const float x : v) m.mean += x;
  m.mean /= n;
  for (const float x : v) {
    m.sd += (x - m.mean) * (x - m.mean);
    m.max_abs = std::max(m.max_abs, std::fabs(static_cast<double>(x)));
  }
  m.sd = std::sqrt(m.sd / n);
  return m;
}
}  // namespace

TEST_CASE("init: normal_0.01 is N(0, 0.01^2) whatever the fans, not truncated", "[layers]") {
  CHECK(parse_init("normal_0.01") == Init::normal_0_01);
  CHECK(std::string(init_name(Init::normal_0_01)) == "normal_0.01");
  const int64_t n = 200000;
  for (const int64_t fan : {1, 9, 4608}) {
    const Moments m = draw(Init::normal_0_01, fan, fan, n);
    CHECK(std::fabs(m.mean) < 5 * 0.01 / std::sqrt(static_cast<double>(n)));
    CHECK(m.sd == Approx(0.01).epsilon(0.01));
    CHECK(m.max_abs > 0.035);  // 3.5 sigma: about 93 of 200,000 normal draws lie beyond
  }
}

TEST_CASE("init: Keras' he_uniform and he_normal scales", "[layers]") {
  const int64_t n = 200000, fan_in = 576;
  const Moments u = draw(Init::he_uniform, fan_in, 64, n);
  const double limit = std::sqrt(6.0 / fan_in);
  CHECK(u.max_abs <= limit);
  CHECK(u.sd == Approx(limit / std::sqrt(3.0)).epsilon(0.01));
  const Moments t = draw(Init::he_normal, fan_in, 64, n);
  CHECK(t.sd == Approx(std::sqrt(2.0 / fan_in)).epsilon(0.01));  // corrected for the truncation
  CHECK(t.max_abs <= 2 * std::sqrt(2.0 / fan_in) / 0.87962566103423978 + 1e-7);
}
