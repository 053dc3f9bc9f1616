// Checks analysis/stats against values known independently of the implementation: closed forms
// (2 / C(2n, n) for complete separation), hand counts, a brute-force enumeration of the permutation
// distribution, and reference values from scipy 1.10.1 (Debian python3-scipy 1.10.1-2), computed with
//   scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method=M, use_continuity=True)
// where M is "exact" or "asymptotic" as noted; statistic and pvalue pasted below as literals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/stats.h"
#include "core/error.h"

using Catch::Matchers::Contains;

namespace {

std::vector<double> range(int from, int count) {
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(from + i);
  return v;
}

// U of the first sample by definition: pairs with a > b, ties count 1/2.
double count_u(const std::vector<double>& a, const std::vector<double>& b) {
  double u = 0.0;
  for (double x : a)
    for (double y : b) u += x > y ? 1.0 : (x == y ? 0.5 : 0.0);
  return u;
}

// Two-sided exact p by enumerating every way to split the pooled (tie-free) values into groups of sizes
// n1 and n2: the fraction of splits whose U is at least as far from n1*n2/2 as the observed one.
double brute_force_p(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  const int n = static_cast<int>(pooled.size()), n1 = static_cast<int>(a.size());
  const double centre = a.size() * b.size() / 2.0;
  const double observed = std::abs(count_u(a, b) - centre);
  std::int64_t extreme = 0, total = 0;
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != n1) continue;
    std::vector<double> x, y;
    for (int i = 0; i < n; ++i) (mask >> i & 1u ? x : y).push_back(pooled[i]);
    ++total;
    if (std::abs(count_u(x, y) - centre) >= observed - 1e-9) ++extreme;
  }
  return static_cast<double>(extreme) / static_cast<double>(total);
}

}  // namespace

