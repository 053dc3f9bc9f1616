#include "experiments/ingest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "conv/conv_algorithm.h"
#include "conv/conv_problem.h"
#include "core/error.h"
#include "core/json_parse.h"
#include "core/json_int.h"
#include "core/file_io.h"
#include "core/median.h"
#include "results/ingest_collectives.h"
#include "results/ingest_named.h"
#include "results/ingest_ceiling.h"
#include "experiments/runner.h"

namespace dtnn {
namespace {

using json = nlohmann::json;

double to_ms(double value, const std::string& unit, const std::string& where) { return benchmark_ms(value, unit, where); }

bool is_direction(const std::string& d) { return d == "fwd" || d == "bwd_data" || d == "bwd_filter"; }

// A time or rate that cannot be negative; `where` names the file and the case or layer.
double non_negative(double v, const std::string& where, const std::string& what) {
  if (v < 0) fail(where, ": negative ", what, " (", v, ")");
  if (!std::isfinite(v)) fail(where, ": ", what, " is not a finite number (", v, ")");
  return v;
}

// A timed row's times as `dtnn layers` measures them: a median above zero (no convolution takes no time;
// stored as it was, a 0 made that algorithm the fastest) between the minimum and the maximum.
void check_times(const ConvBenchmarkRow& r, const std::string& where) {
  if (!(*r.median_ms > 0)) fail(where, ": a median time of ", *r.median_ms, " ms (a timed convolution takes time)");
  if (!(*r.min_ms <= *r.median_ms && *r.median_ms <= *r.max_ms))
    fail(where, ": times out of order (min ", *r.min_ms, ", median ", *r.median_ms, ", max ", *r.max_ms, " ms)");
}

// The problem as dtnn writes it (ConvProblem::str): "n01_..." and "n1_..." are one problem, one key.
std::string canonical_problem(const std::string& text, const std::string& path) {
  try {
    return ConvProblem::parse(text).str();
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
}

// Only algorithms this build registers (the names bench_conv and `dtnn layers` write). A build without CUDA
// registers no GPU algorithm, so there a GPU name is checked by its form only: "gpu." and a lowercase name.
void check_algorithm(const std::string& algo, const std::string& where) {
  std::string known;
  for (const auto* list : {&conv_algorithms(), &gpu_conv_algorithms()})
    for (const ConvAlgorithm* a : *list) {
      if (a->name() == algo) return;
      known += (known.empty() ? "" : ", ") + std::string(a->name());
    }
  const bool gpu_form = algo.rfind("gpu.", 0) == 0 && algo.size() > 4 &&
                        algo.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_.", 4) == std::string::npos;
  if (gpu_conv_algorithms().empty() && gpu_form) return;
  fail(where, ": unknown convolution algorithm '", algo, "' (known: ", known,
       gpu_conv_algorithms().empty() ? "; GPU ones as gpu.<name>" : "", ")");
}

struct Case {
  std::string algo, dir, problem;
  int threads = 0;
};

// "cpu.convgemm/fwd/n64_.../threads:2" or "gpu.cudnn.fft/bwd_data/n64_...": algorithm, dir, problem, threads.
// Throws naming the file and the case when the name is not of that form.
Case split_case(const std::string& name, const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(name);
  for (std::string p; std::getline(ss, p, '/');) parts.push_back(p);
  if (parts.size() < 3 || !is_direction(parts[1]))
    fail(path, ": benchmark '", name, "' is not a bench_conv case (<algorithm>/<dir>/<problem>)");
  Case c{parts[0], parts[1], parts[2], 0};
  for (size_t i = 3; i < parts.size(); ++i) {
    if (parts[i].rfind("threads:", 0) != 0) continue;
    const std::string v = parts[i].substr(8);
    const auto r = std::from_chars(v.data(), v.data() + v.size(), c.threads);
    if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size() || c.threads < 0)
      fail(path, ": benchmark '", name, "': threads '", v, "' is not a non-negative integer (up to ", INT_MAX, ")");
  }
  return c;
}

std::vector<ConvBenchmarkRow> from_google_benchmark(const json& j, const std::string& path) {
  struct Acc {
    ConvBenchmarkRow row;
    std::vector<double> times;
    std::optional<double> median, rate;
  };
  std::map<std::string, Acc> cases;  // by run_name
  std::vector<std::string> order;
  // bench_conv says in its context whether its GPU cases ran TF32 math (--allow_tf32): stored per row, as
  // `dtnn conv`'s JSON is, so TF32 times never stand for float32 ones.
  const bool tf32 = j.contains("context") && j["context"].is_object() && j["context"].contains("allow_tf32") &&
                    j["context"]["allow_tf32"].is_string() && j["context"]["allow_tf32"].get<std::string>() == "true";
  for (const json& b : j.at("benchmarks")) {
    const std::string run_name = b.value("run_name", b.value("name", ""));
    const std::string where = path + ": benchmark '" + run_name + "'";
    const Case c = split_case(run_name, path);
    check_algorithm(c.algo, where);
    ConvBenchmarkRow row;
    row.algorithm = c.algo;
    row.direction = c.dir;
    row.problem = canonical_problem(c.problem, path);
    const int threads = c.threads;
    auto [it, fresh] = cases.emplace(run_name, Acc{});
    Acc& a = it->second;
    if (fresh) {
      order.push_back(run_name);
      row.source = "bench_conv";
      row.file = path;
      row.device = row.algorithm.rfind("gpu.", 0) == 0 ? "gpu" : "cpu";
      row.threads = row.device == "gpu" ? 0 : std::max(threads, 1);
      row.tf32 = row.device == "gpu" && tf32;
      a.row = row;
    }
    if (b.value("error_occurred", false)) {
      a.row.declined = b.value("error_message", "skipped");
      continue;
    }
    const std::string unit = b.value("time_unit", "ns");
    const double ms = non_negative(to_ms(b.at("real_time").get<double>(), unit, where), where, "real_time");
    // bench_conv's counter "FLOP/s" (Google Benchmark stores rates unscaled).
    const std::optional<double> rate =
        b.contains("FLOP/s") ? std::optional<double>(non_negative(b["FLOP/s"].get<double>(), where, "FLOP/s") * 1e-9)
                             : std::nullopt;
    if (b.value("run_type", "iteration") == "aggregate") {
      if (b.value("aggregate_name", "") == "median") {
        a.median = ms;
        a.rate = rate;
      }
      continue;
    }
    a.times.push_back(ms);
    if (!a.rate) a.rate = rate;
  }
  std::vector<ConvBenchmarkRow> rows;
  for (const std::string& name : order) {
    Acc& a = cases[name];
    if (a.row.declined.empty()) {
      if (a.times.empty() && !a.median) continue;
      // Google Benchmark's own median aggregate when it wrote one (repetitions), else ours of the runs.
      a.row.median_ms = a.median ? *a.median : median(a.times);
      const bool runs = !a.times.empty();
      a.row.min_ms = runs ? *std::min_element(a.times.begin(), a.times.end()) : *a.row.median_ms;
      a.row.max_ms = runs ? *std::max_element(a.times.begin(), a.times.end()) : *a.row.median_ms;
      a.row.gflops = a.rate;
    }
    rows.push_back(a.row);
  }
  return rows;
}

// Why a `dtnn layers` entry has no times: the algorithm declined the problem, or its output failed the
// check against cpu.reference ("wrong": stored as the reason, like a decline). Empty when it was timed.
std::string untimed_reason(const json& l) {
  if (l.contains("declined")) return l["declined"].get<std::string>();
  if (l.contains("wrong")) return l["wrong"].get<std::string>();
  return "";
}

std::vector<ConvBenchmarkRow> from_layers(const json& j, const std::string& path) {
  std::vector<ConvBenchmarkRow> rows;
  const bool gpu = j.contains("device");
  const bool tf32 = j.value("tf32", false);
  const auto whole = [&](const json& o, const char* key, int64_t fallback) {
    try {
      return json_int_or(o, key, fallback);
    } catch (const Error& e) {
      fail(path, ": ", e.what());
    }
  };
  const int64_t threads64 = gpu ? 0 : whole(j, "threads", 1);
  if (threads64 < 0 || threads64 > 1 << 20) fail(path, ": threads ", threads64, " is not a thread count");
  const int threads = static_cast<int>(threads64);
  for (const json& l : j.at("layers")) {
    ConvBenchmarkRow base;
    base.source = "dtnn_layers";
    base.file = path;
    base.model = j.value("model", "");
    base.layer = whole(l, "layer", 0);
    base.problem = canonical_problem(l.at("problem").get<std::string>(), path);
    base.algorithm = l.at("algorithm").get<std::string>();
    base.device = gpu ? "gpu" : "cpu";
    const std::string where = path + ": layer " + std::to_string(*base.layer) + " " + base.algorithm;
    check_algorithm(base.algorithm, where);
    if ((base.algorithm.rfind("gpu.", 0) == 0) != gpu)
      fail(where, ": a ", gpu ? "CPU" : "GPU", " algorithm in a ", gpu ? "GPU" : "CPU", " file");
    base.threads = threads;
    base.tf32 = tf32;
    const ConvProblem p = ConvProblem::parse(base.problem);
    const auto rate = [&](const std::string& dir, double ms) {
      const ConvDir d = dir == "fwd" ? ConvDir::fwd : dir == "bwd_data" ? ConvDir::bwd_data : ConvDir::bwd_filter;
      return ms > 0 ? std::optional<double>(p.flops(d) / (ms * 1e6)) : std::nullopt;
    };
    if (gpu) {  // one row per algorithm and direction
      ConvBenchmarkRow r = base;
      r.direction = l.at("direction").get<std::string>();
      if (!is_direction(r.direction))
        fail(where, ": unknown direction '", r.direction, "' (fwd, bwd_data or bwd_filter)");
      if (const std::string why = untimed_reason(l); !why.empty()) {
        r.declined = why;
      } else {
        const std::string w = where + " " + r.direction;
        r.median_ms = non_negative(l.at("ms").get<double>(), w, "ms");
        r.min_ms = non_negative(l.at("min_ms").get<double>(), w, "min_ms");
        r.max_ms = non_negative(l.at("max_ms").get<double>(), w, "max_ms");
        check_times(r, w);
        r.gflops = rate(r.direction, *r.median_ms);
      }
      rows.push_back(r);
      continue;
    }
    for (const char* dir : {"fwd", "bwd_data", "bwd_filter"}) {  // CPU: all directions in one entry
      ConvBenchmarkRow r = base;
      r.direction = dir;
      if (const std::string why = untimed_reason(l); !why.empty()) {
        r.declined = why;
      } else {
        const std::string d = dir;
        r.median_ms = non_negative(l.at(d + "_ms").get<double>(), where, d + "_ms");
        r.min_ms = non_negative(l.at(d + "_min_ms").get<double>(), where, d + "_min_ms");
        r.max_ms = non_negative(l.at(d + "_max_ms").get<double>(), where, d + "_max_ms");
        check_times(r, where + " " + d);
        r.gflops = rate(d, *r.median_ms);
      }
      rows.push_back(r);
    }
  }
  return rows;
}

// bench_conv's JSON: its executable says so, or every case is named <algorithm>/<dir>/<problem>. (A file of
// another suite whose names do not have that form is stored by name instead, ingest_named.h.)
bool is_conv_benchmark_json(const json& j) {
  if (j.contains("context") && j["context"].is_object() && j["context"].contains("executable") &&
      j["context"]["executable"].is_string() &&
      std::filesystem::path(j["context"]["executable"].get<std::string>()).filename() == "bench_conv")
    return true;
  const json& list = j["benchmarks"];
  if (list.empty()) return true;  // an empty file: nothing to store either way (said as such)
  for (const json& b : list) {
    if (!b.is_object() || !b.contains("name") || !b["name"].is_string()) return false;
    const std::string name = b.value("run_name", b["name"].get<std::string>());
    const size_t first = name.find('/'), second = first == std::string::npos ? first : name.find('/', first + 1);
    if (second == std::string::npos || !is_direction(name.substr(first + 1, second - first - 1))) return false;
  }
  return true;
}

// The whole file, or an error naming it; a directory is most likely a mistyped argument: say what was expected.
std::string read_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, ": is a directory, expected a JSON file");
  return read_file(path, kMaxJsonFileBytes);
}

}  // namespace

