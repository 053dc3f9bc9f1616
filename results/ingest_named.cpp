// Reading named Google Benchmark results. See ingest_named.h.
#include "results/ingest_named.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/median.h"

namespace dtnn {
namespace {

using json = nlohmann::json;

// The fields Google Benchmark's JSON reporter writes itself; every other numeric field is a user counter.
const std::set<std::string> kStandardFields = {
    "name",       "family_index", "per_family_instance_index", "run_name", "run_type",      "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "items_per_second",
    "bytes_per_second", "label", "error_occurred", "error_message", "aggregate_name", "aggregate_unit",
    "skipped", "skip_message"};

double number(const json& b, const char* key, const std::string& where) {
  const json& v = b.at(key);
  if (!v.is_number()) fail(where, ": '", key, "' is not a number");
  const double x = v.get<double>();
  if (!(x >= 0.0) || !std::isfinite(x)) fail(where, ": negative or non-finite ", key, " (", x, ")");
  return x;
}

// The T of a "/threads:T" component of a case name (the last one), if any.
std::optional<int> threads_in_name(const std::string& name) {
  const std::string key = "/threads:";
  const size_t at = name.rfind(key);
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + key.size(), end = name.find('/', begin);
  const std::string digits = name.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  int v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size() || v < 1) return std::nullopt;
  return v;
}

// A count: a whole number up to `max` (threads and repetitions: an int; iterations: 2^53, exact in a double).
int64_t count(const json& b, const char* key, const std::string& where, double max = 2147483647.0) {
  const double x = number(b, key, where);
  if (x != std::floor(x) || x > max) fail(where, ": ", key, " (", x, ") is not a count");
  return static_cast<int64_t>(x);
}

struct Acc {
  NamedBenchmarkRow row;
  std::vector<double> real, cpu;  // ms, one per repetition
  std::map<std::string, std::vector<double>> counters;
  std::optional<double> median_real, median_cpu, stddev;
  std::map<std::string, double> median_counters;
  std::vector<double> items, bytes;
  std::optional<double> median_items, median_bytes;
};

double to_ms(double value, const std::string& unit, const std::string& where) { return benchmark_ms(value, unit, where); }

}  // namespace

double benchmark_ms(double value, const std::string& unit, const std::string& where) {
  double ms = 0.0;
  if (unit == "ns") ms = value * 1e-6;
  else if (unit == "us") ms = value * 1e-3;
  else if (unit == "ms") ms = value;
  else if (unit == "s") ms = value * 1e3;
  else fail(where, ": unknown time_unit '", unit, "' (ns, us, ms or s)");
  // 1e308 s is a finite number of seconds but no number of milliseconds: it was stored as inf.
  if (!std::isfinite(ms)) fail(where, ": time ", value, " ", unit, " is not a finite number of milliseconds");
  return ms;
}

std::string named_benchmark_source(const json& j) {
  std::string exe;
  if (j.contains("context") && j["context"].is_object() && j["context"].contains("executable") &&
      j["context"]["executable"].is_string())
    exe = std::filesystem::path(j["context"]["executable"].get<std::string>()).filename().string();
  if (exe == "bench_gemm" || exe == "bench_layers") return exe;
  return "google_benchmark";
}

