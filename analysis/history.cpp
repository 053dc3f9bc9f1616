// `dtnn history`. See history.h.
#include "analysis/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <tuple>

#include "analysis/ci_output.h"
#include "analysis/compare.h"
#include "core/error.h"
#include "core/host.h"
#include "core/median.h"
#include "core/strings.h"

namespace dtnn {

namespace {

// Position of every commit in git's order (parents first), or empty without a repository.
std::map<std::string, int> git_order(const std::string& repo) {
  std::map<std::string, int> pos;
  if (repo.empty()) return pos;
  std::istringstream in(capture_command("git -C " + shell_quote(repo) +
                                        " rev-list --topo-order --reverse --all 2>/dev/null"));
  int i = 0;
  for (std::string line; std::getline(in, line);)
    if (line.size() == 40) pos[line] = i++;
  return pos;
}

struct RunValue {
  std::string trial_key, label, machine_key, build, commit, started_at;
  double value = 0.0;
};

// What kind of build ran, from environments.build_type ("Release [GNU 12.2.0; Release; -O3 ...; backends:
// cuda=ON onednn=ON mpi=ON sanitize=OFF]"): the build type and the backends, "Release; backends: ...". A
// Debug or sanitizer build's runs beside Release ones are another series, not a step; compiler versions and
// flags stay in one series (a commit that changes the flags is a change history should show).
std::string build_kind(const std::string& build_type) {
  const std::string type = build_type.substr(0, build_type.find(' '));
  const size_t backends = build_type.find("backends: ");
  if (backends == std::string::npos) return type;
  const size_t end = build_type.find(']', backends);
  return type + "; " + build_type.substr(backends, end == std::string::npos ? std::string::npos : end - backends);
}

std::vector<RunValue> run_values(const ResultStore& store, const HistoryOptions& o, History& h) {
  const std::string where = o.selection.empty() ? "" : " AND " + selection_sql(o.selection);
  const std::string from =
      " FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = r.environment_id "
      "WHERE r.status = 'ok'" + where;
  const QueryResult excluded = store.query(
      "SELECT coalesce(sum(e.git_dirty <> 0), 0), coalesce(sum(e.git_dirty = 0 AND (e.git_commit IN ('', "
      "'unknown'))), 0)" + from);
  h.dirty_runs = std::stoi(*excluded.rows.at(0).at(0));
  h.unknown_commit_runs = std::stoi(*excluded.rows.at(0).at(1));
  const std::string keep = " AND e.git_dirty = 0 AND e.git_commit NOT IN ('', 'unknown')";
  std::vector<RunValue> out;
  // Clean runs that give no value are counted, not dropped in silence: no test accuracy (or 0 %: steps are
  // fitted to log values), or no epoch past the warm-up.
  const int clean = std::stoi(*store.query("SELECT count(*)" + from + keep).rows.at(0).at(0));
  if (o.metric == "test_accuracy") {
    const QueryResult q = store.query("SELECT r.trial_key, r.label, e.machine_key, e.build_type, e.git_commit, "
                                      "r.started_at, r.test_accuracy" + from + keep +
                                      " AND r.test_accuracy > 0 ORDER BY r.id");
    for (const auto& row : q.rows)
      out.push_back({*row[0], *row[1], *row[2], build_kind(*row[3]), *row[4], *row[5], to_double(*row[6], "value")});
    h.no_value_runs = clean - static_cast<int>(out.size());
    return out;
  }
  // samples_per_s: compare's sample -- the median epoch after the warm-up.
  const QueryResult epochs = store.query(
      "SELECT r.trial_key, r.label, e.machine_key, e.git_commit, r.started_at, r.id, ep.samples_per_s, "
      "e.build_type FROM runs r "
      "JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = r.environment_id JOIN epochs ep ON "
      "ep.run_id = r.id WHERE r.status = 'ok'" + where + keep + " AND ep.epoch > " +
      std::to_string(o.warmup_epochs) + " ORDER BY r.id, ep.epoch");
  std::vector<double> run;
  for (size_t i = 0; i < epochs.rows.size(); ++i) {
    const auto& row = epochs.rows[i];
    run.push_back(to_double(*row[6], "value"));
    if (i + 1 < epochs.rows.size() && *epochs.rows[i + 1][5] == *row[5]) continue;
    const double v = median(run);
    run.clear();
    if (v > 0.0) out.push_back({*row[0], *row[1], *row[2], build_kind(*row[7]), *row[3], *row[4], v});
  }
  h.no_value_runs = clean - static_cast<int>(out.size());
  return out;
}

}  // namespace

History load_history(const ResultStore& store, const HistoryOptions& o) {
  if (o.metric != "samples_per_s" && o.metric != "test_accuracy")
    fail("--metric must be samples_per_s or test_accuracy (got '", o.metric, "')");
  if (!(o.threshold >= 0.0 && o.threshold < 1.0)) fail("--threshold must be in [0%, 100%)");
  if (o.warmup_epochs < 0) fail("--warmup-epochs must be >= 0");
  History h;
  h.metric = o.metric;
  const std::vector<RunValue> runs = run_values(store, o, h);
  if (runs.empty())
    fail("no ok run ", o.selection.empty() ? std::string("in the database") : "in the selection '" + o.selection + "'",
         " has a ", o.metric, " value from a clean build (", h.dirty_runs, " run(s) of dirty builds and ",
         h.unknown_commit_runs, " without a commit left out)");
  const std::map<std::string, int> git = git_order(o.repo);
  if (o.repo_given && git.empty())
    fail("--repo ", o.repo, ": git lists no commit there (not a git repository?); leave --repo out to order "
         "commits by the time of their runs");

  // Series by (trial, machine, build kind); points by commit.
  std::map<std::tuple<std::string, std::string, std::string>, HistorySeries> series;
  for (const RunValue& r : runs) {
    HistorySeries& s = series[{r.trial_key, r.machine_key, r.build}];
    s.trial_key = r.trial_key;
    s.label = r.label;
    s.machine_key = r.machine_key;
    s.build = r.build;
    auto it = std::find_if(s.points.begin(), s.points.end(), [&](const HistoryPoint& p) { return p.commit == r.commit; });
    if (it == s.points.end()) {
      s.points.push_back({r.commit, r.started_at, {}, 0.0});
      it = s.points.end() - 1;
    }
    it->values.push_back(r.value);
    it->first_run_at = std::min(it->first_run_at, r.started_at);
  }
  for (auto& [key, s] : series) {
    const bool all_known = std::all_of(s.points.begin(), s.points.end(),
                                       [&](const HistoryPoint& p) { return git.count(p.commit) > 0; });
    s.order = all_known ? "git" : "time";
    std::stable_sort(s.points.begin(), s.points.end(), [&](const HistoryPoint& a, const HistoryPoint& b) {
      return all_known ? git.at(a.commit) < git.at(b.commit) : a.first_run_at < b.first_run_at;
    });
    // The fit is quadratic in commits: keep the newest max_commits (the steps CI asks about are recent).
    if (o.max_commits > 0 && static_cast<int>(s.points.size()) > o.max_commits) {
      s.older_commits_left_out = static_cast<int>(s.points.size()) - o.max_commits;
      s.points.erase(s.points.begin(), s.points.begin() + s.older_commits_left_out);
    }
    std::vector<std::vector<double>> groups;
    for (HistoryPoint& p : s.points) {
      p.value = median(p.values);
      std::vector<double> logs;
      for (double v : p.values) logs.push_back(std::log(v));  // positive: run_values keeps no other
      groups.push_back(logs);
    }
    const ChangePointFit fit = detect_change_points(groups, o.change_points);
    for (size_t k = 1; k < fit.segments.size(); ++k) {
      HistoryStep step;
      step.point = fit.segments[k].first;
      step.commit = s.points[step.point].commit;
      step.before = std::exp(fit.segments[k - 1].level);
      step.after = std::exp(fit.segments[k].level);
      step.ratio = step.after / step.before;
      step.verdict = step.ratio < 1.0 - o.threshold ? "regression"
                     : step.ratio > 1.0 + o.threshold ? "improvement" : "step";
      s.steps.push_back(step);
    }
    // Regressed while the newest level is below the level before the latest regression by more than the
    // threshold: a further step down (1000 -> 800 -> 776) or a partial recovery (800 -> 824) does not clear it.
    for (size_t k = s.steps.size(); k-- > 0;)
      if (s.steps[k].verdict == "regression") {
        s.newest_regressed = std::exp(fit.segments.back().level) < s.steps[k].before * (1.0 - o.threshold);
        break;
      }
    if (s.newest_regressed) ++h.regressed_series;
    h.series.push_back(std::move(s));
  }
  // Machines and builds numbered in key order, so that series of one trial on two machines or of two kinds of
  // build have distinct names.
  std::map<std::string, int> machines, builds;
  for (const HistorySeries& s : h.series) {
    machines.emplace(s.machine_key, 0);
    builds.emplace(s.build, 0);
  }
  for (auto* numbering : {&machines, &builds}) {
    int number = 0;
    for (auto& [key, index] : *numbering) index = ++number;
  }
  for (HistorySeries& s : h.series) {
    s.name = s.label.empty() ? s.trial_key : s.label;
    if (machines.size() > 1) s.name += " [machine " + std::to_string(machines.at(s.machine_key)) + "]";
    if (builds.size() > 1) s.name += " [build " + std::to_string(builds.at(s.build)) + "]";
  }
  return h;
}

void print_history(std::ostream& out, const History& h, const HistoryOptions& o) {
  char line[512];
  for (const HistorySeries& s : h.series) {
    out << s.name << "  [machine: "
        << (s.machine_key.empty() ? "not recorded" : s.machine_key) << "; build: " << s.build
        << "; commit order: " << s.order << "]\n";
    std::snprintf(line, sizeof line, "  %-12s %4s %14s  %s\n", "commit", "runs", h.metric.c_str(), "");
    out << line;
    size_t next_step = 0;
    for (size_t i = 0; i < s.points.size(); ++i) {
      const HistoryPoint& p = s.points[i];
      std::string mark;
      if (next_step < s.steps.size() && s.steps[next_step].point == static_cast<int>(i)) {
        const HistoryStep& st = s.steps[next_step++];
        char m[160];
        std::snprintf(m, sizeof m, "<- %s: %.4g -> %.4g (x%.3f)", st.verdict.c_str(), st.before, st.after, st.ratio);
        mark = m;
      }
      std::snprintf(line, sizeof line, "  %-12s %4zu %14.4g  %s\n", p.commit.substr(0, 12).c_str(), p.values.size(),
                    p.value, mark.c_str());
      out << line;
    }
    if (s.older_commits_left_out)
      out << "  (" << s.older_commits_left_out << " older commit(s) left out: --max-commits " << o.max_commits << ")\n";
    if (s.newest_regressed) out << "  REGRESSED: the newest segment is below the one before\n";
  }
  out << h.series.size() << " series; " << h.regressed_series << " whose newest segment regressed (below the one "
      << "before by more than " << 100.0 * o.threshold << " %)";
  if (h.dirty_runs || h.unknown_commit_runs || h.no_value_runs)
    out << "; left out: " << h.dirty_runs << " run(s) of dirty builds, " << h.unknown_commit_runs
        << " without a commit, " << h.no_value_runs << " without a value (no epoch past the warm-up, or none)";
  out << "\n";
}

std::string history_json(const History& h, const HistoryOptions& o) {
  nlohmann::json j;
  j["schema"] = "dtnn.history/1";
  j["metric"] = h.metric;
  j["threshold"] = o.threshold;
  j["dirty_runs"] = h.dirty_runs;
  j["unknown_commit_runs"] = h.unknown_commit_runs;
  j["no_value_runs"] = h.no_value_runs;
  j["regressed_series"] = h.regressed_series;
  nlohmann::json list = nlohmann::json::array();
  for (const HistorySeries& s : h.series) {
    nlohmann::json sj = {{"trial_key", s.trial_key}, {"label", s.label}, {"name", s.name},
                         {"machine_key", s.machine_key}, {"build", s.build},
                         {"older_commits_left_out", s.older_commits_left_out},
                         {"order", s.order}, {"newest_regressed", s.newest_regressed}};
    nlohmann::json points = nlohmann::json::array();
    for (const HistoryPoint& p : s.points)
      points.push_back({{"commit", p.commit}, {"first_run_at", p.first_run_at}, {"values", p.values}, {"value", p.value}});
    nlohmann::json steps = nlohmann::json::array();
    for (const HistoryStep& st : s.steps)
      steps.push_back({{"point", st.point}, {"commit", st.commit}, {"before", st.before}, {"after", st.after},
                       {"ratio", st.ratio}, {"verdict", st.verdict}});
    sj["points"] = points;
    sj["steps"] = steps;
    list.push_back(sj);
  }
  j["series"] = list;
  return j.dump(1);
}

namespace {

std::string steps_text(const HistorySeries& s) {
  std::string t;
  for (const HistoryStep& st : s.steps) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s at %s (commit %d of %zu): %.4g -> %.4g (x%.3f); ", st.verdict.c_str(),
                  st.commit.substr(0, 12).c_str(), st.point + 1, s.points.size(), st.before, st.after, st.ratio);
    t += buf;
  }
  return t.empty() ? "no step" : t.substr(0, t.size() - 2);
}

}  // namespace

