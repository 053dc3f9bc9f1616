// See targets.h.
#include "analysis/targets.h"

#include <cmath>
#include <set>
#include <toml++/toml.h>

#include "core/error.h"
#include "core/file_io.h"
#include "core/toml_file.h"
#include "core/strings.h"

namespace dtnn {

namespace {

std::string where(const std::string& path, const toml::node& node) {
  return path + ":" + std::to_string(node.source().begin.line);
}

}  // namespace

// A targets file is a few hundred short tables, each two levels deep: 4 MiB is far above any.
constexpr std::size_t kMaxTargetsBytes = std::size_t{4} << 20;
constexpr TomlLimits kTargetsToml{kMaxTargetsBytes, 32, "a targets file", "a targets file needs two"};

std::vector<ResultStore::Target> load_targets(const std::string& path) {
  // read_file: a FIFO does not hang; the cap stops /dev/zero.
  const toml::table doc = parse_toml(read_file(path, kMaxTargetsBytes), path, kTargetsToml);
  for (const auto& [key, node] : doc)
    if (key.str() != "target") fail(where(path, node), ": unknown key '", key.str(), "' (expected [[target]] tables)");
  std::vector<ResultStore::Target> out;
  const toml::array* list = doc["target"].as_array();
  if (!list) fail(path, ": no [[target]] tables");
  static const std::set<std::string> kKeys = {
      "model",  "dataset",       "metric",     "target",            "tolerance", "num_epochs",     "optimizer",
      "recipe", "source",        "learning_rate", "batch_size",     "global_batch_size", "ranks", "steps_per_epoch",
      "momentum"};
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
        if (required) fail(where(path, n), ": target without '", key, "' (a target states its recipe)");
        return 0.0;
      }
      if (v->is_integer()) return static_cast<double>(**v->as_integer());
      if (v->is_floating_point()) return **v->as_floating_point();
      fail(where(path, *v), ": '", key, "' must be a number");
    };
    auto count = [&](const char* key, bool required) -> int {
      const double v = number(key, required);
      if (v < 0 || v != static_cast<int>(v)) fail(where(path, n), ": ", key, " must be an integer >= 0");
      return static_cast<int>(v);
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
    target.num_epochs = count("num_epochs", true);
    target.optimizer = text("optimizer", true);
    target.learning_rate = number("learning_rate", true);
    if (!(target.learning_rate > 0.0)) fail(where(path, n), ": learning_rate must be > 0");
    target.batch_size = count("batch_size", false);
    target.global_batch_size = count("global_batch_size", false);
    if ((target.batch_size > 0) == (target.global_batch_size > 0))
      fail(where(path, n), ": a target states either batch_size (per rank, with ranks) or global_batch_size");
    if (const toml::node* r = t->get("ranks")) {
      const toml::array* a = r->as_array();
      if (!a || a->empty()) fail(where(path, *r), ": ranks must be a non-empty array of rank counts");
      for (const toml::node& x : *a) {
        if (!x.is_integer() || **x.as_integer() < 1) fail(where(path, x), ": ranks must hold integers >= 1");
        target.ranks.push_back(static_cast<int>(**x.as_integer()));
      }
      if (target.batch_size == 0) fail(where(path, *r), ": ranks goes with batch_size (per rank)");
    } else if (target.batch_size > 0) {
      fail(where(path, n), ": a per-rank batch_size needs the rank counts it holds for (ranks = [1, 2])");
    }
    target.steps_per_epoch = count("steps_per_epoch", false);
    if (t->get("momentum")) {
      target.momentum = number("momentum", true);
      if (!(target.momentum >= 0.0 && target.momentum < 1.0)) fail(where(path, n), ": momentum must be in [0, 1)");
    }
    target.recipe = text("recipe", false);
    target.source = text("source", true);
    out.push_back(target);
  }
  return out;
}

// The columns of results/views.sql's v_run_recipes (aliased c) that run_recipe reads, in its order.
const char* const kRunRecipeColumns =
    "c.model, c.dataset, c.optimizer, c.num_epochs, c.batch_per_rank, c.ranks, c.steps_per_epoch, c.learning_rate, "
    "c.momentum, c.global_batch, c.not_from_scratch";

RunRecipe run_recipe(const std::vector<std::optional<std::string>>& row, size_t c) {
  auto s = [&](size_t i) { return row.at(c + i) ? *row.at(c + i) : std::string(); };
  auto i = [&](size_t k) { return row.at(c + k) ? std::stoi(*row.at(c + k)) : 0; };
  RunRecipe r;
  r.model = s(0);
  r.dataset = s(1);
  r.optimizer = s(2);
  r.num_epochs = i(3);
  r.batch_size = i(4);
  r.ranks = i(5);
  r.steps_per_epoch = i(6);
  r.learning_rate = row.at(c + 7) ? to_double(*row.at(c + 7), "learning_rate") : 0.0;
  r.momentum = row.at(c + 8) ? to_double(*row.at(c + 8), "momentum") : -1.0;
  r.global_batch = i(9);
  r.not_from_scratch = s(10);
  return r;
}

}  // namespace dtnn
