// `dtnn compare`. See compare.h.
#include "analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <ostream>

#include "analysis/ci_output.h"
#include "analysis/stats.h"
#include "core/error.h"
#include "core/strings.h"

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
  std::vector<double> values;   // one per run: its median steady-state epoch
  std::vector<int64_t> run_ids;
  int warmup_only_runs = 0;     // ok runs with no epoch past the warm-up
};

// One throughput sample per run -- the median of its epochs after the first `warmup` -- since the epochs of
// one process share its state (page cache, frequency, placement) and are not independent samples.
std::map<std::string, Samples> samples_of(const ResultStore& store, const std::string& selection, int warmup) {
  const QueryResult q = store.query(
      "SELECT r.trial_key, r.label, r.id, ep.epoch, ep.samples_per_s FROM runs r JOIN matrices m ON m.id = "
      "r.matrix_id JOIN environments e ON e.id = r.environment_id JOIN epochs ep ON ep.run_id = r.id "
      "WHERE r.status = 'ok' AND " + selection_sql(selection) + " ORDER BY r.id, ep.epoch");
  std::map<std::string, Samples> out;
  std::vector<double> run_epochs;
  for (size_t i = 0; i < q.rows.size(); ++i) {
    const auto& row = q.rows[i];
    if (std::stoi(*row[3]) > warmup) {
      const double v = row[4] ? to_double(*row[4], "value") : 0.0;
      // log() of it is the test's sample: a run that trained nothing per second is named, not a NaN later.
      DTNN_CHECK(v > 0 && std::isfinite(v), "run ", *row[2], " epoch ", *row[3], " has samples/s ",
                 row[4] ? *row[4] : std::string("NULL"), ": not a throughput to compare");
      run_epochs.push_back(v);
    }
    const bool last_of_run = i + 1 == q.rows.size() || *q.rows[i + 1][2] != *row[2];
    if (!last_of_run) continue;
    Samples& s = out[*row[0]];
    s.label = *row[1];
    if (run_epochs.empty()) {
      ++s.warmup_only_runs;
    } else {
      s.values.push_back(median(run_epochs));
      s.run_ids.push_back(std::stoll(*row[2]));
    }
    run_epochs.clear();
  }
  return out;
}

// Per trial key, the runs that failed, timed out or diverged.
std::map<std::string, int> failed_runs_by_trial(const ResultStore& store, const std::string& selection) {
  const QueryResult q = store.query(
      "SELECT r.trial_key, count(*) FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = "
      "r.environment_id WHERE r.status IN ('failed', 'timeout', 'diverged') AND " + selection_sql(selection) +
      " GROUP BY r.trial_key");
  std::map<std::string, int> out;
  for (const auto& row : q.rows) out[*row[0]] = std::stoi(*row[1]);
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

// The distinct recorded machine keys of a selection's ok runs, and how many ok runs have none ('' = stored
// before migration 10).
std::set<std::string> machine_keys(const ResultStore& store, const std::string& selection, int& unrecorded) {
  const QueryResult q = store.query(
      "SELECT e.machine_key, count(*) FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON "
      "e.id = r.environment_id WHERE r.status = 'ok' AND " + selection_sql(selection) + " GROUP BY e.machine_key");
  std::set<std::string> keys;
  for (const auto& row : q.rows) {
    if (row[0]->empty()) unrecorded += std::stoi(*row[1]);
    else keys.insert(*row[0]);
  }
  return keys;
}

std::string diverged_note(int n) {
  return n ? " (" + std::to_string(n) + " diverged run(s), whose loss became NaN or infinite, are not compared)" : "";
}

}  // namespace

std::string format_trial_row(const std::string& label, const TrialComparison& t) {
  char shift[64] = "n/a (too few runs)";
  if (t.shift.bounded)
    std::snprintf(shift, sizeof shift, "%.3f [%.3f, %.3f]", std::exp(t.shift.estimate), std::exp(t.shift.low),
                  std::exp(t.shift.high));
  char line[512];
  if (t.baseline.empty() || t.candidate.empty()) {  // no steady-state epoch, or a candidate that failed
    std::snprintf(line, sizeof line, "%-44s %4zu %4zu %11s %11s %7s  %-21s %8s  %s", label.c_str(), t.baseline.size(),
                  t.candidate.size(), "-", "-", "-", "-", "-", t.verdict.c_str());
    return line;
  }
  std::snprintf(line, sizeof line, "%-44s %4zu %4zu %11.1f %11.1f %7.3f  %-21s %8.4f  %s", label.c_str(),
                t.baseline.size(), t.candidate.size(), median(t.baseline), median(t.candidate), t.ratio, shift,
                t.p_value, t.verdict.c_str());
  return line;
}

