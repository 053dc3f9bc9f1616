// Change points in a benchmark's history: where a series of measurements over commits steps to another level.
//
// The method is asv's (airspeed velocity, asv/step_detect.py): fit a piecewise-constant function to the
// series by minimising the L1 distance to it plus a penalty per segment (the "Potts" problem), solved exactly
// by dynamic programming over the segment boundaries (optimal partitioning, Jackson et al. 2005). L1 and
// segment medians make the fit robust to outliers; in addition a segment must hold at least `min_runs` runs, so
// one stray run (a noisy neighbour, a frequency dip) cannot form a segment of its own. Boundaries fall only
// between commits: the runs of one commit are one group.
//
// The penalty is gamma = penalty_factor * sigma * ln(N), N the number of runs -- a BIC-like penalty. sigma is
// the noise, estimated robustly (1.4826 * median |v[i+1] - v[i]| / sqrt 2) twice: from neighbouring runs, and
// from neighbouring commit medians put in per-run units (a commit's runs are one job, and jobs differ more
// than runs of one job: change_points.cpp noise_sigma); the larger, floored at sigma_floor.
// Calibrated by simulation (build/analysis/change_points_sim: 20-80 commits, one 50 % outlier, 2 % noise
// within a job, 400 series a row). Without job-to-job noise factor 2 finds no step in step-free series of 2-5
// runs a commit (0.8 % with 1 run), an 8 % step at its exact commit in 95-100 %, a 15 % step at the newest
// commit in 96-100 % when it has 2-5 runs. With 4 % between jobs and 3 runs a commit: false steps 3.8 % (1.2 %
// regression-sized), 8 % steps exact 60 %, a newest-commit 15 % step 20 % (four job sigmas: later commits
// confirm it); with the noise from runs alone those were 56.5 %, 35.2 %, 28.5 % and 87.5 %.
// Values are taken as they come: the caller passes log(throughput) so that steps and noise are relative.
#pragma once

#include <vector>

namespace dtnn {

struct ChangePointOptions {
  double penalty_factor = 2.0;
  int min_runs = 2;            // per segment
  double sigma_floor = 1e-3;   // in the values' unit (0.1 % for log values)
};

struct Segment {
  int first = 0, last = 0;  // group (commit) indexes, inclusive
  double level = 0.0;       // median of the segment's runs
  int runs = 0;
};

struct ChangePointFit {
  std::vector<Segment> segments;  // in order; segments[k + 1].first is the first commit after step k
  double sigma = 0.0, gamma = 0.0;  // the noise unit (the larger of the two below, floored) and the penalty
  double sigma_within = 0.0;        // from neighbouring runs
  double sigma_between = 0.0;       // from neighbouring commit medians, in per-run units (0: < 3 commits)
};

// groups[i]: the runs of the i-th commit, in commit order (an empty group is allowed: it joins a neighbour).
// Throws dtnn::Error on NaN values. Fewer than 2 * min_runs runs in all: one segment.
ChangePointFit detect_change_points(const std::vector<std::vector<double>>& groups,
                                    const ChangePointOptions& options = {});

}  // namespace dtnn
