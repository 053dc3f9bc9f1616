// Experiment matrices: parse (toml++, only here: it is heavy), validate, expand. See matrix.h.
#include "experiments/matrix.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>
#include <toml++/toml.h>

#include "analysis/compare.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "experiments/launcher.h"
#include "experiments/matrix_params.h"
#include "train/option_table.h"

namespace dtnn {
namespace {

using namespace matrix_detail;

// ---- rendering ---------------------------------------------------------------------------------------

// A TOML value as a user would recognise it in an error message.
std::string describe(const toml::node& n) {
  if (const auto* s = n.as_string()) return "\"" + s->get() + "\"";
  if (const auto* i = n.as_integer()) return std::to_string(i->get());
  if (const auto* f = n.as_floating_point()) {  // 64.0 stays "64.0": "64" would look like a valid integer
    std::string text = format_double(f->get());
    if (text.find_first_of(".einf") == std::string::npos) text += ".0";
    return text;
  }
  if (const auto* b = n.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* a = n.as_array()) return a->empty() ? "an empty list" : "a list";
  if (n.is_table()) return "a table";
  return "a date or time";
}

// A matrix name is a directory name under <db dir>/logs: [A-Za-z0-9][A-Za-z0-9_.-]* without "..", so it
// cannot reach outside that directory (no '/', not absolute, not a parent).
bool is_safe_name(const std::string& name) {
  const auto ok = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  };
  return !name.empty() && std::isalnum(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), ok) && name.find("..") == std::string::npos;
}

// ---- parsing -----------------------------------------------------------------------------------------

struct Parser {
  std::string path;

  [[noreturn]] void fail_at(const toml::source_region& where, const std::string& what) const {
    fail(path, ":", where.begin.line, ": ", what);
  }
  [[noreturn]] void fail_at(const toml::node& n, const std::string& what) const { fail_at(n.source(), what); }

  [[noreturn]] void wrong(const Spec& s, const toml::node& v, const std::string& where, bool in_list) const {
    fail_at(v, where + ": expected " + (in_list ? "a list of " : "") + expectation(s, in_list) + " (got " +
                   describe(v) + ")");
  }

  // The command-line string of parameter `s`'s value `v`; `where` names it in messages ("axis 'ranks'").
  std::string value(const Spec& s, const toml::node& v, const std::string& where, bool in_list) const {
    const std::string text = toml_text(s, v, where, in_list);
    if (!s.option) return text;
    try {
      return canonical_option_text(*s.option, text);
    } catch (const Error& e) {  // "--model: unknown model ..." -> "base 'model': unknown model ..."
      std::string why = e.what();
      const std::string prefix = "--" + s.name + ": ";
      if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
      fail_at(v, where + ": " + why);
    }
  }

  // The node's text after the TOML type check of the parameter's kind.
  std::string toml_text(const Spec& s, const toml::node& v, const std::string& where, bool in_list) const {
    switch (s.kind) {
      case Kind::integer: {
        const auto* i = v.as_integer();
        if (!i || i->get() < s.min || i->get() > s.max) wrong(s, v, where, in_list);
        return std::to_string(i->get());
      }
      case Kind::number: {
        if (const auto* i = v.as_integer()) return std::to_string(i->get());
        const auto* f = v.as_floating_point();
        if (!f || !std::isfinite(f->get())) wrong(s, v, where, in_list);
        return format_double(f->get());
      }
      case Kind::boolean: {
        const auto* b = v.as_boolean();
        if (!b) wrong(s, v, where, in_list);
        return b->get() ? "True" : "False";
      }
      case Kind::string: {
        const auto* str = v.as_string();
        if (!str) wrong(s, v, where, in_list);
        if (str->get().find_first_of("\n\r") != std::string::npos)
          fail_at(v, where + ": a value cannot hold a line break (it becomes a command-line argument)");
        // Keys are "name=value;name=value": a path "x;lr=0.1" would be another trial's key (and scaling group).
        if (str->get().find(';') != std::string::npos)
          fail_at(v, where + ": a value cannot hold ';' (it separates the parameters of a trial's key)");
        return str->get();
      }
      case Kind::choice: {
        const auto* str = v.as_string();
        if (!str) wrong(s, v, where, in_list);
        if (s.option) return str->get();
        try {
          return s.canonical(str->get());
        } catch (const Error& e) {
          fail_at(v, where + ": " + e.what());
        }
      }
    }
    wrong(s, v, where, in_list);
  }