IngestFile read_benchmark_file(const std::string& path) {
  const std::string text = read_text(path);
  const json j = parse_json(text, path);
  IngestFile f;
  try {
    if (j.is_object() && j.contains("benchmarks") && j["benchmarks"].is_array()) {
      if (is_collective_benchmark_json(j)) {
        f.format = "bench_allreduce";
        f.collectives = read_collective_benchmarks(j, path);
      } else if (is_conv_benchmark_json(j)) {
        f.format = "bench_conv";
        f.conv = from_google_benchmark(j, path);
      } else {
        f.format = named_benchmark_source(j);
        f.named = read_named_benchmarks(j, path);
      }
      return f;
    }
    if (is_contention_ceiling_json(j)) {
      f.format = "contention_ceiling";
      f.ceilings.push_back(read_contention_ceiling(j, path));
      return f;
    }
    if (j.is_object() && j.contains("layers") && j["layers"].is_array() && j.contains("model")) {
      f.format = "dtnn layers";
      f.conv = from_layers(j, path);
      return f;
    }
  } catch (const json::exception& e) {
    fail(path, ": missing or mistyped field (", e.what(), ")");
  }
  fail(path, ": neither Google Benchmark JSON (an object with a \"benchmarks\" array), `dtnn layers --json` output nor a ",
       kContentionCeilingSchema, " file");
}

