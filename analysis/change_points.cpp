// See change_points.h.
#include "analysis/change_points.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/median.h"

namespace dtnn {

namespace {

// L1 distance of v to its median.
double l1_cost(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const double m = median(v);
  double c = 0.0;
  for (double x : v) c += std::fabs(x - m);
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
  for (int j = 1; j <= n; ++j) {
    for (int i = 0; i < j; ++i) {
      if (best[i] == inf || start[j] - start[i] < need) continue;
      const double c = best[i] + fit.gamma +
                       l1_cost(std::vector<double>(flat.begin() + start[i], flat.begin() + start[j]));
      if (c < best[j]) {  // strict: of equal fits the one with the longest last segment (fewest steps)
        best[j] = c;
        prev[j] = i;
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
