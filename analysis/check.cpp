// `dtnn check`. See check.h.
#include "analysis/check.h"

#include <cstdio>
#include <optional>
#include <ostream>
#include <set>
#include <toml++/toml.h>

#include "analysis/compare.h"
#include "core/error.h"

namespace dtnn {

namespace {

std::string where(const std::string& path, const toml::node& node) {
  return path + ":" + std::to_string(node.source().begin.line);
}

}  // namespace

std::vector<ResultStore::Target> load_targets(const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    if (e.source().begin.line == 0) fail(path, ": cannot read the targets file");
    fail(path, ":", e.source().begin.line, ": ", e.description());
  }
  for (const auto& [key, node] : doc)
    if (key.str() != "target") fail(where(path, node), ": unknown key '", key.str(), "' (expected [[target]] tables)");
  std::vector<ResultStore::Target> out;
  const toml::array* list = doc["target"].as_array();
  if (!list) fail(path, ": no [[target]] tables");
  static const std::set<std::string> kKeys = {"model",      "dataset",   "metric", "target", "tolerance",
                                              "num_epochs", "optimizer", "recipe", "source"};
  for (const toml::node& n : *list) {
    const toml::table* t = n.as_table();
    if (!t) fail(where(path, n), ": 'target' must be an array of tables ([[target]])");
    for (const auto& [key, value] : *t)
      if (!kKeys.count(std::string(key.str()))) fail(where(path, value), ": unknown key '", key.str(), "'");
    auto text = [&](const char* key, bool required) -> std::string {
      const toml::node* v = t->get(key);
      if (!v) {
        if (required) fail(where(path, n), ": target without '", key, "'");
        return "";
      }
      if (!v->is_string()) fail(where(path, *v), ": '", key, "' must be a string");
      return **v->as_string();
    };
    auto number = [&](const char* key, bool required) -> double {
      const toml::node* v = t->get(key);
      if (!v) {
        if (required) fail(where(path, n), ": target without '", key, "'");
        return 0.0;
      }
      if (v->is_integer()) return static_cast<double>(**v->as_integer());
      if (v->is_floating_point()) return **v->as_floating_point();
      fail(where(path, *v), ": '", key, "' must be a number");
    };
    ResultStore::Target target;
    target.model = text("model", true);
    target.dataset = text("dataset", true);
    target.metric = text("metric", true);
    if (target.metric != "test_accuracy" && target.metric != "val_accuracy")
      fail(where(path, *t->get("metric")), ": metric must be test_accuracy or val_accuracy (got '", target.metric, "')");
    target.target = number("target", true);
    if (!(target.target > 0.0 && target.target <= 100.0)) fail(where(path, n), ": target must be a percentage in (0, 100]");
    target.tolerance = number("tolerance", false);
    if (target.tolerance < 0.0) fail(where(path, n), ": tolerance must be >= 0");
    const double epochs = number("num_epochs", false);
    if (epochs < 0 || epochs != static_cast<int>(epochs)) fail(where(path, n), ": num_epochs must be an integer >= 0");
    target.num_epochs = static_cast<int>(epochs);
    target.optimizer = text("optimizer", false);
    target.recipe = text("recipe", false);
    target.source = text("source", true);
    out.push_back(target);
  }
  return out;
}

namespace {

// The targets a run matches, in file order: model and dataset, and the recipe fields the target sets.
std::vector<const ResultStore::Target*> matching(const std::vector<ResultStore::Target>& targets,
                                                 const std::vector<std::optional<std::string>>& run) {
  auto s = [&](int i) { return run[i] ? *run[i] : std::string(); };
  std::vector<const ResultStore::Target*> out;
  for (const ResultStore::Target& t : targets)
    if (t.model == s(2) && t.dataset == s(3) && (t.num_epochs == 0 || std::to_string(t.num_epochs) == s(4)) &&
        (t.optimizer.empty() || t.optimizer == s(5)))
      out.push_back(&t);
  return out;
}

}  // namespace