std::string tag_problem(const std::string& tag) {
  if (tag.empty()) return "a tag may not be empty";
  if (tag.find(',') != std::string::npos)
    return "a tag may not hold a comma (tags are stored comma-separated; give several tags instead)";
  return "";
}

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
    // Literal, case-sensitive matches: LIKE would read % and _ in a value as wildcards and ignore case.
    if (key == "commit") {
      cond = "substr(e.git_commit, 1, " + std::to_string(value.size()) + ") = " + sql_quote(value);
    } else if (key == "matrix") {
      cond = "m.name = " + sql_quote(value);
    } else if (key == "tag") {
      cond = "instr(',' || r.tags || ',', " + sql_quote("," + value + ",") + ") > 0";
    } else if (key == "runs") {
      const size_t dash = value.find('-');
      const std::string a = value.substr(0, dash), b = dash == std::string::npos ? a : value.substr(dash + 1);
      // Up to 18 digits: run ids are int64; a longer number became an SQLite real compared inexactly.
      if (!all_digits(a) || !all_digits(b) || a.size() > 18 || b.size() > 18)
        fail("run selection '", selection, "': runs=", value, " is not N or N-M (run ids, up to 18 digits)");
      if (std::stoll(a) > std::stoll(b))
        fail("run selection '", selection, "': runs=", value, " is an empty range (write the lower id first)");
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
  if (o.warmup_epochs < 0) fail("--warmup-epochs must be >= 0");
  const auto base = samples_of(store, o.baseline, o.warmup_epochs);
  const auto cand = samples_of(store, o.candidate, o.warmup_epochs);
  Comparison c;
  c.diverged_baseline = diverged_runs(store, o.baseline);
  c.diverged_candidate = diverged_runs(store, o.candidate);
  c.dirty_baseline = dirty_runs(store, o.baseline);
  c.dirty_candidate = dirty_runs(store, o.candidate);
  if (base.empty()) fail("the baseline selection '", o.baseline, "' has no ok runs", diverged_note(c.diverged_baseline));
  if (cand.empty())
    fail("the candidate selection '", o.candidate, "' has no ok runs", diverged_note(c.diverged_candidate));
  {  // one machine on both sides, unless asked: a ratio across machines measures the machines
    std::set<std::string> keys = machine_keys(store, o.baseline, c.unrecorded_machine_runs);
    const std::set<std::string> cand_keys = machine_keys(store, o.candidate, c.unrecorded_machine_runs);
    keys.insert(cand_keys.begin(), cand_keys.end());
    c.machines.assign(keys.begin(), keys.end());
    if (keys.size() > 1 && !o.cross_machine) {
      std::string list;
      for (const std::string& k : keys) list += "\n  " + k;
      fail("the selections ran on ", keys.size(), " different machines; a ratio across machines measures the machines "
           "(--cross-machine compares anyway, flagged):", list);
    }
  }
  const std::map<std::string, int> cand_failed = failed_runs_by_trial(store, o.candidate);
  std::vector<double> ratios;
  for (const auto& [key, b] : base) {
    auto it = cand.find(key);
    if (it == cand.end()) {
      if (cand_failed.count(key) && !b.values.empty()) {  // it ran, and failed: a regression, not a gap
        TrialComparison t;
        t.trial_key = key;
        t.label = b.label;
        t.baseline = b.values;
        t.verdict = "candidate failed";
        ++c.candidate_failures;
        c.trials.push_back(std::move(t));
      } else {
        ++c.only_baseline;
      }
      continue;
    }
    TrialComparison t;
    t.trial_key = key;
    t.label = it->second.label;
    t.baseline = b.values;
    t.candidate = it->second.values;
    c.warmup_only_runs += b.warmup_only_runs + it->second.warmup_only_runs;
    if (t.baseline.empty() || t.candidate.empty()) {
      t.verdict = "no steady-state epoch";
      c.too_few_samples = true;
      ++c.unjudged;
      c.trials.push_back(std::move(t));
      continue;
    }
    t.ratio = median(t.candidate) / median(t.baseline);
    t.p_value = mann_whitney_u(t.baseline, t.candidate).p_value;
    // The shift in log throughput: exp() of it is a ratio, and of its interval a ratio interval.
    std::vector<double> lb, lc;
    for (double v : t.baseline) lb.push_back(std::log(v));
    for (double v : t.candidate) lc.push_back(std::log(v));
    t.shift = hodges_lehmann(lb, lc, o.alpha);
    const bool enough = separation_can_be_significant(t.baseline.size(), t.candidate.size(), o.alpha);
    if (!enough) {
      c.too_few_samples = true;
      ++c.unjudged;
    }
    // Fewer runs than an exact test needs get no verdict, whatever p says: with ties (equal medians) the
    // normal approximation can give p < 0.05 for 3 runs a side, where no ordering of 3 and 3 is significant.
    if (!enough) t.verdict = "too few runs";
    else if (t.ratio < 1.0 - o.threshold && t.p_value < o.alpha) t.verdict = "regression";
    else if (t.ratio > 1.0 + o.threshold && t.p_value < o.alpha) t.verdict = "improvement";
    else t.verdict = "same";
    if (t.verdict == "regression") ++c.regressions;
    ratios.push_back(t.ratio);
    c.trials.push_back(std::move(t));
  }
  for (const auto& kv : cand)
    if (!base.count(kv.first)) ++c.only_candidate;
  if (c.trials.empty()) fail("the baseline and candidate selections have no trial in common");
  if (ratios.empty() && c.candidate_failures == 0)
    fail("no trial has a run with an epoch past the warm-up (--warmup-epochs ", o.warmup_epochs,
         "): nothing to compare");
  c.geomean_ratio = ratios.empty() ? 0.0 : geometric_mean(ratios);
  return c;
}

