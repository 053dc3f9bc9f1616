// The contention ceiling and step jitter a prediction applies. See predict_ceiling.h.
#include "analysis/perfmodel/predict_ceiling.h"

#include <cstdio>
#include <filesystem>
#include <optional>

#include "analysis/perfmodel/step_model.h"
#include "core/error.h"
#include "results/store.h"

namespace dtnn::perf {
namespace {

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

struct StoredRow {
  int64_t id = 0;
  int ranks = 0;
  double ceiling = 0;
  std::string dataset, measured_at;
  std::optional<double> step_jitter;
};

// The newest row per rank count of (machine, model); empty when the store has none (or no such table).
std::vector<StoredRow> stored_rows(const std::string& db, const std::string& machine_key, const std::string& model) {
  std::error_code ec;
  if (machine_key.empty() || !std::filesystem::is_regular_file(db, ec)) return {};
  const ResultStore store = ResultStore::open_read_only(db);
  if (store.query("SELECT 1 FROM sqlite_master WHERE name = 'contention_ceilings'").rows.empty()) return {};
  const QueryResult q = store.query(
      "SELECT id, ranks, ceiling, dataset, measured_at, step_jitter FROM contention_ceilings c WHERE machine_key = " +
      quoted(machine_key) + " AND model = " + quoted(model) +
      " AND id = (SELECT d.id FROM contention_ceilings d WHERE d.machine_key = c.machine_key AND d.model = c.model "
      "AND d.ranks = c.ranks ORDER BY d.measured_at DESC, d.id DESC LIMIT 1) ORDER BY ranks");
  std::vector<StoredRow> out;
  for (const auto& row : q.rows) {
    DTNN_ASSERT(row.size() == 6 && row[0] && row[1] && row[2] && row[3] && row[4]);
    out.push_back({std::stoll(*row[0]), std::stoi(*row[1]), std::stod(*row[2]), *row[3], *row[4],
                   row[5] ? std::optional<double>(std::stod(*row[5])) : std::nullopt});
  }
  return out;
}

std::string fixed(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The stored rows as a choice (this machine's platform).
CeilingChoice from_rows(const std::vector<StoredRow>& rows, const std::string& model, const std::string& db) {
  CeilingChoice c;
  std::string ids, when;
  bool jitter = false;
  for (const StoredRow& r : rows) {
    c.text += (c.text.empty() ? "" : ",") + std::to_string(r.ranks) + ":" + fixed("%.3f", r.ceiling);
    ids += (ids.empty() ? "" : ", ") + std::to_string(r.id);
    when = std::max(when, r.measured_at);
    c.stored_ids.push_back(r.id);
    if (r.step_jitter && !jitter) c.step_jitter = *r.step_jitter, jitter = true;  // rows go by rank count
  }
  c.ceiling = parse_ceiling(c.text);
  c.note = "ceiling: " + c.text + (jitter ? ", step jitter " + fixed("%.4f", c.step_jitter) : "") +
           " (stored for this machine and " + model + " in " + db + ": contention_ceilings " + ids + ", " +
           rows.front().dataset + ", measured " + when + "; --ceiling none leaves it out)";
  return c;
}

CeilingChoice stored_or_given_ceiling(const PredictCommandOptions& o, const StepProfile& profile,
                                      const Platform& platform) {
  CeilingChoice c;
  if (o.ceiling == "none") return c;
  if (!o.ceiling.empty()) {
    c.ceiling = parse_ceiling(o.ceiling);
    c.text = o.ceiling;
    c.note = "ceiling: " + o.ceiling + " (given)";
    return c;
  }
  const std::vector<StoredRow> rows = stored_rows(o.db, profile.provenance.machine_key, profile.model);
  if (rows.empty()) return c;
  if (platform.name.rfind("localhost", 0) != 0 || profile.provenance.nodes > 1) {
    c.note = "ceiling: none (" + o.db + " holds this machine's for " + profile.model + ", but " + platform.name +
             "'s nodes are other machines: give --ceiling)";
    return c;
  }
  return from_rows(rows, profile.model, o.db);
}

}  // namespace

CeilingChoice choose_ceiling(const PredictCommandOptions& o, const StepProfile& profile, const Platform& platform) {
  CeilingChoice c = stored_or_given_ceiling(o, profile, platform);
  if (o.step_jitter) {
    DTNN_CHECK(*o.step_jitter >= 0 && *o.step_jitter <= 1, "--step_jitter: expected a fraction from 0 to 1, got ",
               *o.step_jitter);
    c.step_jitter = *o.step_jitter;
    c.note += (c.note.empty() ? "" : "; ") + std::string("step jitter ") + fixed("%.4f", c.step_jitter) + " (given)";
  }
  return c;
}

}  // namespace dtnn::perf
