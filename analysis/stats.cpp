#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include "core/error.h"

namespace dtnn {

namespace {

constexpr std::size_t kExactMaxSize = 20;

void check_no_nan(const std::vector<double>& v, const char* what) {
  for (double x : v) DTNN_CHECK(!std::isnan(x), what, ": sample contains NaN");
}

// P(U <= u) under H0 for sample sizes (m, n), u = 0..mn, by the recurrence on the number of orderings with
// statistic u: f(u; m, n) = f(u - n; m - 1, n) + f(u; m, n - 1), f(u; 0, n) = f(u; m, 0) = [u == 0].
// The counts are at most C(40, 20) ~ 1.4e11 < 2^53, so doubles hold them exactly.
std::vector<double> exact_cdf_table(std::size_t m, std::size_t n) {
  const std::size_t umax = m * n;
  // f[i][j] is the distribution for sizes (i, j), j = 0..n; built up one i at a time.
  std::vector<std::vector<double>> prev(n + 1, std::vector<double>(umax + 1, 0.0));
  for (std::size_t j = 0; j <= n; ++j) prev[j][0] = 1.0;  // m = 0
  for (std::size_t i = 1; i <= m; ++i) {
    std::vector<std::vector<double>> cur(n + 1, std::vector<double>(umax + 1, 0.0));
    cur[0][0] = 1.0;
    for (std::size_t j = 1; j <= n; ++j) {
      for (std::size_t u = 0; u <= i * j; ++u) {
        double from_i = u >= j ? prev[j][u - j] : 0.0;
        cur[j][u] = from_i + cur[j - 1][u];
      }
    }
    prev.swap(cur);
  }
  const std::vector<double>& f = prev[n];
  double total = 0.0;
  for (double x : f) total += x;
  std::vector<double> cdf(umax + 1);
  double below = 0.0;
  for (std::size_t u = 0; u <= umax; ++u) cdf[u] = (below += f[u]) / total;
  return cdf;
}

double exact_cdf(std::size_t m, std::size_t n, std::size_t k) { return exact_cdf_table(m, n).at(k); }

// z_{1 - alpha/2}, by bisection on erfc (monotone): 2 * (1 - Phi(z)) = erfc(z / sqrt 2) = alpha.
double two_sided_z(double alpha) {
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2.0;
    (std::erfc(mid / std::sqrt(2.0)) > alpha ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

double geometric_mean(const std::vector<double>& v) {
  DTNN_CHECK(!v.empty(), "geometric_mean: empty sample");
  double log_sum = 0.0;
  for (double x : v) {
    DTNN_CHECK(x > 0.0, "geometric_mean: values must be positive (got ", x, ")");
    log_sum += std::log(x);
  }
  return std::exp(log_sum / static_cast<double>(v.size()));
}

UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  DTNN_CHECK(!a.empty() && !b.empty(), "mann_whitney_u: empty sample (sizes ", a.size(), " and ", b.size(), ")");
  check_no_nan(a, "mann_whitney_u");
  check_no_nan(b, "mann_whitney_u");

  const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return all[x] < all[y]; });

  // Midranks (1-based); tie_term accumulates sum(t^3 - t) over tie groups for the variance correction.
  double rank_sum_a = 0.0, tie_term = 0.0;
  for (std::size_t lo = 0; lo < n;) {
    std::size_t hi = lo + 1;
    while (hi < n && all[order[hi]] == all[order[lo]]) ++hi;
    const double midrank = (static_cast<double>(lo + 1) + static_cast<double>(hi)) / 2.0;
    for (std::size_t k = lo; k < hi; ++k)
      if (order[k] < n1) rank_sum_a += midrank;
    const double t = static_cast<double>(hi - lo);
    tie_term += t * t * t - t;
    lo = hi;
  }

  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  UTest r;
  r.u = rank_sum_a - dn1 * (dn1 + 1.0) / 2.0;
  const double mean_u = dn1 * dn2 / 2.0;

