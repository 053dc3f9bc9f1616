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

double noise_sigma(const std::vector<double>& flat, double floor) {
  if (flat.size() < 2) return floor;
  std::vector<double> d;
  for (size_t i = 1; i < flat.size(); ++i) d.push_back(std::fabs(flat[i] - flat[i - 1]));
  return std::max(floor, 1.4826 * median(d) / std::sqrt(2.0));
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
  fit.sigma = noise_sigma(flat, o.sigma_floor);
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
