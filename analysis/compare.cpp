// `dtnn compare`. See compare.h.
#include "analysis/compare.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>

#include "analysis/stats.h"
#include "core/error.h"

namespace dtnn {

namespace {

std::string sql_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

struct Samples {
  std::string label;
  std::vector<double> values;
};

std::map<std::string, Samples> samples_of(const ResultStore& store, const std::string& selection) {
  const QueryResult q = store.query(
      "SELECT r.trial_key, r.label, ep.samples_per_s FROM runs r JOIN matrices m ON m.id = r.matrix_id "
      "JOIN environments e ON e.id = r.environment_id JOIN epochs ep ON ep.run_id = r.id "
      "WHERE r.status = 'ok' AND " + selection_sql(selection) + " ORDER BY r.id, ep.epoch");
  std::map<std::string, Samples> out;
  for (const auto& row : q.rows) {
    Samples& s = out[*row[0]];
    s.label = *row[1];
    s.values.push_back(std::stod(*row[2]));
  }
  return out;
}

int diverged_runs(const ResultStore& store, const std::string& selection) {
  const QueryResult q = store.query(
      "SELECT count(*) FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = "
      "r.environment_id WHERE r.status = 'diverged' AND " + selection_sql(selection));
  return std::stoi(*q.rows.at(0).at(0));
}

int dirty_runs(const ResultStore& store, const std::string& selection) {
  const QueryResult q = store.query(
      "SELECT count(*) FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = "
      "r.environment_id WHERE r.status = 'ok' AND e.git_dirty AND " + selection_sql(selection));
  return std::stoi(*q.rows.at(0).at(0));
}

std::string diverged_note(int n) {
  return n ? " (" + std::to_string(n) + " diverged run(s), whose loss became NaN or infinite, are not compared)" : "";
}

}  // namespace

std::string selection_sql(const std::string& selection) {
  if (selection.empty()) fail("empty run selection (expected e.g. commit=abc123 or matrix=quickstart,tag=ci)");
  std::string sql;
  size_t start = 0;
  while (start <= selection.size()) {
    size_t end = selection.find(',', start);
    if (end == std::string::npos) end = selection.size();
    const std::string part = selection.substr(start, end - start);
    const size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size())
      fail("run selection '", selection, "': '", part, "' is not key=value (keys: commit, matrix, tag, runs)");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    std::string cond;
    if (key == "commit") {
      cond = "e.git_commit LIKE " + sql_quote(value + "%");
    } else if (key == "matrix") {
      cond = "m.name = " + sql_quote(value);
    } else if (key == "tag") {
      cond = "(',' || r.tags || ',') LIKE " + sql_quote("%," + value + ",%");
    } else if (key == "runs") {
      const size_t dash = value.find('-');
      const std::string a = value.substr(0, dash), b = dash == std::string::npos ? a : value.substr(dash + 1);
      if (!all_digits(a) || !all_digits(b)) fail("run selection '", selection, "': runs=", value, " is not N or N-M");
      cond = "r.id BETWEEN " + a + " AND " + b;
    } else {
      fail("run selection '", selection, "': unknown key '", key, "' (keys: commit, matrix, tag, runs)");
    }
    sql += (sql.empty() ? "" : " AND ") + cond;
    start = end + 1;
  }
  return "(" + sql + ")";
}

