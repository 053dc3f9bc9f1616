// See change_points.h.
#include "analysis/change_points.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/median.h"

namespace dtnn {

namespace {

// L1 distance of sorted values to their median (any point between the two middle ones gives the same sum).
double l1_cost_sorted(const std::vector<double>& sorted) {
  if (sorted.empty()) return 0.0;
  const double m = sorted[sorted.size() / 2];
  double c = 0.0;
  for (double x : sorted) c += std::fabs(x - m);
  return c;
}

// 1.4826 * median |v[i+1] - v[i]| / sqrt 2: the standard deviation of iid normal values from neighbouring
// differences, robust to the few differences that straddle a step or an outlier.
double neighbour_sigma(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  std::vector<double> d;
  d.reserve(v.size() - 1);
  for (size_t i = 1; i < v.size(); ++i) d.push_back(std::fabs(v[i] - v[i - 1]));
  return 1.4826 * median(d) / std::sqrt(2.0);
}

// The noise unit of the penalty, in the runs' unit. Runs of one commit come from one job (one machine, one
// time), and jobs differ more than runs of a job do: a commit's whole group can sit off its level. The
// neighbouring runs alone (mostly pairs within a job when commits have several runs) measure only the
// within-job noise, and then every job that wandered became a step of its own (simulated, 3 runs a commit,
// 2 % within and 4 % between jobs: false steps in 56 % of step-free series). So the noise is also measured
// between commits, from neighbouring commit medians, and put in per-run units: a commit of k runs whose
// median is off by d saves about k |d| of L1 cost by becoming a segment, which compared with iid runs is
// the saving of runs with sigma_c * sqrt(k / v(k)) noise, v(k) = k var(median of k) / sigma^2 (1 for k <= 2,
// about pi/2 beyond). The larger of the two estimates is the unit; with no job-to-job noise they agree.
double noise_sigma(const std::vector<std::vector<double>>& groups, const std::vector<double>& flat, double floor,
                   double* within, double* between) {
  *within = neighbour_sigma(flat);
  std::vector<double> medians, sizes;
  for (const std::vector<double>& g : groups)
    if (!g.empty()) {
      medians.push_back(median(g));
      sizes.push_back(static_cast<double>(g.size()));
    }
  *between = 0.0;
  if (medians.size() >= 3) {
    const double k = median(sizes);
    const double v = k <= 2.0 ? 1.0 : M_PI / 2.0;
    *between = neighbour_sigma(medians) * std::sqrt(k / v);
  }
  return std::max({floor, *within, *between});
}

}  // namespace

ChangePointFit detect_change_points(const std::vector<std::vector<double>>& groups, const ChangePointOptions& o) {
  DTNN_CHECK(o.min_runs >= 1, "detect_change_points: min_runs must be >= 1");
  const int n = static_cast<int>(groups.size());
  std::vector<double> flat;
  std::vector<int> start(n + 1, 0);  // start[i]: index in flat of group i's first run
  for (int i = 0; i < n; ++i) {
    start[i] = static_cast<int>(flat.size());
    for (double v : groups[i]) {
      DTNN_CHECK(!std::isnan(v), "detect_change_points: NaN value in commit ", i);
      flat.push_back(v);
    }
  }
  start[n] = static_cast<int>(flat.size());
  ChangePointFit fit;
  if (n == 0) return fit;
  const int total = start[n];
  fit.sigma = noise_sigma(groups, flat, o.sigma_floor, &fit.sigma_within, &fit.sigma_between);
  fit.gamma = o.penalty_factor * fit.sigma * std::log(std::max(total, 2));

  // best[j]: the least penalised cost of groups [0, j); prev[j]: where its last segment starts. A segment must
  // hold min_runs runs, except when the whole series has fewer (then it is one segment).
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n + 1, inf);
  std::vector<int> prev(n + 1, 0);
  best[0] = 0.0;
  const int need = std::min(o.min_runs, total);
  // The last segment [i, j) grows as i moves left: its runs are kept sorted by insertion, so each candidate
  // costs O(runs) and nothing is allocated per candidate.
  std::vector<double> segment;
  segment.reserve(flat.size());
  for (int j = 1; j <= n; ++j) {
    segment.clear();
    int best_i = -1;
    for (int i = j - 1; i >= 0; --i) {
      for (int r = start[i]; r < start[i + 1]; ++r)
        segment.insert(std::upper_bound(segment.begin(), segment.end(), flat[r]), flat[r]);
      if (best[i] == inf || start[j] - start[i] < need) continue;
      const double c = best[i] + fit.gamma + l1_cost_sorted(segment);
      // Of equal fits the one with the longest last segment (fewest steps): the smallest i wins ties.
      if (c < best[j] || (c == best[j] && i < best_i)) {
        best[j] = c;
        prev[j] = i;
        best_i = i;
      }
    }
  }
  // Walk back from the end. A newest level with fewer than min_runs runs cannot be a segment yet: those runs
  // stay in the segment before until more arrive.
  int end = n;
  std::vector<Segment> reversed;
  while (end > 0) {
    int begin = prev[end];
    Segment s;
    s.first = begin;
    s.last = end - 1;
    s.runs = start[end] - start[begin];
    s.level = s.runs ? median(std::vector<double>(flat.begin() + start[begin], flat.begin() + start[end])) : 0.0;
    reversed.push_back(s);
    end = begin;
  }
  fit.segments.assign(reversed.rbegin(), reversed.rend());
  // Empty groups at a boundary belong to no run; move each boundary to the first commit that has runs, so a
  // step is named by the first commit measured at the new level.
  for (size_t k = 1; k < fit.segments.size(); ++k) {
    Segment& s = fit.segments[k];
    while (s.first < s.last && groups[s.first].empty()) {
      ++s.first;
      ++fit.segments[k - 1].last;
    }
  }
  return fit;
}

}  // namespace dtnn