  if (n1 <= kExactMaxSize && n2 <= kExactMaxSize && tie_term == 0.0) {
    // Without ties U is an integer; the distribution is symmetric, so the two-sided p doubles the lower tail.
    const double k = std::min(r.u, dn1 * dn2 - r.u);
    r.exact = true;
    r.p_value = std::min(1.0, 2.0 * exact_cdf(n1, n2, static_cast<std::size_t>(std::llround(k))));
    return r;
  }

  const double variance = dn1 * dn2 / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0)));
  if (!(variance > 0.0)) {
    r.p_value = 1.0;  // every value equal: no evidence either way
    return r;
  }
  const double z = (std::fabs(r.u - mean_u) - 0.5) / std::sqrt(variance);
  r.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));  // 2 * (1 - Phi(z))
  return r;
}

ShiftEstimate hodges_lehmann(const std::vector<double>& a, const std::vector<double>& b, double alpha) {
  DTNN_CHECK(!a.empty() && !b.empty(), "hodges_lehmann: empty sample (sizes ", a.size(), " and ", b.size(), ")");
  DTNN_CHECK(alpha > 0.0 && alpha < 1.0, "hodges_lehmann: alpha must be in (0, 1) (got ", alpha, ")");
  check_no_nan(a, "hodges_lehmann");
  check_no_nan(b, "hodges_lehmann");
  const std::size_t m = a.size(), n = b.size(), mn = m * n;
  std::vector<double> d;
  d.reserve(mn);
  for (double x : a)
    for (double y : b) d.push_back(y - x);
  std::sort(d.begin(), d.end());
  ShiftEstimate r;
  r.estimate = median(d);
  // k: how many differences to cut from each end. For a shift delta inside (D(k), D(k + 1)), U of (a + delta, b)
  // is k; the interval keeps the k for which mann_whitney_u keeps H0, by the same branch it takes (exact up to
  // 20 a side, else normal with its continuity correction), so interval and test agree.
  std::size_t k = 0;
  if (m <= kExactMaxSize && n <= kExactMaxSize) {
    const std::vector<double> cdf = exact_cdf_table(m, n);
    while (k < mn / 2 && cdf[k] <= alpha / 2.0) ++k;  // P(U <= k) <= alpha/2 -> k + 1 allowed
    r.confidence = k ? 1.0 - 2.0 * cdf[k - 1] : 0.0;
  } else {
    // The test keeps H0 when |U - mn/2| - 0.5 <= z sd, i.e. U >= C - 0.5 with C = mn/2 - z sd.
    const double dm = static_cast<double>(m), dn = static_cast<double>(n);
    const double c = dm * dn / 2.0 - two_sided_z(alpha) * std::sqrt(dm * dn * (dm + dn + 1.0) / 12.0) - 0.5;
    k = c <= 0.0 ? 0 : static_cast<std::size_t>(std::ceil(c));
    r.confidence = k ? 1.0 - alpha : 0.0;  // approximately, as the test's p
  }
  if (k >= 1) {
    r.bounded = true;
    r.low = d[k - 1];
    r.high = d[mn - k];
  }
  return r;
}

bool separation_can_be_significant(std::size_t m, std::size_t n, double alpha) {
  if (m == 0 || n == 0) return false;
  std::vector<double> low(m), high(n);
  for (size_t i = 0; i < m; ++i) low[i] = static_cast<double>(i);
  for (size_t i = 0; i < n; ++i) high[i] = static_cast<double>(m + i);
  return mann_whitney_u(low, high).p_value < alpha;
}

int min_repeats_for_significance(double alpha) {
  DTNN_CHECK(alpha > 0.0 && alpha <= 1.0, "min_repeats_for_significance: alpha must be in (0, 1] (got ", alpha, ")");
  // The strongest evidence n repeats can give is complete separation; ask the test itself what p that is,
  // so this stays right whichever branch (exact or asymptotic) the test takes for n. p -> 0 as n grows
  // (erfc underflows to 0 by n ~ 500), so the loop ends for every alpha > 0.
  for (int n = 1;; ++n) {
    std::vector<double> low(n), high(n);
    for (int i = 0; i < n; ++i) {
      low[i] = i;
      high[i] = n + i;
    }
    if (mann_whitney_u(low, high).p_value < alpha) return n;
  }
}

}  // namespace dtnn