std::vector<NamedBenchmarkRow> read_named_benchmarks(const json& j, const std::string& path) {
  const std::string source = named_benchmark_source(j);
  std::string executable;
  if (j.contains("context") && j["context"].is_object() && j["context"].contains("executable") &&
      j["context"]["executable"].is_string())
    executable = j["context"]["executable"].get<std::string>();
  std::map<std::string, Acc> cases;
  std::vector<std::string> order;
  for (const json& b : j.at("benchmarks")) {
    if (!b.is_object() || !b.contains("name") || !b["name"].is_string() || b["name"].get<std::string>().empty())
      fail(path, ": a benchmark without a name");
    const std::string run_name = b.contains("run_name") && b["run_name"].is_string()
                                     ? b["run_name"].get<std::string>() : b["name"].get<std::string>();
    const std::string where = path + ": benchmark '" + b["name"].get<std::string>() + "'";
    auto [it, fresh] = cases.emplace(run_name, Acc{});
    Acc& a = it->second;
    if (fresh) {
      order.push_back(run_name);
      a.row.source = source;
      a.row.file = path;
      a.row.executable = executable;
      a.row.name = run_name;
    }
    if (b.contains("threads")) a.row.threads = static_cast<int>(count(b, "threads", where));
    // Google Benchmark's "threads" counts its own threads (->Threads), 1 for every dtnn suite; the suites put
    // their thread count into the name (bench_layers, bench_gemm's BM_sgemm: ".../threads:2"): that one.
    if (const std::optional<int> t = threads_in_name(run_name)) a.row.threads = *t;
    if (b.contains("repetitions")) a.row.repetitions = std::max(1, static_cast<int>(count(b, "repetitions", where)));
    if (b.contains("label") && b["label"].is_string()) a.row.label = b["label"].get<std::string>();
    const bool errored = b.value("error_occurred", false) || b.value("skipped", false) == true;
    if (errored) {
      a.row.error = b.value("error_message", b.value("skip_message", std::string("skipped")));
      if (a.row.error.empty()) a.row.error = "skipped";
      continue;
    }
    const std::string unit = b.value("time_unit", std::string("ns"));
    const std::string run_type = b.value("run_type", std::string("iteration"));
    const std::string aggregate = b.value("aggregate_name", std::string());
    if (run_type == "aggregate") {
      if (b.value("aggregate_unit", std::string("time")) != "time") continue;  // cv: a percentage
      if (aggregate == "median") {
        a.median_real = to_ms(number(b, "real_time", where), unit, where);
        if (b.contains("cpu_time")) a.median_cpu = to_ms(number(b, "cpu_time", where), unit, where);
        for (const auto& [key, value] : b.items())
          if (!kStandardFields.count(key) && value.is_number()) a.median_counters[key] = value.get<double>();
        if (b.contains("items_per_second")) a.median_items = number(b, "items_per_second", where);
        if (b.contains("bytes_per_second")) a.median_bytes = number(b, "bytes_per_second", where);
      } else if (aggregate == "stddev") {
        a.stddev = to_ms(number(b, "real_time", where), unit, where);
      }
      continue;
    }
    a.real.push_back(to_ms(number(b, "real_time", where), unit, where));
    if (b.contains("cpu_time")) a.cpu.push_back(to_ms(number(b, "cpu_time", where), unit, where));
    if (b.contains("iterations")) a.row.iterations = count(b, "iterations", where, 9007199254740992.0);
    if (b.contains("items_per_second")) a.items.push_back(number(b, "items_per_second", where));
    if (b.contains("bytes_per_second")) a.bytes.push_back(number(b, "bytes_per_second", where));
    for (const auto& [key, value] : b.items())
      if (!kStandardFields.count(key) && value.is_number()) a.counters[key].push_back(value.get<double>());
  }
  std::vector<NamedBenchmarkRow> rows;
  for (const std::string& name : order) {
    Acc& a = cases.at(name);
    NamedBenchmarkRow& r = a.row;
    if (!r.error.empty() && a.real.empty()) {
      rows.push_back(r);
      continue;
    }
    if (a.real.empty() && !a.median_real) continue;  // only non-time aggregates: nothing to store
    r.real_time_ms = a.median_real ? *a.median_real : median(a.real);
    if (a.median_cpu) r.cpu_time_ms = a.median_cpu;
    else if (!a.cpu.empty()) r.cpu_time_ms = median(a.cpu);
    if (a.real.size() > 1) {
      r.real_min_ms = *std::min_element(a.real.begin(), a.real.end());
      r.real_max_ms = *std::max_element(a.real.begin(), a.real.end());
      r.iterations.reset();  // per repetition; the row summarises several
    }
    r.real_stddev_ms = a.stddev;
    if (a.median_items) r.items_per_s = a.median_items;
    else if (!a.items.empty()) r.items_per_s = median(a.items);
    if (a.median_bytes) r.bytes_per_s = a.median_bytes;
    else if (!a.bytes.empty()) r.bytes_per_s = median(a.bytes);
    json counters = json::object();
    for (const auto& [key, values] : a.counters) counters[key] = median(values);
    for (const auto& [key, value] : a.median_counters) counters[key] = value;  // the file's own median wins
    r.counters = counters.dump();
    r.error.clear();
    rows.push_back(r);
  }
  return rows;
}

}  // namespace dtnn
