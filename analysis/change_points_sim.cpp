// The simulation detect_change_points' penalty is calibrated with (analysis/change_points.h): synthetic
// histories of log throughput, 20-80 commits, each commit one job of R runs with normal noise within the job
// (2 %) around a job level that is itself off by a normal job-to-job noise, and one 50 % outlier run. Per
// (job noise, runs per commit), over 400 series (seed 42):
//   false steps        step-free series fitted with a step;
//   false regressions  ... with a step down by more than 5 % (history's default threshold);
//   8 % step exact     an 8 % drop at the middle commit found as the only step, at that commit;
//   newest 15 %        a 15 % drop at the newest commit (its R runs only) found there.
//   build/analysis/change_points_sim [PENALTY_FACTOR (default 2)]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "analysis/change_points.h"

namespace {

std::vector<std::vector<double>> history(std::mt19937& rng, int commits, int runs, double between, int step_at,
                                         double ratio) {
  std::normal_distribution<double> within_noise(0.0, 0.02), job_noise(0.0, between > 0 ? between : 1.0);
  std::vector<std::vector<double>> g(commits);
  for (int c = 0; c < commits; ++c) {
    const double job = (between > 0 ? job_noise(rng) : 0.0) + (c >= step_at ? std::log(ratio) : 0.0);
    for (int r = 0; r < runs; ++r) g[c].push_back(std::log(1000.0) + job + within_noise(rng));
  }
  g[commits / 3][0] += std::log(1.5);
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  dtnn::ChangePointOptions o;
  if (argc > 1) o.penalty_factor = std::atof(argv[1]);
  constexpr int kSeries = 400;
  std::printf("penalty factor %g, %d series per row, 2 %% noise within a job\n\n", o.penalty_factor, kSeries);
  std::printf("| job noise | runs/commit | false steps | false regressions | 8 %% step exact | newest 15 %% |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (double between : {0.0, 0.01, 0.02, 0.04})
    for (int runs : {1, 2, 3, 5}) {
      std::mt19937 rng(42);
      int false_steps = 0, false_regressions = 0, exact = 0, newest = 0;
      for (int t = 0; t < kSeries; ++t) {
        const int commits = 20 + t % 61;
        const dtnn::ChangePointFit flat = dtnn::detect_change_points(history(rng, commits, runs, between, commits, 1.0), o);
        false_steps += flat.segments.size() > 1;
        for (size_t k = 1; k < flat.segments.size(); ++k)
          if (std::exp(flat.segments[k].level - flat.segments[k - 1].level) < 0.95) {
            ++false_regressions;
            break;
          }
        const int at = commits / 2;
        const dtnn::ChangePointFit mid = dtnn::detect_change_points(history(rng, commits, runs, between, at, 0.92), o);
        exact += mid.segments.size() == 2 && mid.segments[1].first == at;
        const dtnn::ChangePointFit last =
            dtnn::detect_change_points(history(rng, commits, runs, between, commits - 1, 0.85), o);
        newest += last.segments.size() >= 2 && last.segments.back().first == commits - 1;
      }
      const auto pct = [](int n) { return 100.0 * n / kSeries; };
      std::printf("| %.0f %% | %d | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n", 100 * between, runs, pct(false_steps),
                  pct(false_regressions), pct(exact), pct(newest));
    }
}
