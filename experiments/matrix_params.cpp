// What a matrix parameter is: the option table's matrix rows and the matrix's own, paths, limits, filters.
// See matrix_params.h and matrix.h.
#include "experiments/matrix_params.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <map>
#include <vector>

#include "analysis/perfmodel/collective_model.h"
#include "core/error.h"
#include "core/strings.h"
#include "experiments/matrix.h"

namespace dtnn {
namespace matrix_detail {
namespace {

std::string one_of(const std::string& v, const std::vector<std::string>& known) {
  for (const std::string& k : known)
    if (v == k) return v;
  fail("expected one of ", join(known, ", "), " (got \"", v, "\")");
}

std::string check_device(const std::string& v) { return one_of(v, {"cpu", "gpu"}); }
std::string check_framework(const std::string& v) { return one_of(v, {"dtnn", "pytorch", "pydtnn"}); }
std::string check_scaling(const std::string& v) { return one_of(v, {"weak", "strong"}); }
std::string check_transport(const std::string& v) { return one_of(v, {"default", "shm", "tcp"}); }
std::string check_mode(const std::string& v) { return one_of(v, {"run", "predict"}); }
std::string check_predictor(const std::string& v) { return one_of(v, {"model", "simgrid"}); }
std::string check_platform(const std::string& v) {
  std::vector<std::string> names;
  for (const perf::Platform& p : perf::platform_presets()) names.push_back(p.name);
  return one_of(v, names);
}

}  // namespace

// Every `dtnn train` option a matrix may set: the option table's kOptMatrix rows, in its order (report and
// parallel are the runner's; PyDTNN's aliases and the planned options are not matrix parameters).
const std::vector<Spec>& option_specs() {
  static const std::vector<Spec> specs = [] {
    std::vector<Spec> out;
    for (const OptionSpec& o : train_option_table()) {
      if (!(o.flags & kOptMatrix)) continue;
      Spec s{o.name, Kind::string};
      switch (o.kind) {
        case OptionKind::integer: s.kind = Kind::integer, s.min = o.imin, s.max = o.imax; break;
        case OptionKind::number: s.kind = Kind::number; break;
        case OptionKind::boolean: s.kind = Kind::boolean; break;
        case OptionKind::choice: s.kind = Kind::choice; break;
        case OptionKind::text:
        case OptionKind::path: s.kind = Kind::string; break;
      }
      s.option = &o;
      out.push_back(s);
    }
    return out;
  }();
  return specs;
}

const std::vector<Spec>& matrix_specs() {
  static const std::vector<Spec> specs = {
      {"ranks", Kind::integer, 1, INT_MAX},
      // the layout on a cluster (experiments/launcher.h): srun -N nodes --ntasks-per-node ranks_per_node, or an
      // mpirun hostfile of `nodes` hosts with `ranks_per_node` slots each; ranks is their product when not given
      {"nodes", Kind::integer, 1, INT_MAX},
      {"ranks_per_node", Kind::integer, 1, INT_MAX},
      {"device", Kind::choice, 0, 0, check_device},
      {"framework", Kind::choice, 0, 0, check_framework},
      // framework "pydtnn": the PyDTNN checkout (Cython modules built: ci/setup_pydtnn.sh) its trials run,
      // relative to the matrix's folder; default $DTNN_PYDTNN
      {"pydtnn_path", Kind::string},
      // weak: batch_size per rank (PyDTNN's default); strong: batch_size is the global batch, split over the
      // ranks (the runner passes it as --global_batch_size)
      {"scaling", Kind::choice, 0, 0, check_scaling},
      // Open MPI's byte transport between ranks (mpirun --mca btl): default (Open MPI's choice), shm (self,vader:
      // shared memory), tcp (self,tcp: a network-like transport even on one node)
      {"transport", Kind::choice, 0, 0, check_transport},
      // dtnn train --tracing=True with the trace beside the run's log (<log>.trace.json, .csv, .prv/.pcf/.row), its path in
      // runs.trace_path, its phases, stragglers and one step's timeline in the store
      {"tracing", Kind::boolean},
      // run (default): the trial runs; predict: it is not run but predicted by the performance model
      // (experiments/runner_predict.h) for its ranks on its platform, calibrated from the store's measured run
      // of the same parameters (but ranks, mode, platform, predictor) with the fewest ranks, the newest
      {"mode", Kind::choice, 0, 0, check_mode},
      // a predicted trial's platform (analysis/perfmodel/collective_model.h presets; default ib100)
      {"platform", Kind::choice, 0, 0, check_platform},
      // a predicted trial's predictor: model (dtnn predict's analytic step model) or simgrid (the calibration
      // run's step replayed by suites/step_replay under SimGrid's smpirun; 'unsupported' without SimGrid)
      {"predictor", Kind::choice, 0, 0, check_predictor},
  };
  return specs;
}

const Spec* find_spec(const std::string& name) {
  for (const auto* list : {&option_specs(), &matrix_specs()})
    for (const Spec& s : *list)
      if (name == s.name) return &s;
  return nullptr;
}

// What a value of this kind is, singular ("a positive integer") or plural ("positive integers").
std::string expectation(const Spec& s, bool plural) {
  switch (s.kind) {
    case Kind::integer:
      if (s.min == 1) return plural ? "positive integers" : "a positive integer";
      if (s.min == 0) return plural ? "non-negative integers" : "a non-negative integer";
      return plural ? "integers" : "an integer";
    case Kind::number: return plural ? "numbers" : "a number";
    case Kind::boolean: return plural ? "booleans (true or false)" : "a boolean (true or false)";
    case Kind::string:
    case Kind::choice: return plural ? "strings" : "a string";
  }
  return "";
}

}  // namespace matrix_detail

using namespace matrix_detail;

// ---- paths --------------------------------------------------------------------------------------------------

std::string matrix_directory(const std::string& matrix_path) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(matrix_path).parent_path();
  return fs::absolute(dir.empty() ? fs::path(".") : dir).lexically_normal().string();
}