std::string history_junit(const History& h, const HistoryOptions& o) {
  std::vector<JUnitCase> cases;
  for (const HistorySeries& s : h.series) {
    JUnitCase k;
    k.classname = "dtnn.history." + h.metric;
    k.name = s.name;
    k.system_out = std::to_string(s.points.size()) + " commits (" + s.order + " order); " + steps_text(s);
    if (s.newest_regressed) {
      const HistoryStep& st = s.steps.back();
      char buf[200];
      std::snprintf(buf, sizeof buf, "%s fell to x%.3f of the segment before at %s (threshold %.0f %%)",
                    h.metric.c_str(), st.ratio, st.commit.substr(0, 12).c_str(), 100.0 * o.threshold);
      k.failure_type = "regression";
      k.failure_message = buf;
      k.failure_text = k.system_out;
    }
    cases.push_back(k);
  }
  return junit_xml("dtnn history", cases);
}

std::string history_markdown(const History& h, const HistoryOptions& o) {
  std::vector<std::vector<std::string>> rows;
  for (const HistorySeries& s : h.series) {
    char newest[64];
    std::snprintf(newest, sizeof newest, "%.4g", s.points.back().value);
    rows.push_back({s.name, std::to_string(s.points.size()), newest, steps_text(s),
                    s.newest_regressed ? "**regressed**" : "ok"});
  }
  std::string md = "## dtnn history (" + h.metric + "): " + std::to_string(h.regressed_series) + " of " +
                   std::to_string(h.series.size()) + " series regressed at their newest step\n\n";
  md += markdown_table({"trial", "commits", "newest", "steps", "verdict"}, rows);
  md += "\nSteps: a piecewise-constant L1 fit with a penalty per segment (asv's method); a regression is a step down "
        "by more than " + std::to_string(static_cast<int>(std::lround(100.0 * o.threshold))) + " %.\n";
  return md;
}

}  // namespace dtnn