Comparison compare_runs(const ResultStore& store, const CompareOptions& o) {
  if (!(o.threshold >= 0.0 && o.threshold < 1.0)) fail("--threshold must be in [0%, 100%)");
  const auto base = samples_of(store, o.baseline);
  const auto cand = samples_of(store, o.candidate);
  Comparison c;
  c.diverged_baseline = diverged_runs(store, o.baseline);
  c.diverged_candidate = diverged_runs(store, o.candidate);
  c.dirty_baseline = dirty_runs(store, o.baseline);
  c.dirty_candidate = dirty_runs(store, o.candidate);
  if (base.empty()) fail("the baseline selection '", o.baseline, "' has no ok runs", diverged_note(c.diverged_baseline));
  if (cand.empty())
    fail("the candidate selection '", o.candidate, "' has no ok runs", diverged_note(c.diverged_candidate));
  const int need = min_repeats_for_significance(o.alpha);
  std::vector<double> ratios;
  for (const auto& [key, b] : base) {
    auto it = cand.find(key);
    if (it == cand.end()) {
      ++c.only_baseline;
      continue;
    }
    TrialComparison t;
    t.trial_key = key;
    t.label = it->second.label;
    t.baseline = b.values;
    t.candidate = it->second.values;
    t.ratio = median(t.candidate) / median(t.baseline);
    t.p_value = mann_whitney_u(t.baseline, t.candidate).p_value;
    const bool enough = static_cast<int>(std::min(t.baseline.size(), t.candidate.size())) >= need;
    if (!enough) c.too_few_samples = true;
    if (t.ratio < 1.0 - o.threshold && t.p_value < o.alpha) t.verdict = "regression";
    else if (t.ratio > 1.0 + o.threshold && t.p_value < o.alpha) t.verdict = "improvement";
    else if (!enough) t.verdict = "too few samples";
    else t.verdict = "same";
    if (t.verdict == "regression") ++c.regressions;
    ratios.push_back(t.ratio);
    c.trials.push_back(std::move(t));
  }
  for (const auto& kv : cand)
    if (!base.count(kv.first)) ++c.only_candidate;
  if (c.trials.empty()) fail("the baseline and candidate selections have no trial in common");
  c.geomean_ratio = geometric_mean(ratios);
  return c;
}

void print_comparison(std::ostream& out, const Comparison& c, const CompareOptions& o) {
  char line[512];
  std::snprintf(line, sizeof line, "%-48s %5s %5s %12s %12s %8s %8s  %s\n", "trial (axis values)", "n_b", "n_c",
                "base samp/s", "cand samp/s", "ratio", "p", "verdict");
  out << line;
  for (const TrialComparison& t : c.trials) {
    std::string label = t.label.empty() ? t.trial_key : t.label;
    if (label.size() > 48) label = label.substr(0, 45) + "...";
    std::snprintf(line, sizeof line, "%-48s %5zu %5zu %12.1f %12.1f %8.3f %8.4f  %s\n", label.c_str(),
                  t.baseline.size(), t.candidate.size(), median(t.baseline), median(t.candidate), t.ratio,
                  t.p_value, t.verdict.c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "geometric mean of the ratios: %.3f over %zu trial(s)", c.geomean_ratio,
                c.trials.size());
  out << line;
  if (c.only_baseline || c.only_candidate)
    out << " (" << c.only_baseline << " only in the baseline, " << c.only_candidate << " only in the candidate)";
  out << "\n";
  if (c.diverged_baseline || c.diverged_candidate)
    out << "note: " << c.diverged_baseline << " baseline and " << c.diverged_candidate
        << " candidate run(s) diverged (training loss NaN or infinite) and are not compared (dtnn query runs)\n";
  if (c.dirty_baseline || c.dirty_candidate)
    out << "warning: " << c.dirty_baseline << " baseline and " << c.dirty_candidate
        << " candidate run(s) ran a binary built from a tree with uncommitted changes (commit shown with +dirty): "
           "their commit does not say what ran\n";
  if (c.too_few_samples)
    out << "warning: some trials have fewer than " << min_repeats_for_significance(o.alpha)
        << " samples on a side; the U test cannot reach p < " << o.alpha << " with so few (raise repeats or epochs)\n";
  std::snprintf(line, sizeof line, "%d regression(s) (slower by more than %.1f%% with p < %.2f)\n", c.regressions,
                100.0 * o.threshold, o.alpha);
  out << line;
}

}  // namespace dtnn