int run_ingest(const IngestOptions& o, std::ostream& out) {
  DTNN_CHECK(!o.files.empty(), "ingest: no files given");
  std::vector<std::pair<std::string, IngestFile>> all;
  for (const std::string& f : o.files) all.emplace_back(f, read_benchmark_file(f));  // all parsed before any write
  ResultStore store = ResultStore::open(o.db_path);
  const int64_t env = store.add_environment(current_environment());
  std::vector<ConvBenchmarkRow> conv;
  std::vector<CollectiveBenchmarkRow> collectives;
  std::vector<NamedBenchmarkRow> named;
  std::vector<ContentionCeilingRow> ceilings;
  for (const auto& [file, f] : all) {
    ceilings.insert(ceilings.end(), f.ceilings.begin(), f.ceilings.end());
    conv.insert(conv.end(), f.conv.begin(), f.conv.end());
    collectives.insert(collectives.end(), f.collectives.begin(), f.collectives.end());
    named.insert(named.end(), f.named.begin(), f.named.end());
  }
  const ResultStore::StoredRows stored = store.add_benchmarks(env, conv, collectives, named, ceilings);
  size_t at_conv = 0, at_coll = 0, at_named = 0, at_ceiling = 0;
  for (const auto& [file, f] : all) {
    const auto& r = f.conv;
    const size_t declined = std::count_if(r.begin(), r.end(), [](const ConvBenchmarkRow& x) { return !x.declined.empty(); });
    const size_t errored =
        std::count_if(f.named.begin(), f.named.end(), [](const NamedBenchmarkRow& x) { return !x.error.empty(); });
    const auto from_conv = stored.conv.begin() + at_conv;
    const auto from_coll = stored.collectives.begin() + at_coll;
    const auto from_named = stored.named.begin() + at_named;
    const auto from_ceiling = stored.ceilings.begin() + at_ceiling;
    const size_t skipped = std::count(from_conv, from_conv + r.size(), false) +
                           std::count(from_coll, from_coll + f.collectives.size(), false) +
                           std::count(from_named, from_named + f.named.size(), false) +
                           std::count(from_ceiling, from_ceiling + f.ceilings.size(), false);
    at_conv += r.size();
    at_coll += f.collectives.size();
    at_named += f.named.size();
    at_ceiling += f.ceilings.size();
    const size_t rows = r.size() + f.collectives.size() + f.named.size() + f.ceilings.size();
    out << file << ": " << rows << " row(s)";
    if (!r.empty() || (f.collectives.empty() && f.named.empty() && f.ceilings.empty()))
      out << " (" << declined << " declined)";
    if (!f.named.empty()) out << " (" << errored << " skipped with an error)";
    out << " from " << (rows == 0 ? "an empty file" : f.format) << " into " << o.db_path;
    if (skipped > 0) out << ", " << skipped << " of them already stored (skipped)";
    out << "\n";
  }
  return 0;
}

}  // namespace dtnn