CheckCounts check_targets(const ResultStore& store, const std::string& targets_path, const std::string& selection,
                          std::ostream& out) {
  // The targets come from the file and are matched here: check only reads the database.
  const std::vector<ResultStore::Target> targets = load_targets(targets_path);
  const std::string where_sql = selection.empty() ? "" : " AND " + selection_sql(selection);
  const std::string runs_sql =
      " FROM runs r JOIN matrices m ON m.id = r.matrix_id JOIN environments e ON e.id = r.environment_id ";
  CheckCounts counts;
  counts.diverged = std::stoi(*store.query("SELECT count(*)" + runs_sql + "WHERE r.status = 'diverged'" + where_sql)
                                   .rows.at(0).at(0));
  const std::string diverged_note =
      std::to_string(counts.diverged) + " diverged run(s) not checked (their training loss became NaN or infinite; "
      "dtnn query runs lists them)";
  const QueryResult runs = store.query(
      "SELECT r.id, r.framework, r.model, r.dataset, r.num_epochs, r.optimizer, r.test_accuracy, r.val_accuracy" +
      runs_sql + "WHERE r.status = 'ok'" + where_sql + " ORDER BY r.id");
  // One row per (run, matching target), or one without a target: run columns 0-5, then metric, value,
  // target, tolerance.
  QueryResult q;
  for (const auto& run : runs.rows) {
    const std::vector<const ResultStore::Target*> found = matching(targets, run);
    if (found.empty()) q.rows.push_back({run[0], run[1], run[2], run[3], run[4], run[5], {}, {}, {}, {}});
    for (const ResultStore::Target* t : found)
      q.rows.push_back({run[0], run[1], run[2], run[3], run[4], run[5], t->metric,
                        t->metric == "test_accuracy" ? run[6] : run[7], std::to_string(t->target),
                        std::to_string(t->tolerance)});
  }
  if (q.rows.empty()) {
    const std::string also = counts.diverged ? " (" + diverged_note + ")" : "";
    if (selection.empty()) fail(store.path(), ": no ok runs to check", also);
    fail(store.path(), ": no ok run matches --select ", selection, also);
  }
  char line[512];
  std::snprintf(line, sizeof line, "%6s %-8s %-10s %-14s %6s %-5s %-14s %8s %8s  %s\n", "run", "framework", "model",
                "dataset", "epochs", "opt", "metric", "value", "target", "verdict");
  out << line;
  for (const auto& row : q.rows) {
    auto s = [&](int i) { return row[i] ? *row[i] : std::string(); };
    std::string verdict, metric = s(6), value = "-", target = "-";
    if (!row[6]) {
      verdict = "no target";
      ++counts.no_target;
    } else {
      target = s(8);
      const double t = std::stod(s(8)), tol = std::stod(s(9));
      if (!row[7]) {
        verdict = "FAIL (no value)";
        ++counts.fail;
      } else {
        const double v = std::stod(s(7));
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f", v);
        value = buf;
        std::snprintf(buf, sizeof buf, "%.2f", t);
        target = buf;
        if (v >= t - tol) {
          verdict = "pass";
          ++counts.pass;
        } else {
          verdict = "FAIL";
          ++counts.fail;
        }
      }
    }
    std::snprintf(line, sizeof line, "%6s %-8s %-10s %-14s %6s %-5s %-14s %8s %8s  %s\n", s(0).c_str(), s(1).c_str(),
                  s(2).c_str(), s(3).c_str(), s(4).c_str(), s(5).c_str(), metric.empty() ? "-" : metric.c_str(),
                  value.c_str(), target.c_str(), verdict.c_str());
    out << line;
  }
  out << counts.pass << " pass, " << counts.fail << " fail, " << counts.no_target << " without a target (targets and "
      << "their sources: " << targets_path << ")\n";
  if (counts.diverged) out << diverged_note << "\n";
  return counts;
}

}  // namespace dtnn
