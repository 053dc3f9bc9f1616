// `dtnn check`. See check.h.
#include "analysis/check.h"

#include <cstdio>
#include <map>
#include <ostream>

#include "analysis/ci_output.h"
#include "analysis/compare.h"
#include "core/error.h"
#include "core/strings.h"

namespace dtnn {

namespace {

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// One row of v_recipe_differences: a target of the run's model and dataset, and how the run's recipe differs.
struct TargetMatch {
  std::string metric, recipe, source, differences;
  double target = 0.0, tolerance = 0.0;
};

// Why no target judged the run: the differences from the nearest target of its model and dataset (the fewest;
// the first in the file among equals).
std::string why_no_target(const std::vector<TargetMatch>& targets, const RunRecipe& run) {
  const TargetMatch* best = nullptr;
  size_t fewest = 0;
  for (const TargetMatch& t : targets) {
    size_t n = 1;
    for (size_t at = t.differences.find("; "); at != std::string::npos; at = t.differences.find("; ", at + 2)) ++n;
    if (!best || n < fewest) {
      best = &t;
      fewest = n;
    }
  }
  if (!best) return "no target for " + run.model + " on " + run.dataset;
  const std::string name = best->recipe.empty() ? "the nearest target's" : "'" + best->recipe + "':";
  return "recipe differs from " + name + " " + best->differences;
}

// Every run's targets of its model and dataset, in the file's order (the store's one rule: v_recipe_differences).
std::map<std::string, std::vector<TargetMatch>> target_matches(const ResultStore& store) {
  std::map<std::string, std::vector<TargetMatch>> by_run;
  const QueryResult rows = store.query("SELECT run_id, metric, target, tolerance, recipe, source, differences"
                                       " FROM v_recipe_differences ORDER BY run_id, target_id");
  for (const auto& row : rows.rows)
    by_run[*row[0]].push_back({*row[1], *row[4], *row[5], *row[6], to_double(*row[2], "target"), to_double(*row[3], "tolerance")});
  return by_run;
}

}  // namespace

CheckCounts check_targets(const std::string& db_path, const std::string& targets_path, const std::string& selection,
                          std::ostream& out) {
  // The targets come from the file, for this connection only: check only reads the database.
  const std::vector<ResultStore::Target> targets = load_targets(targets_path);
  const ResultStore store = ResultStore::open_read_only_with_targets(db_path, targets);
  const std::map<std::string, std::vector<TargetMatch>> matches = target_matches(store);
  const std::vector<TargetMatch> none;
  const std::string where_sql = selection.empty() ? "" : " AND " + selection_sql(selection);
  const std::string runs_sql =
      " FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = r.environment_id ";
  CheckCounts counts;
  counts.diverged = std::stoi(*store.query("SELECT count(*)" + runs_sql + "WHERE r.status = 'diverged'" + where_sql)
                                   .rows.at(0).at(0));
  const std::string diverged_note =
      std::to_string(counts.diverged) + " diverged run(s) not checked (their training loss became NaN or infinite; "
      "dtnn query runs lists them)";
  const QueryResult runs = store.query("SELECT r.id, r.framework, r.label, r.test_accuracy, r.val_accuracy, " +
                                       std::string(kRunRecipeColumns) + runs_sql +
                                       "JOIN v_run_recipes c ON c.run_id = r.id WHERE r.status = 'ok'" + where_sql +
                                       " ORDER BY r.id");
  if (runs.rows.empty()) {
    const std::string also = counts.diverged ? " (" + diverged_note + ")" : "";
    if (selection.empty()) fail(store.path(), ": no ok runs to check", also);
    fail(store.path(), ": no ok run matches --select ", selection, also);
  }
  for (const auto& run : runs.rows) {
    CheckRow base;
    base.run_id = *run[0];
    base.framework = *run[1];
    base.label = *run[2];
    base.recipe = run_recipe(run, 5);
    bool judged = false;
    const auto found = matches.find(base.run_id);
    const std::vector<TargetMatch>& mine = found == matches.end() ? none : found->second;
    for (const TargetMatch& t : mine) {
      if (!t.differences.empty()) continue;
      judged = true;
      CheckRow row = base;
      row.metric = t.metric;
      row.target = fixed2(t.target);
      row.why = t.source;
      const auto& value = t.metric == "test_accuracy" ? run[3] : run[4];
      if (!value) {
        row.value = "-";
        row.verdict = "FAIL (no value)";
        ++counts.fail;
      } else {
        const double v = to_double(*value, "accuracy");
        row.value = fixed2(v);
        row.verdict = v >= t.target - t.tolerance ? "pass" : "FAIL";
        ++(row.verdict == "pass" ? counts.pass : counts.fail);
      }
      counts.rows.push_back(row);
    }
    if (!judged) {
      CheckRow row = base;
      row.value = row.target = "-";
      row.verdict = "no target";
      row.why = why_no_target(mine, base.recipe);
      ++counts.no_target;
      counts.rows.push_back(row);
    }
  }
  char line[768];
  std::snprintf(line, sizeof line, "%6s %-8s %-10s %-14s %6s %-5s %-14s %8s %8s  %s\n", "run", "framework", "model",
                "dataset", "epochs", "opt", "metric", "value", "target", "verdict");
  out << line;
  for (const CheckRow& r : counts.rows) {
    std::snprintf(line, sizeof line, "%6s %-8s %-10s %-14s %6d %-5s %-14s %8s %8s  %s%s\n", r.run_id.c_str(),
                  r.framework.c_str(), r.recipe.model.c_str(), r.recipe.dataset.c_str(), r.recipe.num_epochs,
                  r.recipe.optimizer.c_str(), r.metric.empty() ? "-" : r.metric.c_str(), r.value.c_str(),
                  r.target.c_str(), r.verdict.c_str(), r.verdict == "no target" ? (" (" + r.why + ")").c_str() : "");
    out << line;
  }
  out << counts.pass << " pass, " << counts.fail << " fail, " << counts.no_target << " without a target (targets, "
      << "their recipes and sources: " << targets_path << ")\n";
  if (counts.diverged) out << diverged_note << "\n";
  return counts;
}

std::string check_junit(const CheckCounts& c, const std::vector<JUnitCase>& more) {
  std::vector<JUnitCase> cases;
  for (const CheckRow& r : c.rows) {
    JUnitCase k;
    k.classname = "dtnn.check." + r.recipe.model + "." + r.recipe.dataset;
    k.name = "run " + r.run_id + " " + r.framework + " " + r.label + (r.metric.empty() ? "" : " " + r.metric);
    k.system_out = "value " + r.value + ", target " + r.target + "; " + r.why;
    if (r.verdict == "no target") {
      k.skipped_message = "no target: " + r.why;
    } else if (r.verdict != "pass") {
      k.failure_type = "accuracy";
      k.failure_message = r.metric + " " + r.value + " % below the target " + r.target + " %";
      k.failure_text = k.system_out;
    }
    cases.push_back(k);
  }
  cases.insert(cases.end(), more.begin(), more.end());
  return junit_xml("dtnn check", cases);
}

std::string check_markdown(const CheckCounts& c, const std::string& targets_path) {
  std::vector<std::vector<std::string>> rows;
  for (const CheckRow& r : c.rows)
    rows.push_back({r.run_id, r.framework, r.recipe.model, r.recipe.dataset, std::to_string(r.recipe.num_epochs),
                    r.metric.empty() ? "-" : r.metric, r.value, r.target,
                    r.verdict == "pass" ? "pass" : r.verdict == "no target" ? "no target" : "**" + r.verdict + "**",
                    r.verdict == "no target" ? r.why : ""});
  std::string md = "## dtnn check: " + std::to_string(c.pass) + " pass, " + std::to_string(c.fail) + " fail, " +
                   std::to_string(c.no_target) + " without a target\n\n";
  md += markdown_table({"run", "framework", "model", "dataset", "epochs", "metric", "value", "target", "verdict", "why not judged"},
                       rows);
  md += "\nTargets, their recipes and sources: `" + targets_path + "`.";
  if (c.diverged) md += " " + std::to_string(c.diverged) + " diverged run(s) not checked.";
  return md + "\n";
}

}  // namespace dtnn
