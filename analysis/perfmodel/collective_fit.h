// Least-squares fit of a link (α, β, γ) to measured allreduce times (suites/bench_allreduce: a Google
// Benchmark JSON file, or the store's collective_benchmarks rows).
//
// Each point (p ranks, n bytes, op, time t) is costed with the algorithm the rules pick for it
// (choose_allreduce for MPI_Allreduce, choose_iallreduce in place for MPI_Iallreduce + MPI_Wait), which
// makes the model linear in the unknowns: t ≈ cα·α + cβ·β + cγ·γ with the coefficients of
// allreduce_terms(). Minimised: Σ w·(t − t̂)², w = 1/t² (relative residuals, every size counting alike; the
// default) or w = 1 (absolute: the largest sizes decide). Solved by Householder QR on the columns scaled to
// unit norm; the condition number of that scaled design says how well the data pin the parameters down.
//
// What 2-rank data can and cannot tell. With p = 2 every algorithm is one exchange: recursive doubling
// costs α + nβ + nγ, ring and Rabenseifner 2α + nβ + n/2·γ, binomial 2α + 2nβ + nγ. So a size range where
// one algorithm runs yields only an intercept and a slope: β and γ appear only as β + γ (or β + γ/2) and are
// not separately identifiable; α is (as the intercept, halved where the algorithm sends twice). Open MPI
// 4.1 switches between recursive doubling and ring below 16 KiB at 2 ranks, which in principle separates γ,
// but only through messages where α dominates: the fit reports that column's conditioning, and the sensible
// use of 2-rank data is γ fixed from a separate measurement (FitOptions::fit_gamma = false) with α and β
// fitted. Separating β from γ, and checking the log2 p and (p−1)/p factors at all, needs more ranks.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "analysis/perfmodel/collective_model.h"

namespace dtnn {
class ResultStore;
}

namespace dtnn::perf {

struct FitPoint {
  std::string op;  // "allreduce" | "iallreduce"
  int ranks = 2;
  double bytes = 0.0;
  double time_s = 0.0;
};

struct FitOptions {
  CollectiveRules rules = CollectiveRules::ompi41;
  bool fit_gamma = true;
  double gamma = 0.0;      // the fixed γ when !fit_gamma
  bool relative = true;    // weights 1/t²
  double min_bytes = 0.0;  // points outside [min_bytes, max_bytes] are left out
  double max_bytes = std::numeric_limits<double>::infinity();
  std::string op;          // only points of this op ("" = both)
};

struct FitResult {
  LinkCost link;
  bool gamma_fitted = false;
  std::vector<FitPoint> points;                 // those fitted
  std::vector<AllreduceAlgorithm> algorithms;   // per point
  std::vector<double> predicted_s;              // per point
  std::vector<double> residual_rel;             // (t̂ − t) / t per point
  double rms_rel = 0.0, max_abs_rel = 0.0;
  double condition = 0.0;                       // of the column-scaled design (∞: rank deficient)
  std::vector<std::string> notes;               // what is and is not identifiable, negative parameters
};

// Throws dtnn::Error when fewer points than unknowns remain, a time is not positive, or the design is rank
// deficient (a parameter the points cannot determine: say which).
FitResult fit_link(const std::vector<FitPoint>& points, const FitOptions& options);

// bench_allreduce's Google Benchmark JSON (the ingest's parser: median of repetitions).
std::vector<FitPoint> load_bench_points(const std::string& path);
// The store's collective_benchmarks rows of one transport ("default", "btl=self,tcp", ...).
std::vector<FitPoint> load_store_points(const ResultStore& store, const std::string& transport);

// The fit as text: the parameters, then one line per point (op, ranks, bytes, algorithm, measured,
// predicted, residual), then the notes.
std::string describe_fit(const FitResult& fit);

}  // namespace dtnn::perf
