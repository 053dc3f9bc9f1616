// Statistics for performance comparisons: medians, geometric means and the two-sided Mann-Whitney U
// test (Wilcoxon rank-sum), as Google Benchmark's compare.py uses to tell a regression from noise.
#pragma once

#include <cstddef>
#include <vector>

#include "core/median.h"  // median(): the one every timing in dtnn uses

namespace dtnn {

double geometric_mean(const std::vector<double>& v);  // of positive values; throws on empty or <= 0

struct UTest {
  double u = 0.0;        // U statistic of the first sample (number of pairs where a > b, ties count 1/2)
  double p_value = 1.0;  // two-sided
  bool exact = false;    // exact permutation distribution (small samples without ties) or normal approximation
};

// Two-sided Mann-Whitney U test of samples a and b. Exact distribution when both samples have at most
// 20 values and there are no ties; otherwise the normal approximation with tie correction and continuity
// correction (as scipy.stats.mannwhitneyu(..., alternative="two-sided", method="asymptotic")). Throws on an
// empty sample or a NaN.
UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// Hodges-Lehmann estimate of the shift of `b` relative to `a` (the median of all m*n differences b_j - a_i)
// with its distribution-free confidence interval (Lehmann 1963; Hollander & Wolfe, Nonparametric Statistical
// Methods, 4.3): with the differences sorted D(1) <= ... <= D(mn), the interval is [D(k), D(mn + 1 - k)]. The
// interval is the set of shifts mann_whitney_u would not reject (p >= alpha), by the same branch: exact up to
// 20 a side (k the largest integer with P(U <= k - 1) <= alpha / 2), else the normal approximation with the
// test's continuity correction (k = ceil(mn/2 - z sd - 1/2)). Ties are not corrected for here.
struct ShiftEstimate {
  double estimate = 0.0;
  double low = 0.0, high = 0.0;  // meaningful only when bounded
  bool bounded = false;          // false: too few samples for any interval at this alpha (k = 0)
  double confidence = 0.0;       // the exact coverage (>= 1 - alpha) up to 20 a side, else 1 - alpha (approx.)
};
ShiftEstimate hodges_lehmann(const std::vector<double>& a, const std::vector<double>& b, double alpha);

// The smallest per-sample count for which the test can reach p < alpha at all (two-sided, equal sizes):
// with fewer repeats a regression can never be significant, so compare warns.
int min_repeats_for_significance(double alpha);
// Whether m and n samples can reach p < alpha at all (complete separation, two-sided): for unequal sizes
// (runs that failed on one side) min_repeats_for_significance's equal-size count is not the answer (10 vs 3
// can: p = 2 / C(13, 3) = 0.007).
bool separation_can_be_significant(std::size_t m, std::size_t n, double alpha);

}  // namespace dtnn