  const Spec& spec(const std::string& name, const toml::source_region& where, const std::string& section) const {
    if (name == "report") fail_at(where, section + ": 'report' is set by the runner");
    if (name == "parallel") fail_at(where, section + ": 'parallel' is set by the runner (data when ranks > 1)");
    const Spec* s = find_spec(name);
    if (s) return *s;
    const OptionSpec* o = find_option(name);
    if (o && (o->flags & kOptPlanned))
      fail_at(where, section + ": '" + name + "' is not implemented yet (" + o->why_not + ")");
    // device is what the runner turns into --enable_gpu (or the reference's device): a second spelling could
    // only contradict it, and the run would be stored under the other device.
    if (name == "enable_gpu")
      fail_at(where, section + ": 'enable_gpu': a matrix sets device = \"gpu\" (or \"cpu\"), which the runner "
                               "passes on as --enable_gpu");
    if (o && (o->flags & kOptAlias))
      fail_at(where, section + ": '" + name + "' is PyDTNN's spelling: a matrix sets " +
                         (std::string(name) == "threads_per_process" ? "threads" : "conv_algo"));
    if (o)
      fail_at(where, section + ": '" + name + "' is a `dtnn train` option a matrix does not set (" + o->help + ")");
    fail_at(where, section + ": unknown parameter '" + name +
                       "' (not a `dtnn train` option, nor ranks, device, framework, scaling or transport)");
  }

  const toml::table& table(const toml::node& n, const std::string& what) const {
    const auto* t = n.as_table();
    if (!t) fail_at(n, "'" + what + "': expected a table (got " + describe(n) + ")");
    return *t;
  }
};

// A table's entries in the order they appear in the file (toml++ keeps tables sorted by key).
std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& t) {
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (auto&& [k, v] : t) entries.emplace_back(&k, &v);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto& x = a.first->source().begin;
    const auto& y = b.first->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  return entries;
}

std::string make_key(const std::map<std::string, std::string>& params) {
  std::string key;
  for (const auto& [name, value] : params) key += (key.empty() ? "" : ";") + name + "=" + value;
  return key;
}

struct Axis {
  std::string name;
  std::vector<std::string> values;
  std::vector<toml::source_region> where;  // per value
};

// One [[exclude]] or [[include]] table: validated (name, value) pairs in file order. An [[include]] value
// may be an array: the include is then every combination of its arrays (first key slowest), as axes.
struct Point {
  std::vector<std::pair<std::string, std::string>> values;
  std::vector<std::pair<std::string, std::vector<std::string>>> lists;  // includes: one or more values each
  toml::source_region where;
};

Point read_point(const Parser& p, const toml::node& n, const std::string& section) {
  const toml::table& t = p.table(n, section);
  Point point;
  point.where = t.source();
  const bool include = section.rfind("include", 0) == 0;
  for (auto [k, v] : in_file_order(t)) {
    const std::string name(k->str());
    const Spec& s = p.spec(name, k->source(), section);
    const std::string where = section + " '" + name + "'";
    std::vector<std::string> list;
    if (const auto* a = v->as_array(); include && a) {
      if (a->empty()) p.fail_at(*v, where + ": an empty array");
      for (const toml::node& e : *a) list.push_back(p.value(s, e, where, true));
    } else {
      list.push_back(p.value(s, *v, where, false));
    }
    point.values.emplace_back(name, list.front());
    point.lists.emplace_back(name, std::move(list));
  }
  return point;
}

// The trials' values of an include: every combination of its lists, first key slowest.
std::vector<std::vector<std::pair<std::string, std::string>>> include_combinations(const Parser& p, const Point& include) {
  std::vector<std::vector<std::pair<std::string, std::string>>> out(1);
  for (const auto& [name, list] : include.lists) {
    if (out.size() * list.size() > kMaxTrials)  // before materialising them
      p.fail_at(include.where, "an include of more than " + std::to_string(kMaxTrials) + " combinations");
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& partial : out)
      for (const std::string& value : list) {
        next.push_back(partial);
        next.back().emplace_back(name, value);
      }
    out = std::move(next);
  }
  return out;
}

