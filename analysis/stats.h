// Statistics for performance comparisons: medians, geometric means and the two-sided Mann-Whitney U
// test (Wilcoxon rank-sum), as Google Benchmark's compare.py uses to tell a regression from noise.
#pragma once

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

// The smallest per-sample count for which the test can reach p < alpha at all (two-sided, equal sizes):
// with fewer repeats a regression can never be significant, so compare warns.
int min_repeats_for_significance(double alpha);

}  // namespace dtnn
