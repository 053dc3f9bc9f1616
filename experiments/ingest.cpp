#include "experiments/ingest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "conv/conv_problem.h"
#include "core/error.h"
#include "experiments/runner.h"

namespace dtnn {
namespace {

using json = nlohmann::json;

double to_ms(double value, const std::string& unit) {
  if (unit == "ns") return value * 1e-6;
  if (unit == "us") return value * 1e-3;
  if (unit == "s") return value * 1e3;
  return value;  // ms
}

// "cpu.convgemm/fwd/n64_.../threads:2" or "gpu.cudnn.fft/bwd_data/n64_...": algorithm, dir, problem, threads.
bool split_case(const std::string& name, std::string* algo, std::string* dir, std::string* problem, int* threads) {
  std::vector<std::string> parts;
  std::stringstream ss(name);
  for (std::string p; std::getline(ss, p, '/');) parts.push_back(p);
  if (parts.size() < 3) return false;
  *algo = parts[0];
  *dir = parts[1];
  *problem = parts[2];
  *threads = 0;
  for (size_t i = 3; i < parts.size(); ++i)
    if (parts[i].rfind("threads:", 0) == 0) *threads = std::stoi(parts[i].substr(8));
  return *dir == "fwd" || *dir == "bwd_data" || *dir == "bwd_filter";
}

std::vector<ConvBenchmarkRow> from_google_benchmark(const json& j, const std::string& path) {
  struct Acc {
    ConvBenchmarkRow row;
    std::vector<double> times;
    std::optional<double> median, rate;
  };
  std::map<std::string, Acc> cases;  // by run_name
  std::vector<std::string> order;
  for (const json& b : j.at("benchmarks")) {
    const std::string run_name = b.value("run_name", b.value("name", ""));
    ConvBenchmarkRow row;
    int threads = 0;
    if (!split_case(run_name, &row.algorithm, &row.direction, &row.problem, &threads))
      fail(path, ": benchmark '", run_name, "' is not a bench_conv case (<algorithm>/<dir>/<problem>)");
    try {
      ConvProblem::parse(row.problem);
    } catch (const Error& e) {
      fail(path, ": ", e.what());
    }
    auto [it, fresh] = cases.emplace(run_name, Acc{});
    Acc& a = it->second;
    if (fresh) {
      order.push_back(run_name);
      row.source = "bench_conv";
      row.file = path;
      row.device = row.algorithm.rfind("gpu.", 0) == 0 ? "gpu" : "cpu";
      row.threads = row.device == "gpu" ? 0 : std::max(threads, 1);
      a.row = row;
    }
    if (b.value("error_occurred", false)) {
      a.row.declined = b.value("error_message", "skipped");
      continue;
    }
    const std::string unit = b.value("time_unit", "ns");
    const double ms = to_ms(b.at("real_time").get<double>(), unit);
    // bench_conv's counter "FLOP/s" (Google Benchmark stores rates unscaled).
    const std::optional<double> rate =
        b.contains("FLOP/s") ? std::optional<double>(b["FLOP/s"].get<double>() * 1e-9) : std::nullopt;
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
      std::sort(a.times.begin(), a.times.end());
      const size_t n = a.times.size();
      a.row.median_ms = a.median ? *a.median : (n % 2 ? a.times[n / 2] : 0.5 * (a.times[n / 2 - 1] + a.times[n / 2]));
      a.row.min_ms = n ? a.times.front() : *a.row.median_ms;
      a.row.max_ms = n ? a.times.back() : *a.row.median_ms;
      a.row.gflops = a.rate;
    }
    rows.push_back(a.row);
  }
  return rows;
}

std::vector<ConvBenchmarkRow> from_layers(const json& j, const std::string& path) {
  std::vector<ConvBenchmarkRow> rows;
  const bool gpu = j.contains("device");
  const bool tf32 = j.value("tf32", false);
  const int threads = gpu ? 0 : j.value("threads", 1);
  for (const json& l : j.at("layers")) {
    ConvBenchmarkRow base;
    base.source = "dtnn_layers";
    base.file = path;
    base.model = j.value("model", "");
    base.layer = l.value("layer", int64_t{0});
    base.problem = l.at("problem").get<std::string>();
    base.algorithm = l.at("algorithm").get<std::string>();
    base.device = gpu ? "gpu" : "cpu";
    base.threads = threads;
    base.tf32 = tf32;
    ConvProblem p;
    try {
      p = ConvProblem::parse(base.problem);
    } catch (const Error& e) {
      fail(path, ": ", e.what());
    }
    const auto rate = [&](const std::string& dir, double ms) {
      const ConvDir d = dir == "fwd" ? ConvDir::fwd : dir == "bwd_data" ? ConvDir::bwd_data : ConvDir::bwd_filter;
      return ms > 0 ? std::optional<double>(p.flops(d) / (ms * 1e6)) : std::nullopt;
    };
    if (gpu) {  // one row per algorithm and direction
      ConvBenchmarkRow r = base;
      r.direction = l.at("direction").get<std::string>();
      if (l.contains("declined")) {
        r.declined = l["declined"].get<std::string>();
      } else {
        r.median_ms = l.at("ms").get<double>();
        r.min_ms = l.at("min_ms").get<double>();
        r.max_ms = l.at("max_ms").get<double>();
        r.gflops = rate(r.direction, *r.median_ms);
      }
      rows.push_back(r);
      continue;
    }
    for (const char* dir : {"fwd", "bwd_data", "bwd_filter"}) {  // CPU: all directions in one entry
      ConvBenchmarkRow r = base;
      r.direction = dir;
      if (l.contains("declined")) {
        r.declined = l["declined"].get<std::string>();
      } else {
        const std::string d = dir;
        r.median_ms = l.at(d + "_ms").get<double>();
        r.min_ms = l.at(d + "_min_ms").get<double>();
        r.max_ms = l.at(d + "_max_ms").get<double>();
        r.gflops = rate(d, *r.median_ms);
      }
      rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace

std::vector<ConvBenchmarkRow> read_conv_benchmarks(const std::string& path) {
  std::ifstream f(path);
  DTNN_CHECK(f.good(), path, ": cannot read");
  json j;
  try {
    j = json::parse(f);
  } catch (const json::exception& e) {
    fail(path, ": not valid JSON (", e.what(), ")");
  }
  try {
    if (j.is_object() && j.contains("benchmarks") && j["benchmarks"].is_array()) return from_google_benchmark(j, path);
    if (j.is_object() && j.contains("layers") && j["layers"].is_array() && j.contains("model")) return from_layers(j, path);
  } catch (const json::exception& e) {
    fail(path, ": missing or mistyped field (", e.what(), ")");
  }
  fail(path, ": neither Google Benchmark JSON (bench_conv) nor `dtnn layers --json` output");
}

int run_ingest(const IngestOptions& o, std::ostream& out) {
  DTNN_CHECK(!o.files.empty(), "ingest: no files given");
  std::vector<std::pair<std::string, std::vector<ConvBenchmarkRow>>> all;
  for (const std::string& f : o.files) all.emplace_back(f, read_conv_benchmarks(f));  // all parsed before any write
  ResultStore store = ResultStore::open(o.db_path);
  const int64_t env = store.add_environment(current_environment());
  std::vector<ConvBenchmarkRow> rows;
  for (const auto& [file, r] : all) rows.insert(rows.end(), r.begin(), r.end());
  store.add_conv_benchmarks(env, rows);
  for (const auto& [file, r] : all) {
    const size_t declined = std::count_if(r.begin(), r.end(), [](const ConvBenchmarkRow& x) { return !x.declined.empty(); });
    out << file << ": " << r.size() << " row(s) (" << declined << " declined) from "
        << (r.empty() ? "an empty file" : r.front().source == "bench_conv" ? "bench_conv" : "dtnn layers") << " into "
        << o.db_path << "\n";
  }
  return 0;
}

}  // namespace dtnn