std::vector<Point> read_points(const Parser& p, const toml::table& root, const char* section) {
  std::vector<Point> points;
  const toml::node* n = root.get(section);
  if (!n) return points;
  const auto* a = n->as_array();
  if (!a)
    p.fail_at(*n, std::string("'") + section + "': expected [[" + section + "]] tables (got " + describe(*n) + ")");
  for (size_t i = 0; i < a->size(); ++i)
    points.push_back(read_point(p, *a->get(i), std::string(section) + " #" + std::to_string(i + 1)));
  return points;
}

void read_launcher(const Parser& p, const toml::node& n, Matrix& m) {
  const toml::table& t = p.table(n, "launcher");
  for (auto&& [k, v] : t) {
    const std::string name(k.str());
    if (name == "kind") {
      const auto* s = v.as_string();
      if (!s || (s->get() != "mpirun" && s->get() != "srun" && s->get() != "none"))
        p.fail_at(v, "launcher 'kind': expected one of mpirun, srun, none (got " + describe(v) + ")");
      m.launcher.kind = s->get();
    } else if (name == "hostfile") {
      const auto* s = v.as_string();
      if (!s || s->get().empty())
        p.fail_at(v, "launcher 'hostfile': expected a file name (got " + describe(v) + ")");
      m.launcher.hostfile = resolve_against(matrix_directory(p.path), s->get());
    } else if (name == "args") {
      const auto* a = v.as_array();
      if (!a) p.fail_at(v, "launcher 'args': expected a list of strings (got " + describe(v) + ")");
      for (const toml::node& e : *a) {
        if (!e.is_string()) p.fail_at(e, "launcher 'args': expected a list of strings (got " + describe(e) + ")");
        m.launcher.args.push_back(e.as_string()->get());
      }
    } else {
      p.fail_at(k.source(), "launcher: unknown key '" + name + "' (known: kind, hostfile, args)");
    }
  }
  if (!m.launcher.hostfile.empty() && m.launcher.kind != "mpirun")
    p.fail_at(*t.get("hostfile"), "launcher 'hostfile': only mpirun takes a hostfile (kind is \"" +
                                      m.launcher.kind + "\")");
}

}  // namespace

// ---- Trial -----------------------------------------------------------------------------------------------

int Trial::ranks() const {
  const auto it = params.find("ranks");
  if (it != params.end()) return std::stoi(it->second);
  // nodes x ranks_per_node (each 1 when absent; each at most INT_MAX, so the product fits in int64)
  const auto n = params.find("nodes"), r = params.find("ranks_per_node");
  const int64_t nodes = n == params.end() ? 1 : std::stoi(n->second);
  const int64_t per_node = r == params.end() ? 1 : std::stoi(r->second);
  if (nodes * per_node > INT_MAX)
    fail("trial ", label.empty() ? key : label, ": nodes x ranks_per_node = ", nodes, " x ", per_node, " = ",
         nodes * per_node, " ranks, more than MPI can number");
  return static_cast<int>(nodes * per_node);
}

const std::string& Trial::framework() const {
  static const std::string fallback = "dtnn";
  const auto it = params.find("framework");
  return it == params.end() ? fallback : it->second;
}

