#include "analysis/perfmodel/collective_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_parse.h"
#include "core/file_io.h"
#include "core/strings.h"
#include "results/ingest_collectives.h"
#include "results/store.h"

namespace dtnn::perf {

namespace {

// Least squares min ||A x − b|| for a tall m×k A (row-major, k ≤ 3) by Householder QR. Columns are scaled to
// unit norm first; returns the solution in the original units and the condition number of the scaled R
// (max |R_ii| / min |R_ii|, a cheap estimate; ∞ when a column vanishes).
struct LsqResult {
  std::vector<double> x;
  double condition = 0.0;
};

LsqResult least_squares(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t m = a.size(), k = a.empty() ? 0 : a[0].size();
  DTNN_ASSERT(m >= k && k > 0);
  std::vector<double> scale(k, 0.0);
  for (size_t j = 0; j < k; ++j) {
    for (size_t i = 0; i < m; ++i) scale[j] += a[i][j] * a[i][j];
    scale[j] = std::sqrt(scale[j]);
    if (scale[j] == 0.0) return {{}, std::numeric_limits<double>::infinity()};
    for (size_t i = 0; i < m; ++i) a[i][j] /= scale[j];
  }
  std::vector<double> diag(k);
  for (size_t j = 0; j < k; ++j) {
    double norm = 0.0;
    for (size_t i = j; i < m; ++i) norm += a[i][j] * a[i][j];
    norm = std::sqrt(norm);
    const double alpha = a[j][j] > 0 ? -norm : norm;
    std::vector<double> v(m, 0.0);
    for (size_t i = j; i < m; ++i) v[i] = a[i][j];
    v[j] -= alpha;
    double vv = 0.0;
    for (size_t i = j; i < m; ++i) vv += v[i] * v[i];
    if (vv > 0) {
      for (size_t c = j; c < k; ++c) {
        double dot = 0.0;
        for (size_t i = j; i < m; ++i) dot += v[i] * a[i][c];
        for (size_t i = j; i < m; ++i) a[i][c] -= 2.0 * dot / vv * v[i];
      }
      double dot = 0.0;
      for (size_t i = j; i < m; ++i) dot += v[i] * b[i];
      for (size_t i = j; i < m; ++i) b[i] -= 2.0 * dot / vv * v[i];
    }
    diag[j] = a[j][j];
  }
  double dmax = 0.0, dmin = std::numeric_limits<double>::infinity();
  for (double d : diag) {
    dmax = std::max(dmax, std::fabs(d));
    dmin = std::min(dmin, std::fabs(d));
  }
  LsqResult r;
  r.condition = dmin > 0 ? dmax / dmin : std::numeric_limits<double>::infinity();
  if (dmin <= 1e-12 * dmax) return r;  // rank deficient: no solution
  r.x.assign(k, 0.0);
  for (size_t j = k; j-- > 0;) {
    double s = b[j];
    for (size_t c = j + 1; c < k; ++c) s -= a[j][c] * r.x[c];
    r.x[j] = s / a[j][j];
  }
  for (size_t j = 0; j < k; ++j) r.x[j] /= scale[j];
  return r;
}

AllreduceAlgorithm algorithm_of(const FitPoint& p, CollectiveRules rules) {
  return effective_algorithm(p.op == "iallreduce" ? choose_iallreduce(p.ranks, p.bytes, true, rules)
                                                  : choose_allreduce(p.ranks, p.bytes, rules),
                             p.ranks, p.bytes);
}

}  // namespace

FitResult fit_link(const std::vector<FitPoint>& all, const FitOptions& options) {
  FitResult fit;
  for (const FitPoint& p : all) {
    if (p.bytes < options.min_bytes || p.bytes > options.max_bytes) continue;
    if (!options.op.empty() && p.op != options.op) continue;
    DTNN_CHECK(p.time_s > 0 && std::isfinite(p.time_s), "collective fit: a time must be positive (", p.op, " of ",
               p.bytes, " B over ", p.ranks, " ranks: ", p.time_s, " s)");
    DTNN_CHECK(p.op == "allreduce" || p.op == "iallreduce", "collective fit: unknown op '", p.op, "'");
    if (p.ranks < 2) continue;  // nothing to learn from one rank
    fit.points.push_back(p);
  }
  const size_t k = options.fit_gamma ? 3 : 2;
  DTNN_CHECK(fit.points.size() >= k, "collective fit: ", fit.points.size(), " usable points (of ", all.size(),
             ") for ", k, " unknowns; widen the size range or give more measurements");
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  bool several_p = false;
  for (const FitPoint& p : fit.points) {
    several_p |= p.ranks != fit.points.front().ranks;
    const AllreduceAlgorithm alg = algorithm_of(p, options.rules);
    fit.algorithms.push_back(alg);
    const CostTerms t = allreduce_terms(alg, p.ranks, p.bytes);
    const double w = options.relative ? 1.0 / p.time_s : 1.0;  // sqrt of the weight 1/t²
    double rhs = p.time_s;
    if (!options.fit_gamma) rhs -= t.c_gamma * options.gamma;
    std::vector<double> row = {t.c_alpha * w, t.c_beta * w};
    if (options.fit_gamma) row.push_back(t.c_gamma * w);
    a.push_back(row);
    b.push_back(rhs * w);
  }
  const LsqResult r = least_squares(a, b);
  fit.condition = r.condition;
  if (r.x.empty()) {
    std::string why = "the points do not determine ";
    why += options.fit_gamma ? "α, β and γ separately (β and γ enter every point in the same proportion: "
                               "fix γ with --gamma, or add measurements at other rank counts)"
                             : "α and β (every point has the same α/β proportion)";
    fail("collective fit: ", why);
  }
  fit.link.alpha = r.x[0];
  fit.link.beta = r.x[1];
  fit.link.gamma = options.fit_gamma ? r.x[2] : options.gamma;
  fit.gamma_fitted = options.fit_gamma;
  double sum2 = 0.0;
  for (size_t i = 0; i < fit.points.size(); ++i) {
    const FitPoint& p = fit.points[i];
    const double t = allreduce_time(fit.algorithms[i], p.ranks, p.bytes, fit.link);
    fit.predicted_s.push_back(t);
    const double rel = (t - p.time_s) / p.time_s;
    fit.residual_rel.push_back(rel);
    sum2 += rel * rel;
    fit.max_abs_rel = std::max(fit.max_abs_rel, std::fabs(rel));
  }
  fit.rms_rel = std::sqrt(sum2 / static_cast<double>(fit.points.size()));
  // As many distinct measurements as unknowns: the line passes through them whatever the model, so a 0 %
  // residual says nothing (one 1 MiB size, allreduce and iallreduce: alpha 35 us where all sizes give 0.5 us).
  std::set<std::pair<double, int>> distinct;
  for (const FitPoint& p : fit.points) distinct.insert({p.bytes, p.ranks});
  if (distinct.size() <= k)
    fit.notes.push_back("only " + std::to_string(distinct.size()) + " distinct (size, rank count) point" +
                        (distinct.size() == 1 ? "" : "s") + " for " + std::to_string(k) +
                        " unknowns: the fit is (nearly) exactly determined and its residuals do not test the model; "
                        "measure more sizes");
  if (!several_p)
    fit.notes.push_back("all points have " + std::to_string(fit.points.front().ranks) +
                        " ranks: the (p-1)/p and log2 p factors are not checked by these data");
  if (!several_p && fit.points.front().ranks == 2)
    fit.notes.push_back(options.fit_gamma
                            ? "2 ranks: beta and gamma are told apart only by the algorithm switches below 16 KiB, "
                              "where alpha dominates; trust beta + gamma/2, not beta and gamma separately"
                            : "2 ranks: gamma fixed, so beta is the per-byte time left over (beta + gamma/2 is "
                              "what the data determine)");
  if (fit.condition > 1e6)
    fit.notes.push_back("ill-conditioned design (condition " + std::to_string(fit.condition) +
                        "): small changes in the data move the parameters a lot");
  for (auto [name, v] : {std::pair{"alpha", fit.link.alpha}, {"beta", fit.link.beta}, {"gamma", fit.link.gamma}})
    if (v < 0) fit.notes.push_back(std::string(name) + " came out negative: the model does not fit these sizes "
                                                       "(narrow the range or fix gamma)");
  return fit;
}

std::vector<FitPoint> load_bench_points(const std::string& path) {
  const nlohmann::json j = parse_json(read_file(path, kMaxJsonFileBytes), path);
  DTNN_CHECK(is_collective_benchmark_json(j), path, ": not a bench_allreduce Google Benchmark file");
  std::vector<FitPoint> out;
  for (const CollectiveBenchmarkRow& r : read_collective_benchmarks(j, path))
    out.push_back({r.op, r.ranks, static_cast<double>(r.bytes), r.time_s});
  return out;
}

std::vector<FitPoint> load_store_points(const ResultStore& store, const std::string& transport) {
  std::string quoted = "'";
  for (char c : transport) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  quoted += "'";
  const QueryResult q = store.query("SELECT op, ranks, bytes, time_s FROM collective_benchmarks WHERE transport = " +
                                    quoted + " ORDER BY op, ranks, bytes");
  std::vector<FitPoint> out;
  for (const auto& row : q.rows) {
    DTNN_ASSERT(row.size() == 4 && row[0] && row[1] && row[2] && row[3]);
    out.push_back({*row[0], std::stoi(*row[1]), to_double(*row[2], "bytes"), to_double(*row[3], "seconds")});
  }
  DTNN_CHECK(!out.empty(), "no collective_benchmarks rows with transport '", transport,
             "' in the store (dtnn ingest a bench_allreduce JSON first; `dtnn query collectives` lists them)");
  return out;
}

std::string describe_fit(const FitResult& fit) {
  char buf[256];
  std::string s;
  std::snprintf(buf, sizeof buf, "alpha = %.3f us, beta = %.4f ns/B (1/beta = %.3f GB/s), gamma = %.4f ns/B%s\n",
                fit.link.alpha * 1e6, fit.link.beta * 1e9, fit.link.beta > 0 ? 1e-9 / fit.link.beta : 0.0,
                fit.link.gamma * 1e9, fit.gamma_fitted ? "" : " (fixed)");
  s += buf;
  std::snprintf(buf, sizeof buf, "%zu points, relative residuals: rms %.1f %%, max %.1f %%; condition %.3g\n",
                fit.points.size(), fit.rms_rel * 100, fit.max_abs_rel * 100, fit.condition);
  s += buf;
  std::snprintf(buf, sizeof buf, "%-10s %5s %10s %-18s %12s %12s %9s\n", "op", "ranks", "bytes", "algorithm",
                "measured us", "model us", "residual");
  s += buf;
  for (size_t i = 0; i < fit.points.size(); ++i) {
    const FitPoint& p = fit.points[i];
    std::snprintf(buf, sizeof buf, "%-10s %5d %10.0f %-18s %12.2f %12.2f %8.1f%%\n", p.op.c_str(), p.ranks, p.bytes,
                  algorithm_name(fit.algorithms[i]), p.time_s * 1e6, fit.predicted_s[i] * 1e6,
                  fit.residual_rel[i] * 100);
    s += buf;
  }
  for (const std::string& n : fit.notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace dtnn::perf
