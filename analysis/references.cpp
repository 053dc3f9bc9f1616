// See references.h.
#include "analysis/references.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "analysis/ci_output.h"
#include "analysis/compare.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/median.h"
#include "core/strings.h"
#include "core/toml_file.h"

namespace dtnn {

namespace {

// A references file is a few thousand short tables: 4 MiB is far above any.
constexpr std::size_t kMaxReferencesBytes = std::size_t{4} << 20;
constexpr TomlLimits kReferencesToml{kMaxReferencesBytes, 32, "a references file", "a references file needs two"};

std::string where(const std::string& path, const toml::node& node) {
  return path + ":" + std::to_string(node.source().begin.line);
}

std::string key_of(const std::string& machine, const std::string& matrix, const std::string& trial) {
  return machine + '\n' + matrix + '\n' + trial;
}

PerfReference read_reference(const toml::table& t, const toml::node& n, const std::string& path) {
  static const std::set<std::string> kKeys = {"machine", "matrix", "trial", "metric", "value", "lower",
                                              "upper",   "unit",   "runs",  "recorded"};
  for (const auto& [key, value] : t)
    if (!kKeys.count(std::string(key.str()))) fail(where(path, value), ": unknown key '", key.str(), "'");
  auto text = [&](const char* key, bool required) -> std::string {
    const toml::node* v = t.get(key);
    if (!v) {
      if (required) fail(where(path, n), ": reference without '", key, "'");
      return "";
    }
    if (!v->is_string()) fail(where(path, *v), ": '", key, "' must be a string");
    return **v->as_string();
  };
  auto number = [&](const char* key) -> std::optional<double> {
    const toml::node* v = t.get(key);
    if (!v) return std::nullopt;
    if (v->is_integer()) return static_cast<double>(**v->as_integer());
    if (v->is_floating_point() && std::isfinite(**v->as_floating_point())) return **v->as_floating_point();
    fail(where(path, *v), ": '", key, "' must be a finite number");
  };
  PerfReference r;
  r.machine = text("machine", true);
  r.matrix = text("matrix", true);
  r.trial = text("trial", true);
  r.metric = t.get("metric") ? text("metric", true) : r.metric;
  if (r.metric != "samples_per_s") fail(where(path, n), ": metric must be samples_per_s (got '", r.metric, "')");
  const std::optional<double> value = number("value"), lower = number("lower");
  if (!value || !(*value > 0)) fail(where(path, n), ": value must be a number > 0");
  if (!lower || !(*lower <= 0 && *lower > -1)) fail(where(path, n), ": lower must be a fraction in (-1, 0]");
  r.value = *value;
  r.lower = *lower;
  r.upper = number("upper");
  if (r.upper && !(*r.upper >= 0)) fail(where(path, n), ": upper must be a fraction >= 0 (or left out: no bound)");
  r.unit = t.get("unit") ? text("unit", true) : r.unit;
  const std::optional<double> runs = number("runs");
  r.runs = runs && *runs >= 0 && *runs == std::floor(*runs) && *runs < 1e9 ? static_cast<int>(*runs) : 0;
  r.recorded = text("recorded", false);
  return r;
}

// The ok runs of the selection with a throughput, grouped by machine, matrix and trial: their samples/s.
struct TrialRuns {
  std::string machine, matrix, trial, label;
  std::vector<double> values;
};

std::vector<TrialRuns> trial_runs(const ResultStore& store, const std::string& selection) {
  const std::string where_sql = selection.empty() ? "" : " AND " + selection_sql(selection);
  const QueryResult rows = store.query(
      "SELECT e.machine_key, m.name, r.trial_key, r.label, r.samples_per_s FROM runs r JOIN matrices m ON "
      "m.id = r.matrix_id JOIN environments e ON e.id = r.environment_id WHERE r.status = 'ok' AND "
      "r.samples_per_s > 0" + where_sql + " ORDER BY m.name, r.trial_key, e.machine_key, r.id");
  std::vector<TrialRuns> out;
  std::map<std::string, size_t> at;
  for (const auto& row : rows.rows) {
    const std::string key = key_of(row[0].value_or(""), row[1].value_or(""), row[2].value_or(""));
    auto [it, added] = at.emplace(key, out.size());
    if (added) out.push_back({row[0].value_or(""), row[1].value_or(""), row[2].value_or(""), row[3].value_or(""), {}});
    out[it->second].values.push_back(to_double(*row[4], "samples_per_s"));
  }
  return out;
}

std::string bounds_text(const PerfReference& r) {
  char buf[64];
  if (r.upper) std::snprintf(buf, sizeof buf, "[%+.0f%%, %+.0f%%]", 100 * r.lower, 100 * *r.upper);
  else std::snprintf(buf, sizeof buf, "[%+.0f%%, -]", 100 * r.lower);
  return buf;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::vector<PerfReference> load_references(const std::string& path) {
  const toml::table doc = parse_toml(read_file(path, kMaxReferencesBytes), path, kReferencesToml);
  for (const auto& [key, node] : doc)
    if (key.str() != "reference") fail(where(path, node), ": unknown key '", key.str(), "' (expected [[reference]] tables)");
  std::vector<PerfReference> out;
  const toml::node* list_node = doc.get("reference");
  if (!list_node) return out;  // a file with no references yet: every machine is "no reference"
  const toml::array* list = list_node->as_array();
  if (!list) fail(where(path, *list_node), ": 'reference' must be an array of tables ([[reference]])");
  std::set<std::string> seen;
  for (const toml::node& n : *list) {
    const toml::table* t = n.as_table();
    if (!t) fail(where(path, n), ": 'reference' must be an array of tables ([[reference]])");
    PerfReference r = read_reference(*t, n, path);
    if (!seen.insert(key_of(r.machine, r.matrix, r.trial)).second)
      fail(where(path, n), ": a second reference for matrix '", r.matrix, "', trial '", r.trial, "' on this machine");
    out.push_back(std::move(r));
  }
  return out;
}

PerfCounts check_references(const ResultStore& store, const std::vector<PerfReference>& refs,
                            const std::string& selection, const std::string& refs_path, std::ostream& out) {
  std::map<std::string, const PerfReference*> by_key;
  for (const PerfReference& r : refs) by_key[key_of(r.machine, r.matrix, r.trial)] = &r;
  PerfCounts counts;
  for (const TrialRuns& t : trial_runs(store, selection)) {
    PerfRow row{t.machine, t.matrix, t.trial, t.label, static_cast<int>(t.values.size()), median(t.values), {}, ""};
    const auto found = by_key.find(key_of(t.machine, t.matrix, t.trial));
    if (found == by_key.end() || t.machine.empty()) {
      row.verdict = "no reference";
      ++counts.no_reference;
    } else {
      const PerfReference& r = *found->second;
      row.reference = r;
      row.verdict = row.value < r.value * (1 + r.lower)             ? "FAIL (below)"
                    : r.upper && row.value > r.value * (1 + *r.upper) ? "FAIL (above)"
                                                                    : "pass";
      ++(row.verdict == "pass" ? counts.pass : counts.fail);
    }
    counts.rows.push_back(row);
  }
  out << "\nperformance references (" << refs_path << "): median training samples/s of each trial's ok runs\n";
  char line[1024];
  std::snprintf(line, sizeof line, "%-14s %4s %12s %12s %-14s %-13s %s\n", "matrix", "runs", "samples/s", "reference",
                "bounds", "verdict", "trial");
  out << line;
  for (const PerfRow& r : counts.rows) {
    std::snprintf(line, sizeof line, "%-14s %4d %12s %12s %-14s %-13s ", r.matrix.c_str(), r.runs,
                  fixed1(r.value).c_str(), r.reference ? fixed1(r.reference->value).c_str() : "-",
                  r.reference ? bounds_text(*r.reference).c_str() : "-", r.verdict.c_str());
    out << line << (r.label.empty() ? r.trial : r.label) << "\n";  // last and whole: trials differ at the end
  }
  out << counts.pass << " pass, " << counts.fail << " fail, " << counts.no_reference
      << " without a reference for this machine (dtnn check --record-references FILE records them)\n";
  return counts;
}

int record_references(const ResultStore& store, const std::string& selection, const std::string& path, double lower,
                      std::optional<double> upper, std::ostream& out) {
  std::vector<PerfReference> kept;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) kept = load_references(path);
  std::vector<PerfReference> fresh;
  const std::string when = utc_timestamp();
  for (const TrialRuns& t : trial_runs(store, selection)) {
    if (t.machine.empty()) continue;  // a run whose machine was never described holds for no machine
    PerfReference r;
    r.machine = t.machine, r.matrix = t.matrix, r.trial = t.trial, r.value = std::round(10 * median(t.values)) / 10;
    r.lower = lower, r.upper = upper, r.runs = static_cast<int>(t.values.size());
    r.recorded = when + " from " + store.path() + (selection.empty() ? "" : " (" + selection + ")");
    fresh.push_back(r);
  }
  if (fresh.empty()) fail(store.path(), ": no ok run with a throughput and a recorded machine to record");
  std::set<std::string> replaced;
  for (const PerfReference& r : fresh) replaced.insert(key_of(r.machine, r.matrix, r.trial));
  toml::array list;
  size_t kept_count = 0;
  for (const std::vector<PerfReference>* group : {&kept, &fresh})
    for (const PerfReference& r : *group) {
      if (group == &kept && replaced.count(key_of(r.machine, r.matrix, r.trial))) continue;
      if (group == &kept) ++kept_count;
      toml::table t{{"machine", r.machine}, {"matrix", r.matrix}, {"trial", r.trial}, {"metric", r.metric},
                    {"value", r.value}, {"lower", r.lower}, {"unit", r.unit}, {"runs", r.runs},
                    {"recorded", r.recorded}};
      if (r.upper) t.insert("upper", *r.upper);
      list.push_back(std::move(t));
    }
  std::ostringstream text;
  text << "# Performance references for dtnn check (analysis/references.h): per machine, matrix and trial, the\n"
       << "# median training samples/s and its bounds. Written by dtnn check --record-references.\n\n"
       << toml::toml_formatter{toml::table{{"reference", std::move(list)}},
                               toml::toml_formatter::default_flags | toml::format_flags::relaxed_float_precision}
       << "\n";
  write_file_atomically(path, text.str());
  out << "recorded " << fresh.size() << " reference(s) in " << path << " (bounds " << bounds_text(fresh.front())
      << "; " << kept_count << " kept from before)\n";
  return static_cast<int>(fresh.size());
}

std::string references_markdown(const PerfCounts& c, const std::string& refs_path) {
  std::vector<std::vector<std::string>> rows;
  for (const PerfRow& r : c.rows)
    rows.push_back({r.matrix, r.label.empty() ? r.trial : r.label, std::to_string(r.runs), fixed1(r.value),
                    r.reference ? fixed1(r.reference->value) : "-", r.reference ? bounds_text(*r.reference) : "-",
                    r.verdict.rfind("FAIL", 0) == 0 ? "**" + r.verdict + "**" : r.verdict});
  std::string md = "\n## Performance references: " + std::to_string(c.pass) + " pass, " + std::to_string(c.fail) +
                   " fail, " + std::to_string(c.no_reference) + " without a reference\n\n";
  md += markdown_table({"matrix", "trial", "runs", "samples/s (median)", "reference", "bounds", "verdict"}, rows);
  return md + "\nReferences per machine: `" + refs_path + "`.\n";
}

std::vector<JUnitCase> references_junit(const PerfCounts& c) {
  std::vector<JUnitCase> cases;
  for (const PerfRow& r : c.rows) {
    JUnitCase k;
    k.classname = "dtnn.check.performance." + r.matrix;
    k.name = r.label.empty() ? r.trial : r.label;
    k.system_out = "median samples/s " + fixed1(r.value) + " over " + std::to_string(r.runs) + " run(s)" +
                   (r.reference ? ", reference " + fixed1(r.reference->value) + " " + bounds_text(*r.reference) : "");
    if (!r.reference) k.skipped_message = "no reference for this machine";
    else if (r.verdict != "pass") {
      k.failure_type = "performance";
      k.failure_message = k.system_out;
      k.failure_text = "machine: " + r.machine;
    }
    cases.push_back(k);
  }
  return cases;
}

}  // namespace dtnn
