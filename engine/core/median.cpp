// See median.h.
#include "core/median.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace dtnn {

double median(std::vector<double> v) {
  DTNN_CHECK(!v.empty(), "median: empty sample");
  for (double x : v) DTNN_CHECK(!std::isnan(x), "median: sample contains NaN");
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return lower + (upper - lower) / 2.0;
}

}  // namespace dtnn