std::string Trial::get(const std::string& name, const std::string& fallback) const {
  const auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

// ---- parse -------------------------------------------------------------------------------------------------

namespace {

// The top-level keys: name, description, repeats, repeat_seeds, timeout_s, tags, launcher.
void read_header(const Parser& p, const toml::table& root, Matrix& m) {
  const std::string& path = p.path;
  static const char* const known_keys[] = {"name", "description", "repeats", "repeat_seeds", "timeout_s", "tags",
                                           "launcher", "base", "axes", "exclude", "include"};
  for (auto&& [k, v] : root) {
    const std::string name(k.str());
    if (std::find(std::begin(known_keys), std::end(known_keys), name) == std::end(known_keys))
      p.fail_at(k.source(), "unknown key '" + name +
                                "' (known: name, description, repeats, repeat_seeds, timeout_s, tags, launcher, base, "
                                "axes, exclude, include)");
  }

  const toml::node* name = root.get("name");
  if (!name) fail(path, ": missing the required key 'name'");
  if (!name->is_string() || name->as_string()->get().empty())
    p.fail_at(*name, "'name': expected a non-empty string (got " + describe(*name) + ")");
  m.name = name->as_string()->get();
  if (!is_safe_name(m.name))
    p.fail_at(*name, "'name': expected letters, digits, '_', '.' or '-', starting with a letter or digit, "
                     "without '..' (got " + describe(*name) + "); it names the log directory");

  if (const toml::node* n = root.get("description")) {
    if (!n->is_string()) p.fail_at(*n, "'description': expected a string (got " + describe(*n) + ")");
    m.description = n->as_string()->get();
  }
  if (const toml::node* n = root.get("repeats")) {
    const auto* i = n->as_integer();
    if (!i || i->get() < 1 || i->get() > INT_MAX)
      p.fail_at(*n, "'repeats': expected a positive integer (got " + describe(*n) + ")");
    m.repeats = static_cast<int>(i->get());
  }
  if (const toml::node* n = root.get("repeat_seeds")) {
    if (!n->is_boolean()) p.fail_at(*n, "'repeat_seeds': expected true or false (got " + describe(*n) + ")");
    m.repeat_seeds = n->as_boolean()->get();
  }
  if (const toml::node* n = root.get("timeout_s")) {
    double t = 0.0;
    if (const auto* i = n->as_integer()) t = static_cast<double>(i->get());
    if (const auto* f = n->as_floating_point()) t = f->get();
    // At most 1e7 s (116 days): 1e300 overflowed the runner's clock arithmetic.
    if (!(t > 0.0) || !(t <= 1e7))
      p.fail_at(*n, "'timeout_s': expected a positive number of seconds up to 1e7 (got " + describe(*n) + ")");
    m.timeout_s = t;
  }
  if (const toml::node* n = root.get("tags")) {
    const auto* a = n->as_array();
    if (!a) p.fail_at(*n, "'tags': expected a list of strings (got " + describe(*n) + ")");
    for (const toml::node& e : *a) {
      if (!e.is_string()) p.fail_at(e, "'tags': expected a list of strings (got " + describe(e) + ")");
      if (const std::string why = tag_problem(e.as_string()->get()); !why.empty()) p.fail_at(e, "'tags': " + why);
      m.tags.push_back(e.as_string()->get());
    }
  }
  if (const toml::node* n = root.get("launcher")) read_launcher(p, *n, m);

}

// [base]: parameter -> value, and the line each was set on.
struct Base {
  std::map<std::string, std::string> values;
  std::map<std::string, uint32_t> line;
};

Base read_base(const Parser& p, const toml::table& root) {
  Base b;
  if (const toml::node* n = root.get("base")) {
    for (auto&& [k, v] : p.table(*n, "base")) {
      const std::string key(k.str());
      const Spec& s = p.spec(key, k.source(), "base");
      b.values[key] = p.value(s, v, "base '" + key + "'", false);
      b.line[key] = k.source().begin.line;
    }
  }

  return b;
}

std::vector<Axis> read_axes(const Parser& p, const toml::table& root, const Base& b, Matrix& m) {
  std::vector<Axis> axes;
  if (const toml::node* n = root.get("axes")) {
    for (auto [k, v] : in_file_order(p.table(*n, "axes"))) {
      Axis axis;
      axis.name = std::string(k->str());
      const std::string where = "axis '" + axis.name + "'";
      const Spec& s = p.spec(axis.name, k->source(), "axes");
      if (b.values.count(axis.name))
        p.fail_at(k->source(), where + ": also set in [base] (line " + std::to_string(b.line.at(axis.name)) +
                                   "); a parameter is either fixed or an axis");
      const auto* a = v->as_array();
      if (!a || a->empty())
        p.fail_at(*v, where + ": expected a non-empty list of " + expectation(s, true) + " (got " + describe(*v) + ")");
      std::set<std::string> seen;  // a set: a search of the list per value was quadratic in the axis's length
      for (const toml::node& e : *a) {
        std::string value = p.value(s, e, where, true);
        if (!seen.insert(value).second) p.fail_at(e, where + ": value '" + value + "' appears twice");
        axis.values.push_back(std::move(value));
        axis.where.push_back(e.source());
      }
      m.axis_names.push_back(axis.name);
      axes.push_back(std::move(axis));
    }
  }

  return axes;
}

// The product of the axes minus the excludes, then the includes (errors: rules that match nothing, duplicate
// includes, too many trials).
void expand(const Parser& p, const Base& b, const std::vector<Axis>& axes, const std::vector<Point>& excludes,
            const std::vector<Point>& includes, Matrix& m) {
  const std::string& path = p.path;
  const auto& base = b.values;
  // Counted before anything is materialised: 10 axes of 10 values would exhaust memory first.
  uint64_t product = 1;
  std::string factors;
  for (const Axis& axis : axes) {
    product = std::min<uint64_t>(product * axis.values.size(), kMaxTrials + 1);  // sizes <= 2^32: no overflow
    factors += (factors.empty() ? "" : " x ") + std::to_string(axis.values.size());
  }
  if (product + includes.size() > kMaxTrials)
    fail(path, ": the axes expand to ", product > kMaxTrials ? "more than " + std::to_string(kMaxTrials) : std::to_string(product),
         " trials (", factors, ") plus ", includes.size(), " includes: a matrix may have at most ", kMaxTrials,
         " trials (split it, or turn axes into [[include]] points)");

  // Cartesian product, first axis slowest: an odometer over the axis indices.
  std::vector<size_t> index(axes.size(), 0);
  std::vector<int> exclude_hits(excludes.size(), 0);
  for (;;) {
    Trial t;
    t.params = base;
    for (size_t a = 0; a < axes.size(); ++a) {
      const std::string& value = axes[a].values[index[a]];
      t.params[axes[a].name] = value;
      t.label += (a ? ";" : "") + axes[a].name + "=" + value;
    }
    bool excluded = false;
    for (size_t r = 0; r < excludes.size(); ++r) {
      bool match = true;
      for (const auto& [key, value] : excludes[r].values) match = match && t.params.at(key) == value;
      if (match) {
        ++exclude_hits[r];
        excluded = true;
      }
    }
    if (!excluded) {
      t.key = make_key(t.params);
      m.trials.push_back(std::move(t));
    }
    size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  for (size_t r = 0; r < excludes.size(); ++r)
    if (exclude_hits[r] == 0) p.fail_at(excludes[r].where, "exclude #" + std::to_string(r + 1) + " matches no trial");

  for (size_t i = 0; i < includes.size(); ++i)
    if (includes[i].values.empty())  // it would be [base] alone: one more trial, or a duplicate of one
      p.fail_at(includes[i].where, "include #" + std::to_string(i + 1) + ": empty (name the parameters it sets)");
  for (size_t i = 0; i < includes.size(); ++i)
    for (const auto& values : include_combinations(p, includes[i])) {
      Trial t;
      t.params = base;
      for (const auto& [key, value] : values) {
        t.params[key] = value;
        t.label += (t.label.empty() ? "" : ";") + key + "=" + value;
      }
      t.key = make_key(t.params);
      for (const Trial& other : m.trials)
        if (other.key == t.key)
          p.fail_at(includes[i].where, "include #" + std::to_string(i + 1) + " duplicates trial '" +
                                           (other.label.empty() ? other.key : other.label) + "'");
      if (m.trials.size() >= kMaxTrials)
        fail(path, ": the axes and includes expand to more than ", kMaxTrials, " trials");
      m.trials.push_back(std::move(t));
    }

}

// What the whole matrix must satisfy once expanded.
void check_trials(const Parser& p, const std::vector<Axis>& axes, const Matrix& m) {
  const std::string& path = p.path;
  if (m.launcher.kind == "none")
    for (const Trial& t : m.trials)
      if (t.ranks() > 1)
        fail(path, ": launcher kind 'none' cannot start ", t.ranks(), " ranks (trial ", t.label.empty() ? t.key : t.label,
             "): use mpirun or srun, or ranks = 1");

  // Two trials of one configuration: the same parameters once the defaults written out are left out (an
  // include of ranks = 1 beside an axis trial without ranks, framework = "dtnn", threads = 0). Their keys
  // differ, so --resume and compare would keep them apart; they would run the same thing twice.
  {
    std::map<std::string, const Trial*> seen;
    for (const Trial& t : m.trials) {
      const auto [it, fresh] = seen.emplace(make_key(without_defaults(t.params)), &t);
      if (!fresh)
        fail(path, ": trials '", it->second->label.empty() ? it->second->key : it->second->label, "' and '",
             t.label.empty() ? t.key : t.label, "' are one configuration (they differ only in parameters set to "
             "their defaults): drop one, or the default value");
    }
  }
  for (const Trial& t : m.trials) check_trial_layout(path, m, t);
  for (const Trial& t : m.trials)
    if (t.get("transport", "default") != "default" && m.launcher.kind != "mpirun")
      fail(path, ": trial ", t.label.empty() ? t.key : t.label, ": transport is Open MPI's (mpirun --mca btl); launcher kind \"",
           m.launcher.kind, "\" cannot set it");
  for (const Trial& t : m.trials) {
    const std::string name = t.label.empty() ? t.key : t.label;
    if (t.get("scaling", "weak") == "strong" && t.params.count("global_batch_size"))
      fail(path, ": trial ", name, ": scaling = \"strong\" makes batch_size the global batch; do not also set "
           "global_batch_size");
    // dtnn train takes --global_batch_size over --batch_size: trials differing only in batch_size would run
    // one configuration under several names.
    if (t.params.count("global_batch_size") && t.params.count("batch_size"))
      fail(path, ": trial ", name, ": global_batch_size = ", t.params.at("global_batch_size"),
           " sets the batch per rank (global / ranks); do not also set batch_size (", t.params.at("batch_size"), ")");
    // A measured trial does not read them: axes over them would run one configuration several times.
    for (const char* predicted_only : {"platform", "predictor"})
      if (t.params.count(predicted_only) && t.get("mode", "run") != "predict")
        fail(path, ": trial ", name, ": ", predicted_only, " applies to predicted trials (mode = \"predict\"), and "
             "this one is measured");
  }

  // The axis values some trial kept: one pass over the trials (a pass per value was quadratic: an axis of
  // 100,000 values took minutes).
  std::set<std::pair<std::string, std::string>> kept_values;
  for (const Trial& t : m.trials)
    for (const Axis& axis : axes) kept_values.emplace(axis.name, t.get(axis.name));
  for (const Axis& axis : axes)
    for (size_t v = 0; v < axis.values.size(); ++v) {
      const bool kept = kept_values.count({axis.name, axis.values[v]}) > 0;
      if (!kept)
        p.fail_at(axis.where[v], "axis '" + axis.name + "' value '" + axis.values[v] +
                                     "': every trial with it is excluded");
    }
  if (m.trials.empty()) fail(path, ": the excludes leave no trial");
}

}  // namespace

Matrix parse_matrix(const std::string& text, const std::string& path) {
  const Parser p{path};
  const toml::table root = parse_toml(text, path, kMatrixToml);
  Matrix m;
  m.path = path;
  m.dir = matrix_directory(path);
  m.text = text;
  m.hash = sha256_hex(text);
  read_header(p, root, m);
  const Base base = read_base(p, root);
  const std::vector<Axis> axes = read_axes(p, root, base, m);
  const std::vector<Point> excludes = read_points(p, root, "exclude");
  const std::vector<Point> includes = read_points(p, root, "include");
  for (size_t r = 0; r < excludes.size(); ++r) {
    if (excludes[r].values.empty()) p.fail_at(excludes[r].where, "exclude #" + std::to_string(r + 1) + ": empty rule");
    for (const auto& [key, value] : excludes[r].values) {
      const bool is_axis = std::find(m.axis_names.begin(), m.axis_names.end(), key) != m.axis_names.end();
      if (!is_axis && !base.values.count(key))
        p.fail_at(excludes[r].where, "exclude #" + std::to_string(r + 1) + ": '" + key +
                                         "' is neither an axis nor set in [base]");
    }
  }

  expand(p, base, axes, excludes, includes, m);
  check_trials(p, axes, m);
  // The runner plans every run before the first starts: repeats = 2^31 - 1 would fill memory first.
  if (m.trials.size() * static_cast<uint64_t>(m.repeats) > kMaxTrials)
    fail(path, ": ", m.trials.size(), " trial(s) x repeats = ", m.repeats, " is more than the ", kMaxTrials,
         " runs a matrix may have");
  return m;
}

Matrix load_matrix(const std::string& path) {
  return parse_matrix(read_file(path, kMaxMatrixBytes), path);  // stops reading past the limit (/dev/zero)
}

}  // namespace dtnn
