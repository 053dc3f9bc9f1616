// Per-channel moments (mean and sum of squared deviations m2) of parts of a batch, merged exactly in double:
// the batch normalization merges its blocks of rows with it, a convolution that computes the moments of its
// output in its output pass merges its blocks of tiles.
#pragma once

#include <cstdint>

namespace dtnn {

// Chan, Golub and LeVeque's update: (mean, m2) of n_a values per channel and (mean_b, m2_b) of n_b more
// become those of all n_a + n_b, for C channels. Stable however large the means (no E[x^2] - E[x]^2).
inline void merge_moments(int64_t C, double n_a, double* mean, double* m2, double n_b, const double* mean_b,
                          const double* m2_b) {
  if (n_b <= 0) return;
  const double n = n_a + n_b;
  for (int64_t c = 0; c < C; ++c) {
    const double delta = mean_b[c] - mean[c];
    mean[c] += delta * n_b / n;
    m2[c] += m2_b[c] + delta * delta * n_a * n_b / n;
  }
}

}  // namespace dtnn
