// Reading bench_allreduce's Google Benchmark JSON. See ingest_collectives.h.
#include "results/ingest_collectives.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/json_int.h"
#include "core/median.h"

namespace dtnn {
namespace {

using json = nlohmann::json;

bool is_case_name(const std::string& name) {
  return name.rfind("BM_Allreduce/", 0) == 0 || name.rfind("BM_Iallreduce/", 0) == 0;
}

// Google Benchmark's time units; anything else is an error (a guessed unit would store wrong times).
double to_seconds(double value, const std::string& unit, const std::string& where) {
  if (unit == "ns") return value * 1e-9;
  if (unit == "us") return value * 1e-6;
  if (unit == "ms") return value * 1e-3;
  if (unit == "s") return value;
  fail(where, ": unknown time_unit '", unit, "' (ns, us, ms or s)");
}

// "BM_Allreduce/4096/iterations:10/manual_time" -> {"allreduce", 4096}.
std::pair<std::string, int64_t> split_case(const std::string& name, const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(name);
  for (std::string p; std::getline(ss, p, '/');) parts.push_back(p);
  if (parts.size() < 2 || (parts[0] != "BM_Allreduce" && parts[0] != "BM_Iallreduce"))
    fail(path, ": benchmark '", name,
         "' is not a bench_allreduce case (BM_Allreduce/<bytes> or BM_Iallreduce/<bytes>)");
  int64_t bytes = 0;
  const std::string& b = parts[1];
  const auto r = std::from_chars(b.data(), b.data() + b.size(), bytes);
  if (b.empty() || r.ec != std::errc() || r.ptr != b.data() + b.size() || bytes <= 0)
    fail(path, ": benchmark '", name, "': bytes '", b, "' is not a positive integer");
  return {parts[0] == "BM_Allreduce" ? "allreduce" : "iallreduce", bytes};
}

// A context value bench_allreduce writes as a string (AddCustomContext); a number is taken too.
std::optional<std::string> context_text(const json& j, const char* key) {
  if (!j.contains("context") || !j["context"].is_object() || !j["context"].contains(key)) return std::nullopt;
  const json& v = j["context"][key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  return std::nullopt;
}

// A rank count: a positive integer, as text (the context) or a number (the counter).
int rank_count(double v, const std::string& where) {
  if (!(v >= 1) || v > 1 << 30 || v != std::floor(v)) fail(where, ": ranks '", v, "' is not a positive integer");
  return static_cast<int>(v);
}

struct Acc {
  CollectiveBenchmarkRow row;
  std::vector<double> runs;
  std::optional<double> median, stddev;
  int64_t repetitions_field = 0;
};

}  // namespace

bool is_collective_benchmark_json(const json& j) {
  if (context_text(j, "dtnn_suite") == std::optional<std::string>("bench_allreduce")) return true;
  if (!j.is_object() || !j.contains("benchmarks") || !j["benchmarks"].is_array() || j["benchmarks"].empty())
    return false;
  const json& b = j["benchmarks"][0];
  return b.is_object() && b.contains("name") && b["name"].is_string() && is_case_name(b["name"].get<std::string>());
}

std::vector<CollectiveBenchmarkRow> read_collective_benchmarks(const json& j, const std::string& path) {
  std::optional<int> context_ranks;
  if (const auto r = context_text(j, "ranks")) {
    char* end = nullptr;
    const double v = std::strtod(r->c_str(), &end);
    if (end == r->c_str() || *end != '\0') fail(path, ": context ranks '", *r, "' is not a positive integer");
    context_ranks = rank_count(v, path + ": context");
  }
  const std::string transport = context_text(j, "mpi_transport").value_or("unknown");
  const std::string library = context_text(j, "mpi_library").value_or("");
  std::map<std::string, Acc> cases;  // by run_name
  std::vector<std::string> order;
  for (const json& b : j.at("benchmarks")) {
    const std::string run_name = b.value("run_name", b.value("name", ""));
    const std::string where = path + ": benchmark '" + run_name + "'";
    const auto [op, bytes] = split_case(run_name, path);
    auto [it, fresh] = cases.emplace(run_name, Acc{});
    Acc& a = it->second;
    if (fresh) {
      order.push_back(run_name);
      a.row.file = path;
      a.row.op = op;
      a.row.bytes = bytes;
      a.row.transport = transport;
      a.row.mpi_library = library;
      a.row.ranks = context_ranks.value_or(0);
    }
    if (b.value("error_occurred", false))
      fail(where, ": skipped with error '", b.value("error_message", ""), "' (bench_allreduce never skips a case)");
    const double t = to_seconds(b.at("real_time").get<double>(), b.value("time_unit", "ns"), where);
    const bool aggregate = b.value("run_type", "iteration") == "aggregate";
    const std::string aggregate_name = aggregate ? b.value("aggregate_name", "") : "";
    if (aggregate_name == "stddev") {  // a spread: zero is fine, negative or not finite is not
      if (!(t >= 0) || !std::isfinite(t)) fail(where, ": bad stddev real_time (", t, ")");
      a.stddev = t;
      continue;
    }
    if (aggregate && aggregate_name != "median") continue;  // mean, cv, or a user-defined statistic
    if (!(t > 0) || !std::isfinite(t)) fail(where, ": real_time must be positive and finite (", t, " s)");
    // The counters of a run (and of its median) are the case's own: the size and the job's ranks.
    if (b.contains("bytes") && b["bytes"].get<double>() != static_cast<double>(bytes))
      fail(where, ": counter bytes (", b["bytes"].get<double>(), ") is not the case's size (", bytes, ")");
    if (b.contains("ranks")) {
      const int r = rank_count(b["ranks"].get<double>(), where);
      if (a.row.ranks != 0 && r != a.row.ranks) fail(where, ": counter ranks (", r, ") is not ", a.row.ranks);
      a.row.ranks = r;
    }
    if (aggregate) {
      a.median = t;
      try {
        a.repetitions_field = json_int_or(b, "repetitions", 0);
      } catch (const Error& e) {
        fail(where, ": ", e.what());
      }
    } else {
      a.runs.push_back(t);
    }
  }
  std::vector<CollectiveBenchmarkRow> rows;
  for (const std::string& name : order) {
    Acc& a = cases[name];
    CollectiveBenchmarkRow& r = a.row;
    if (a.runs.empty() && !a.median) fail(path, ": benchmark '", name, "' has no run and no median");
    if (r.ranks == 0) fail(path, ": benchmark '", name, "': no rank count (context or counter 'ranks')");
    // Google Benchmark's own median aggregate when it wrote one (repetitions), else ours of the runs.
    r.time_s = a.median ? *a.median : median(a.runs);
    r.repetitions = !a.runs.empty() ? static_cast<int>(a.runs.size())
                                    : static_cast<int>(std::max<int64_t>(a.repetitions_field, 1));
    if (a.runs.size() >= 2) {
      r.time_min_s = *std::min_element(a.runs.begin(), a.runs.end());
      r.time_max_s = *std::max_element(a.runs.begin(), a.runs.end());
      if (!a.stddev) {  // as Google Benchmark's aggregate: the sample standard deviation
        double mean = 0, ss = 0;
        for (double x : a.runs) mean += x / static_cast<double>(a.runs.size());
        for (double x : a.runs) ss += (x - mean) * (x - mean);
        a.stddev = std::sqrt(ss / static_cast<double>(a.runs.size() - 1));
      }
    }
    r.time_stddev_s = a.stddev;
    r.bytes_per_s = static_cast<double>(r.bytes) / r.time_s;
    r.bus_bytes_per_s = r.bytes_per_s * 2.0 * (r.ranks - 1) / r.ranks;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace dtnn