void print_comparison(std::ostream& out, const Comparison& c, const CompareOptions& o) {
  char line[640];
  std::snprintf(line, sizeof line, "%-44s %4s %4s %11s %11s %7s  %-21s %8s  %s\n", "trial (axis values)", "n_b",
                "n_c", "base samp/s", "cand samp/s", "ratio", "shift [CI]", "p", "verdict");
  out << line;
  for (const TrialComparison& t : c.trials) {
    std::string label = t.label.empty() ? t.trial_key : t.label;
    if (label.size() > 44) label = label.substr(0, 41) + "...";
    if (t.baseline.empty() || t.candidate.empty()) {
      std::snprintf(line, sizeof line, "%-44s %4zu %4zu %11s %11s %7s  %-21s %8s  %s\n", label.c_str(),
                    t.baseline.size(), t.candidate.size(), "-", "-", "-", "-", "-", t.verdict.c_str());
      out << line;
      continue;
    }
    out << format_trial_row(label, t) << "\n";
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
  if (c.machines.size() > 1)
    out << "warning: compared across " << c.machines.size() << " machines (--cross-machine): the ratios include "
           "the difference between the machines\n";
  if (c.unrecorded_machine_runs)
    out << "note: " << c.unrecorded_machine_runs << " run(s) were stored without the machine's identity "
           "(before schema version 10): not checked for a machine change\n";
  // An exact interval's confidence is discrete (4 runs a side reach 97.1 %, not 95): say what the rows reached,
  // as --junit and --markdown do per row.
  double lo_conf = 1.0, hi_conf = 0.0;
  for (const TrialComparison& t : c.trials)
    if (t.shift.bounded) lo_conf = std::min(lo_conf, t.shift.confidence), hi_conf = std::max(hi_conf, t.shift.confidence);
  char conf[96];
  if (hi_conf == 0.0)
    std::snprintf(conf, sizeof conf, "interval (none: too few runs for %.0f %%)", 100.0 * (1.0 - o.alpha));
  else if (std::round(1000.0 * lo_conf) == std::round(1000.0 * hi_conf))
    std::snprintf(conf, sizeof conf, "%.1f %% interval (at least %.0f %%)", 100.0 * lo_conf, 100.0 * (1.0 - o.alpha));
  else
    std::snprintf(conf, sizeof conf, "%.1f-%.1f %% interval (at least %.0f %%)", 100.0 * lo_conf, 100.0 * hi_conf,
                  100.0 * (1.0 - o.alpha));
  out << "samples: one per run, the median of its epochs after the first " << o.warmup_epochs
      << " (warm-up); shift: Hodges-Lehmann ratio cand/base with its " << conf << "\n";
  if (c.warmup_only_runs)
    out << "note: " << c.warmup_only_runs << " ok run(s) have no epoch past the warm-up and give no sample\n";
  if (c.too_few_samples)
    out << "warning: " << c.unjudged << " trial(s) have too few runs on a side for the U test to reach p < "
        << o.alpha << " at all (" << min_repeats_for_significance(o.alpha)
        << " a side when equal; Google Benchmark's compare recommends 9 or more): no verdict, exit 2\n";
  if (c.candidate_failures)
    out << c.candidate_failures << " trial(s) whose candidate runs all failed, timed out or diverged while the "
        "baseline's ran (dtnn query runs)\n";
  std::snprintf(line, sizeof line, "%d regression(s) (slower by more than %.1f%% with p < %.2f)\n", c.regressions,
                100.0 * o.threshold, o.alpha);
  out << line;
}

namespace {

std::string ratio_text(const TrialComparison& t) {
  if (t.baseline.empty() || t.candidate.empty()) return "-";
  char buf[128];
  if (t.shift.bounded)
    std::snprintf(buf, sizeof buf, "%.3f (HL %.3f, %.0f %% CI %.3f-%.3f), p %.4f", t.ratio, std::exp(t.shift.estimate),
                  100.0 * t.shift.confidence, std::exp(t.shift.low), std::exp(t.shift.high), t.p_value);
  else
    std::snprintf(buf, sizeof buf, "%.3f (too few runs for an interval), p %.4f", t.ratio, t.p_value);
  return buf;
}

}  // namespace

std::string comparison_junit(const Comparison& c, const CompareOptions& o) {
  std::vector<JUnitCase> cases;
  for (const TrialComparison& t : c.trials) {
    JUnitCase k;
    k.classname = "dtnn.compare";
    k.name = t.label.empty() ? t.trial_key : t.label;
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "%zu baseline and %zu candidate runs; medians %.1f and %.1f samples/s; ",
                  t.baseline.size(), t.candidate.size(), t.baseline.empty() ? 0.0 : median(t.baseline),
                  t.candidate.empty() ? 0.0 : median(t.candidate));
    k.system_out = numbers + ratio_text(t);
    if (t.verdict == "regression") {
      k.failure_type = "regression";
      k.failure_message = "slower by " + std::to_string(static_cast<int>(std::lround(100.0 * (1.0 - t.ratio)))) +
                          " % (threshold " + std::to_string(static_cast<int>(std::lround(100.0 * o.threshold))) + " %)";
      k.failure_text = k.system_out;
    } else if (t.verdict == "candidate failed") {
      k.failure_type = "failed";
      k.failure_message = "every candidate run of this trial failed, timed out or diverged";
      k.failure_text = k.system_out;
    } else if (t.verdict == "too few runs" || t.verdict == "no steady-state epoch") {
      k.skipped_message = t.verdict + ": a verdict needs " + std::to_string(min_repeats_for_significance(o.alpha)) +
                          " runs a side";
    }
    cases.push_back(k);
  }
  return junit_xml("dtnn compare", cases);
}