TEST_CASE("median of odd and even counts", "[stats]") {
  CHECK(dtnn::median({5.0}) == 5.0);
  CHECK(dtnn::median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(dtnn::median({9.0, 1.0, 7.0, 3.0, 5.0}) == 5.0);
  CHECK(dtnn::median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(dtnn::median({10.0, -2.0}) == 4.0);
  CHECK(dtnn::median({1.0, 1.0, 1.0, 8.0}) == 1.0);
}

TEST_CASE("median of an empty sample throws", "[stats]") {
  CHECK_THROWS_AS(dtnn::median({}), dtnn::Error);
  CHECK_THROWS_WITH(dtnn::median({}), Contains("empty"));
}

TEST_CASE("geometric mean", "[stats]") {
  CHECK(dtnn::geometric_mean({1.0, 4.0, 16.0}) == Approx(4.0).epsilon(1e-12));
  CHECK(dtnn::geometric_mean({2.0, 8.0}) == Approx(4.0).epsilon(1e-12));
  CHECK(dtnn::geometric_mean({7.5}) == Approx(7.5).epsilon(1e-12));
  // Large values that would overflow a plain product.
  CHECK(dtnn::geometric_mean({1e200, 1e200, 1e200}) == Approx(1e200).epsilon(1e-12));
}

TEST_CASE("geometric mean rejects empty, zero and negative input", "[stats]") {
  CHECK_THROWS_AS(dtnn::geometric_mean({}), dtnn::Error);
  CHECK_THROWS_AS(dtnn::geometric_mean({1.0, 0.0, 2.0}), dtnn::Error);
  CHECK_THROWS_AS(dtnn::geometric_mean({1.0, -3.0}), dtnn::Error);
  CHECK_THROWS_WITH(dtnn::geometric_mean({1.0, -3.0}), Contains("positive"));
}

TEST_CASE("Mann-Whitney: complete separation matches 2 / C(2n, n)", "[stats]") {
  // scipy exact: n=3 -> p 0.1, n=4 -> 0.02857142857142857, n=5 -> 0.007936507936507936, U = 0 each.
  struct Case { int n; double p; };
  for (Case c : {Case{3, 2.0 / 20.0}, Case{4, 2.0 / 70.0}, Case{5, 2.0 / 252.0}}) {
    CAPTURE(c.n);
    dtnn::UTest low_first = dtnn::mann_whitney_u(range(0, c.n), range(c.n, c.n));
    CHECK(low_first.exact);
    CHECK(low_first.u == 0.0);
    CHECK(low_first.p_value == Approx(c.p).epsilon(1e-12));
    dtnn::UTest high_first = dtnn::mann_whitney_u(range(c.n, c.n), range(0, c.n));
    CHECK(high_first.u == c.n * c.n);
    CHECK(high_first.p_value == Approx(c.p).epsilon(1e-12));
  }
  CHECK(dtnn::mann_whitney_u(range(0, 4), range(4, 4)).p_value == Approx(0.02857142857142857).epsilon(1e-12));
  CHECK(dtnn::mann_whitney_u(range(0, 5), range(5, 5)).p_value == Approx(0.007936507936507936).epsilon(1e-12));
}

TEST_CASE("Mann-Whitney: exact p of overlapping samples", "[stats]") {
  // The example from scipy's mannwhitneyu documentation. scipy exact: U 17.0, p 0.1111111111111111
  // (= 2 * 7/126: 7 of the C(9,4) orderings have U <= 3).
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  dtnn::UTest t = dtnn::mann_whitney_u(males, females);
  CHECK(t.exact);
  CHECK(t.u == 17.0);
  CHECK(t.p_value == Approx(1.0 / 9.0).epsilon(1e-12));

  // Against a brute-force enumeration of the permutation distribution, unequal sizes.
  const std::vector<double> a = {3.1, 7.4, 0.2, 5.5, 9.9, 4.4}, b = {1.0, 6.0, 2.5, 8.8, 0.7, 3.3, 7.7};
  dtnn::UTest ab = dtnn::mann_whitney_u(a, b);
  CHECK(ab.exact);
  CHECK(ab.u == count_u(a, b));
  CHECK(ab.p_value == Approx(brute_force_p(a, b)).epsilon(1e-12));
  const std::vector<double> c = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12}, d = {9, 11, 13, 14};
  CHECK(dtnn::mann_whitney_u(c, d).p_value == Approx(brute_force_p(c, d)).epsilon(1e-12));
}

TEST_CASE("Mann-Whitney: ties use midranks and the asymptotic test", "[stats]") {
  // Hand count of U: 1.1 -> 0; 2.0, 2.0 -> 0.5 each; 3.5 -> 2.5; 4.0, 4.0 -> 3.5 each; 5.2 -> 4; total 14.5.
  // scipy asymptotic: U 14.5, p 0.12899601166748725.
  const std::vector<double> a = {1.1, 2.0, 2.0, 3.5, 4.0, 4.0, 5.2};
  const std::vector<double> b = {2.0, 3.0, 3.5, 4.0, 6.1, 7.0, 7.0, 8.3};
  dtnn::UTest t = dtnn::mann_whitney_u(a, b);
  CHECK_FALSE(t.exact);
  CHECK(t.u == 14.5);
  CHECK(t.p_value == Approx(0.12899601166748725).epsilon(1e-9));

  // A single tie is enough to leave the exact path: U 0.5 by hand.
  dtnn::UTest one_tie = dtnn::mann_whitney_u({1.0, 2.0}, {2.0, 3.0});
  CHECK_FALSE(one_tie.exact);
  CHECK(one_tie.u == 0.5);
}

TEST_CASE("Mann-Whitney: U(a, b) + U(b, a) = n1 * n2 and p is symmetric", "[stats]") {
  const std::vector<double> a = {1.1, 2.0, 2.0, 3.5, 4.0, 4.0, 5.2};
  const std::vector<double> b = {2.0, 3.0, 3.5, 4.0, 6.1, 7.0, 7.0, 8.3};
  const std::vector<double> c = {3.1, 7.4, 0.2, 5.5, 9.9, 4.4};
  for (const auto& [x, y] : {std::pair{a, b}, std::pair{a, c}, std::pair{b, c}}) {
    dtnn::UTest xy = dtnn::mann_whitney_u(x, y), yx = dtnn::mann_whitney_u(y, x);
    CHECK(xy.u + yx.u == static_cast<double>(x.size() * y.size()));
    CHECK(xy.u == count_u(x, y));
    CHECK(xy.p_value == Approx(yx.p_value).epsilon(1e-12));
  }
}

TEST_CASE("Mann-Whitney: identical samples give p = 1", "[stats]") {
  const std::vector<double> a = {1.0, 2.0, 3.0, 4.0};
  dtnn::UTest same = dtnn::mann_whitney_u(a, a);  // ties, so asymptotic; U = n1 n2 / 2
  CHECK(same.u == 8.0);
  CHECK(same.p_value == 1.0);
  dtnn::UTest constant = dtnn::mann_whitney_u({5, 5, 5}, {5, 5, 5, 5});  // sigma = 0; scipy: U 6.0, p 1.0
  CHECK(constant.u == 6.0);
  CHECK(constant.p_value == 1.0);
  CHECK(dtnn::mann_whitney_u({5.0}, {5.0}).p_value == 1.0);
}

TEST_CASE("Mann-Whitney: exact and asymptotic agree at n = 20, n = 21 is asymptotic", "[stats]") {
  // Seeded normal samples (numpy default_rng(7)), rounded to 3 decimals, no ties.
  // scipy: U 112.0; exact p 0.016742393803863068; asymptotic p 0.017938612870324673.
  const std::vector<double> a = {10.001, 10.299, 9.726, 9.109, 9.545, 9.008, 10.06, 11.34, 9.508, 9.38,
                                 10.49,  10.357, 10.105, 9.07, 9.971, 10.695, 8.656, 9.542, 8.099, 8.71};
  const std::vector<double> b = {8.958,  10.565, 9.533, 11.071, 10.957, 10.613, 8.283,  10.261, 10.751, 10.913,
                                 9.27,   10.322, 9.821, 9.991,  11.861, 9.992,  10.767, 11.684, 10.216, 10.688};
  dtnn::UTest t = dtnn::mann_whitney_u(a, b);
  CHECK(t.exact);
  CHECK(t.u == 112.0);
  CHECK(t.p_value == Approx(0.016742393803863068).epsilon(1e-9));
  CHECK(t.p_value == Approx(0.017938612870324673).margin(0.01));

  // 21 and 19 values (one tie inside b): asymptotic. scipy asymptotic: U 174.0, p 0.49832291106408044.
  const std::vector<double> c = {10.11, 10.064, 8.775,  10.076, 11.359, 8.453,  10.859, 10.119, 9.359, 12.0, 10.762,
                                 8.801, 10.075, 10.577, 9.811,  10.683, 9.933,  10.667, 11.439, 9.324, 10.203};
  const std::vector<double> d = {10.037, 10.627, 9.313,  9.921,  10.304, 11.399, 11.645, 9.176,  9.705, 11.147,
                                 8.508,  10.037, 10.403, 11.757, 11.189, 10.173, 10.131, 10.25, 12.024};
  dtnn::UTest cd = dtnn::mann_whitney_u(c, d);
  CHECK_FALSE(cd.exact);
  CHECK(cd.u == 174.0);
  CHECK(cd.p_value == Approx(0.49832291106408044).epsilon(1e-9));

  // Complete separation at the exact boundary: 2 / C(40, 20).
  dtnn::UTest sep = dtnn::mann_whitney_u(range(0, 20), range(20, 20));
  CHECK(sep.exact);
  CHECK(sep.p_value == Approx(2.0 / 137846528820.0).epsilon(1e-9));
  CHECK_FALSE(dtnn::mann_whitney_u(range(0, 21), range(21, 20)).exact);
}

TEST_CASE("Mann-Whitney: empty or NaN input throws", "[stats]") {
  CHECK_THROWS_AS(dtnn::mann_whitney_u({}, {1.0, 2.0}), dtnn::Error);
  CHECK_THROWS_AS(dtnn::mann_whitney_u({1.0, 2.0}, {}), dtnn::Error);
  CHECK_THROWS_WITH(dtnn::mann_whitney_u({}, {1.0}), Contains("empty"));
  CHECK_THROWS_AS(dtnn::mann_whitney_u({1.0, std::nan("")}, {2.0}), dtnn::Error);
}

TEST_CASE("min_repeats_for_significance", "[stats]") {
  // Complete separation gives p = 2 / C(2n, n): 1, 1/3, 0.1, 0.0286, 0.0079, 0.0022, ...
  CHECK(dtnn::min_repeats_for_significance(0.05) == 4);
  CHECK(dtnn::min_repeats_for_significance(0.1) == 4);  // p < alpha is strict: n = 3 gives exactly 0.1
  CHECK(dtnn::min_repeats_for_significance(0.11) == 3);
  CHECK(dtnn::min_repeats_for_significance(0.01) == 5);
  CHECK(dtnn::min_repeats_for_significance(0.005) == 6);
  CHECK(dtnn::min_repeats_for_significance(1.0) == 2);
  CHECK_THROWS_AS(dtnn::min_repeats_for_significance(0.0), dtnn::Error);
  CHECK_THROWS_AS(dtnn::min_repeats_for_significance(-0.05), dtnn::Error);
  CHECK_THROWS_AS(dtnn::min_repeats_for_significance(1.5), dtnn::Error);
}

TEST_CASE("Hodges-Lehmann: complete separation of 4 and 4, by hand", "[stats]") {
  // Differences b_j - a_i of {1,2,3,4} and {11,...,14} run 7..13 (16 of them); their median is 10.
  // P(U <= 0) = 1/70 <= 0.025 < P(U <= 1) = 2/70, so k = 1: the interval is [D(1), D(16)] = [7, 13]
  // with coverage 1 - 2/70.
  const dtnn::ShiftEstimate h = dtnn::hodges_lehmann(range(1, 4), range(11, 4), 0.05);
  CHECK(h.estimate == 10.0);
  REQUIRE(h.bounded);
  CHECK(h.low == 7.0);
  CHECK(h.high == 13.0);
  CHECK(h.confidence == Approx(1.0 - 2.0 / 70.0));
  // Three runs a side cannot bound a 95 % interval (P(U <= 0) = 1/20 > 0.025): the same answer as the U test.
  const dtnn::ShiftEstimate three = dtnn::hodges_lehmann(range(1, 3), range(11, 3), 0.05);
  CHECK_FALSE(three.bounded);
  CHECK(three.estimate == 10.0);
}

TEST_CASE("Hodges-Lehmann: the interval is the set of shifts the U test does not reject", "[stats]") {
  // Test inversion, checked pointwise: shifting a by delta, the exact two-sided U test keeps H0 (p >= alpha)
  // exactly for delta inside [low, high]. Sizes 6 and 7: alpha/2 * C(13, 6) = 42.9 is not an integer, so no
  // boundary case has p == alpha.
  const std::vector<double> a = {10.3, 11.9, 9.7, 10.8, 12.4, 10.1};
  const std::vector<double> b = {12.2, 13.5, 11.1, 12.9, 14.6, 12.0, 13.1};
  const dtnn::ShiftEstimate h = dtnn::hodges_lehmann(a, b, 0.05);
  REQUIRE(h.bounded);
  CHECK(h.low <= h.estimate);
  CHECK(h.estimate <= h.high);
  CHECK(h.confidence >= 0.95);
  int inside = 0, outside = 0;
  for (double delta = -2.0; delta <= 6.0; delta += 0.0137) {
    if (std::abs(delta - h.low) < 1e-6 || std::abs(delta - h.high) < 1e-6) continue;
    std::vector<double> shifted(a);
    for (double& x : shifted) x += delta;
    const bool kept = dtnn::mann_whitney_u(shifted, b).p_value >= 0.05;
    const bool in_interval = delta > h.low && delta < h.high;
    CHECK(kept == in_interval);
    (in_interval ? inside : outside) += 1;
  }
  CHECK(inside > 10);
  CHECK(outside > 10);
}

TEST_CASE("Hodges-Lehmann: the normal approximation past 20 values a side", "[stats]") {
  // m = n = 25: C = mn/2 - z_0.975 sqrt(mn (m + n + 1) / 12) = 312.5 - 1.959964 * 51.5388 = 211.49, and with
  // the test's continuity correction k = ceil(C - 0.5) = 211: the interval is [D(211), D(415)] of the 625 sorted
  // differences. For 21 and 21: C = 220.5 - 1.959964 * 39.7524 = 142.59, k = ceil(142.09) = 143.
  const std::vector<double> a = range(0, 25);
  std::vector<double> b;
  for (int i = 0; i < 25; ++i) b.push_back(100.0 + 1.5 * i);
  std::vector<double> d;
  for (double x : a)
    for (double y : b) d.push_back(y - x);
  std::sort(d.begin(), d.end());
  const dtnn::ShiftEstimate h = dtnn::hodges_lehmann(a, b, 0.05);
  REQUIRE(h.bounded);
  CHECK(h.low == d[210]);
  CHECK(h.high == d[414]);
  CHECK(h.estimate == d[312]);
  CHECK(h.confidence == Approx(0.95));
  {
    std::vector<double> a21, b21, d21;
    for (int i = 0; i < 21; ++i) {
      a21.push_back(i);
      b21.push_back(50.0 + 1.25 * i);
    }
    for (double x : a21)
      for (double y : b21) d21.push_back(y - x);
    std::sort(d21.begin(), d21.end());
    const dtnn::ShiftEstimate h21 = dtnn::hodges_lehmann(a21, b21, 0.05);
    REQUIRE(h21.bounded);
    CHECK(h21.low == d21[142]);
    CHECK(h21.high == d21[441 - 143]);
  }
  CHECK_THROWS_AS(dtnn::hodges_lehmann({}, b, 0.05), dtnn::Error);
  CHECK_THROWS_AS(dtnn::hodges_lehmann(a, {std::nan("")}, 0.05), dtnn::Error);
}

TEST_CASE("Hodges-Lehmann: past 20 a side the interval is still the set the (normal) U test keeps", "[stats]") {
  // 23 and 21 values without ties: mann_whitney_u takes its normal approximation with continuity correction,
  // and the interval must invert exactly that test, as in the exact case.
  std::vector<double> a, b;
  for (int i = 0; i < 23; ++i) a.push_back(1000.0 + 7.3 * i + 0.01 * i * i);
  for (int i = 0; i < 21; ++i) b.push_back(1040.0 + 6.1 * i + 0.013 * i * i);
  const dtnn::ShiftEstimate h = dtnn::hodges_lehmann(a, b, 0.05);
  REQUIRE(h.bounded);
  int inside = 0, outside = 0;
  for (double delta = h.low - 60.0; delta <= h.high + 60.0; delta += 0.731) {
    if (std::abs(delta - h.low) < 1e-6 || std::abs(delta - h.high) < 1e-6) continue;
    std::vector<double> shifted(a);
    for (double& x : shifted) x += delta;
    const dtnn::UTest t = dtnn::mann_whitney_u(shifted, b);
    REQUIRE_FALSE(t.exact);
    CHECK((t.p_value >= 0.05) == (delta > h.low && delta < h.high));
    (delta > h.low && delta < h.high ? inside : outside) += 1;
  }
  CHECK(inside > 10);
  CHECK(outside > 10);
}