std::string resolve_against(const std::string& dir, const std::string& value) {
  namespace fs = std::filesystem;
  if (value.empty() || fs::path(value).is_absolute()) return value;
  return (fs::path(dir) / value).lexically_normal().string();
}

bool is_path_parameter(const std::string& name) {
  if (name == "pydtnn_path") return true;
  const OptionSpec* o = find_option(name);
  return o && o->kind == OptionKind::path;
}

std::string parameter_default(const std::string& name) {
  static const std::map<std::string, std::string> own = {
      {"ranks", "1"},          {"device", "cpu"},      {"framework", "dtnn"}, {"scaling", "weak"},
      {"transport", "default"}, {"tracing", "False"},  {"mode", "run"},       {"platform", "ib100"},
      {"predictor", "model"}};
  if (const auto it = own.find(name); it != own.end()) return it->second;
  const Spec* s = find_spec(name);
  return s && s->option ? option_default_text(*s->option) : "";
}

std::map<std::string, std::string> without_defaults(const std::map<std::string, std::string>& params) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : params) {
    const std::string d = parameter_default(name);
    if (d.empty() || value != d) out.emplace(name, value);
  }
  return out;
}

std::vector<Trial> filter_trials(const std::vector<Trial>& trials, const std::vector<std::string>& filters) {
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const std::string& f : filters) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) fail("filter '", f, "': expected name=value");
    std::string name = f.substr(0, eq), value = f.substr(eq + 1);
    const Spec* s = find_spec(name);
    if (!s) fail("filter '", f, "': unknown parameter '", name, "'");
    if (s->option && s->kind != Kind::boolean && s->option->kind != OptionKind::path) {  // the trials' form
      try {
        value = canonical_option_text(*s->option, value);
      } catch (const Error&) {  // not a valid value: it matches no trial, which the runner says
      }
    } else if (s->canonical) {
      try {
        value = s->canonical(value);
      } catch (const Error&) {
      }
    }
    if (s->kind == Kind::boolean) {  // trials store True/False; accept the spellings the CLI accepts
      std::string low = value;
      for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (low == "true" || low == "1") value = "True";
      else if (low == "false" || low == "0") value = "False";
      else fail("filter '", f, "': ", name, " is a boolean (True or False)");
    }
    wanted.emplace_back(std::move(name), std::move(value));
  }
  // Filters on different names must all hold; several values of one name mean any of them
  // (--only ranks=1 --only ranks=2).
  std::vector<Trial> kept;
  for (const Trial& t : trials) {
    bool match = true;
    for (const auto& [name, value] : wanted) {
      // ranks is also nodes x ranks_per_node (Trial::ranks()); another absent parameter has its default.
      const auto have_of = [&t](const std::string& n) {
        return n == "ranks" ? std::to_string(t.ranks()) : t.get(n, parameter_default(n));
      };
      bool any = false;
      for (const auto& [other, v] : wanted) any = any || (other == name && have_of(name) == v);
      match = match && any;
    }
    if (match) kept.push_back(t);
  }
  return kept;
}

const std::vector<std::string>& matrix_option_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Spec& s : option_specs()) out.push_back(s.name);
    return out;
  }();
  return names;
}

}  // namespace dtnn