std::string comparison_markdown(const Comparison& c, const CompareOptions& o) {
  std::vector<std::vector<std::string>> rows;
  for (const TrialComparison& t : c.trials) {
    char med[64] = "-";
    if (!t.baseline.empty() && !t.candidate.empty())
      std::snprintf(med, sizeof med, "%.1f / %.1f", median(t.baseline), median(t.candidate));
    rows.push_back({t.label.empty() ? t.trial_key : t.label,
                    std::to_string(t.baseline.size()) + " / " + std::to_string(t.candidate.size()), med, ratio_text(t),
                    t.verdict == "regression" || t.verdict == "candidate failed" ? "**" + t.verdict + "**"
                                                                                  : t.verdict});
  }
  char head[256];
  std::snprintf(head, sizeof head, "## dtnn compare: %d regression(s), geometric mean of the ratios %.3f over %zu trial(s)\n\n",
                c.regressions, c.geomean_ratio, c.trials.size());
  std::string md = head;
  md += markdown_table({"trial", "runs (base / cand)", "samples/s (base / cand)", "ratio cand/base", "verdict"}, rows);
  md += "\nOne sample per run (its median epoch after the first " + std::to_string(o.warmup_epochs) +
        "); a regression is slower by more than " + std::to_string(static_cast<int>(std::lround(100.0 * o.threshold))) +
        " % with p < " + std::to_string(o.alpha).substr(0, 4) + " (Mann-Whitney U); a verdict needs " +
        std::to_string(min_repeats_for_significance(o.alpha)) + " runs a side.";
  if (c.dirty_baseline || c.dirty_candidate) md += " Runs of dirty builds: " + std::to_string(c.dirty_baseline) + " / " +
                                                   std::to_string(c.dirty_candidate) + ".";
  if (c.machines.size() > 1) md += " **Compared across " + std::to_string(c.machines.size()) + " machines.**";
  return md + "\n";
}

}  // namespace dtnn
