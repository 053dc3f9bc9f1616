// `dtnn ingest` of Google Benchmark JSON stored by name: suites/bench_gemm's real output, a bench_layers file,
// and another project's suite with repetitions, aggregates, a user counter, items per second, a case skipped
// with an error and a microsecond time unit -- each value checked against the file by hand; a malformed file
// stores nothing.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cli_helpers.h"
#include "experiments/ingest_helpers.h"
#include "results/store.h"
#include "skip.h"

using dtnn::test::one;

namespace {

struct Dir : dtnn::test::Dir {
  Dir() : dtnn::test::Dir("ingest_named") {}
};

}  // namespace

TEST_CASE("ingest: suites/bench_gemm's JSON is stored by name with its FLOP/s", "[ingest]") {
  if (std::string(DTNN_BENCH_GEMM).empty()) DTNN_SKIP("this build has no suites/bench_gemm (DTNN_BUILD_SUITES=OFF)");
  Dir d;
  const std::string cmd = std::string(DTNN_BENCH_GEMM) + " --benchmark_filter='BM_sgemm_fc/64/128/1568' "
                          "--benchmark_min_time=0.001 --benchmark_repetitions=3 --benchmark_out=" + (d / "gemm.json") +
                          " --benchmark_out_format=json > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto c = dtnn::test::run_dtnn("ingest " + (d / "gemm.json") + " --db " + (d / "g.db"));
  REQUIRE(c.status == 0);
  CHECK_THAT(c.out, Catch::Contains("1 row(s) (0 skipped with an error) from bench_gemm"));
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "g.db");
  CHECK(one(s, "SELECT source || ' ' || name || ' ' || repetitions FROM named_benchmarks") ==
        "bench_gemm BM_sgemm_fc/64/128/1568/0/0/real_time 3");
  // FLOP/s is 2 m n k per iteration over real time: 2 * 64 * 128 * 1568 / (real ms / 1e3), within the spread
  // of 3 repetitions (the file's median counter and median time come from the same repetitions).
  const double ms = std::stod(one(s, "SELECT real_time_ms FROM named_benchmarks"));
  const double flops = std::stod(one(s, "SELECT json_extract(counters, '$.\"FLOP/s\"') FROM named_benchmarks"));
  CHECK(flops == Approx(2.0 * 64 * 128 * 1568 / (ms * 1e-3)).epsilon(0.02));
  CHECK(one(s, "SELECT real_min_ms <= real_time_ms AND real_time_ms <= real_max_ms FROM named_benchmarks") == "1");
  CHECK(one(s, "SELECT real_stddev_ms IS NOT NULL AND iterations IS NULL FROM named_benchmarks") == "1");
  const auto q = dtnn::test::run_dtnn("query benchmarks --db " + (d / "g.db"));
  CHECK_THAT(q.out, Catch::Contains("bench_gemm") && Catch::Contains("(1 row)"));
}

TEST_CASE("ingest: another project's Google Benchmark JSON, value by value", "[ingest]") {
  Dir d;
  // Three repetitions of BM_Parse (us), its mean/median/stddev/cv aggregates, a user counter and items/s; a
  // case skipped with an error; a single run of BM_Hash (ns) with bytes/s. Written as Google Benchmark 1.7 does.
  std::ofstream(d / "foreign.json") << R"({
  "context": {"executable": "/opt/other/parser_bench", "num_cpus": 8, "library_build_type": "release"},
  "benchmarks": [
    {"name": "BM_Parse/64", "run_name": "BM_Parse/64", "run_type": "iteration", "repetitions": 3, "repetition_index": 0,
     "threads": 2, "iterations": 100, "real_time": 12.0, "cpu_time": 11.0, "time_unit": "us", "items_per_second": 5.0e6, "tokens": 40},
    {"name": "BM_Parse/64", "run_name": "BM_Parse/64", "run_type": "iteration", "repetitions": 3, "repetition_index": 1,
     "threads": 2, "iterations": 100, "real_time": 10.0, "cpu_time": 9.5, "time_unit": "us", "items_per_second": 6.0e6, "tokens": 44},
    {"name": "BM_Parse/64", "run_name": "BM_Parse/64", "run_type": "iteration", "repetitions": 3, "repetition_index": 2,
     "threads": 2, "iterations": 100, "real_time": 15.0, "cpu_time": 14.0, "time_unit": "us", "items_per_second": 4.0e6, "tokens": 38},
    {"name": "BM_Parse/64_mean", "run_name": "BM_Parse/64", "run_type": "aggregate", "repetitions": 3, "threads": 2,
     "aggregate_name": "mean", "aggregate_unit": "time", "iterations": 3, "real_time": 12.33, "cpu_time": 11.5, "time_unit": "us"},
    {"name": "BM_Parse/64_median", "run_name": "BM_Parse/64", "run_type": "aggregate", "repetitions": 3, "threads": 2,
     "aggregate_name": "median", "aggregate_unit": "time", "iterations": 3, "real_time": 12.0, "cpu_time": 11.0,
     "time_unit": "us", "items_per_second": 5.0e6, "tokens": 40},
    {"name": "BM_Parse/64_stddev", "run_name": "BM_Parse/64", "run_type": "aggregate", "repetitions": 3, "threads": 2,
     "aggregate_name": "stddev", "aggregate_unit": "time", "iterations": 3, "real_time": 2.52, "cpu_time": 2.29, "time_unit": "us"},
    {"name": "BM_Parse/64_cv", "run_name": "BM_Parse/64", "run_type": "aggregate", "repetitions": 3, "threads": 2,
     "aggregate_name": "cv", "aggregate_unit": "percentage", "iterations": 3, "real_time": 0.2, "cpu_time": 0.2, "time_unit": "us"},
    {"name": "BM_Broken", "run_name": "BM_Broken", "run_type": "iteration", "repetitions": 1, "threads": 1,
     "error_occurred": true, "error_message": "no input file", "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns"},
    {"name": "BM_Hash", "run_name": "BM_Hash", "run_type": "iteration", "repetitions": 1, "threads": 1,
     "iterations": 1000000, "real_time": 250.0, "cpu_time": 249.0, "time_unit": "ns", "bytes_per_second": 4.0e9}
  ]})";
  const auto c = dtnn::test::run_dtnn("ingest " + (d / "foreign.json") + " --db " + (d / "f.db"));
  REQUIRE(c.status == 0);
  CHECK_THAT(c.out, Catch::Contains("3 row(s) (1 skipped with an error) from google_benchmark"));
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "f.db");
  auto row = [&](const std::string& name, const std::string& cols) {
    return one(s, "SELECT " + cols + " FROM named_benchmarks WHERE name = '" + name + "'");
  };
  // BM_Parse: the median aggregate 12 us = 0.012 ms; min 10 and max 15 us from the repetitions; stddev 2.52 us;
  // threads 2; the user counter at the file's median; no single iteration count.
  CHECK(row("BM_Parse/64", "source || ' ' || executable || ' ' || threads || ' ' || repetitions") ==
        "google_benchmark /opt/other/parser_bench 2 3");
  CHECK(row("BM_Parse/64", "real_time_ms || ' ' || cpu_time_ms || ' ' || real_min_ms || ' ' || real_max_ms || ' ' || "
                           "real_stddev_ms || ' ' || items_per_s") == "0.012 0.011 0.01 0.015 0.00252 5000000.0");
  CHECK(row("BM_Parse/64", "counters || ' ' || (iterations IS NULL)") == "{\"tokens\":40.0} 1");
  // BM_Broken: stored with its message, untimed.
  CHECK(row("BM_Broken", "error || ' ' || (real_time_ms IS NULL)") == "no input file 1");
  // BM_Hash: one run of 250 ns = 0.00025 ms, its iterations and bytes/s.
  CHECK(row("BM_Hash", "real_time_ms || ' ' || iterations || ' ' || bytes_per_s || ' ' || (real_min_ms IS NULL)") ==
        "0.00025 1000000 4000000000.0 1");
  // bench_layers is named by its executable.
  std::ofstream(d / "layers.json") << R"({"context": {"executable": "./build/suites/bench_layers"}, "benchmarks": [
    {"name": "simplecnn/conv1/fwd/threads:1", "run_name": "simplecnn/conv1/fwd/threads:1", "run_type": "iteration",
     "threads": 1, "iterations": 10, "real_time": 0.5, "cpu_time": 0.5, "time_unit": "ms", "FLOP/s": 1e9}]})";
  const auto l = dtnn::test::run_dtnn("ingest " + (d / "layers.json") + " --db " + (d / "f.db"));
  REQUIRE(l.status == 0);
  CHECK(one(s, "SELECT source FROM named_benchmarks WHERE name LIKE 'simplecnn/%'") == "bench_layers");
}

TEST_CASE("ingest: a malformed named benchmark stores nothing and names the case", "[ingest]") {
  Dir d;
  std::ofstream(d / "neg.json") << R"({"benchmarks": [{"name": "BM_X", "real_time": -1, "cpu_time": 1, "time_unit": "ns"}]})";
  std::ofstream(d / "unit.json") << R"({"benchmarks": [{"name": "BM_Y", "real_time": 1, "cpu_time": 1, "time_unit": "fortnights"}]})";
  std::ofstream(d / "noname.json") << R"({"benchmarks": [{"real_time": 1}]})";
  for (const char* f : {"neg.json", "unit.json", "noname.json"}) {
    INFO(f);
    const auto c = dtnn::test::run_dtnn("ingest " + (d / f) + " --db " + (d / "m.db"));
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Catch::Contains(f));
  }
  CHECK_FALSE(std::ifstream(d / "m.db").good());
}

// A suite's own thread count is in its case names (bench_gemm's BM_sgemm names its arguments, bench_layers
// writes ".../threads:2"); Google Benchmark's "threads" field counts its own threads, 1 for every dtnn suite,
// and was what got stored: a 2-thread SGEMM stored as threads 1.
TEST_CASE("ingest: the thread count a case name states is the row's threads", "[ingest]") {
  if (std::string(DTNN_BENCH_GEMM).empty()) DTNN_SKIP("this build has no suites/bench_gemm (DTNN_BUILD_SUITES=OFF)");
  Dir d;
  const std::string cmd = std::string(DTNN_BENCH_GEMM) + " --benchmark_filter='BM_sgemm/m:64/|BM_sgemm/m:1024/n:1024/"
                          "k:1024/threads:2' --benchmark_min_time=0.001 --benchmark_out=" + (d / "gemm.json") +
                          " --benchmark_out_format=json > /dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto c = dtnn::test::run_dtnn("ingest " + (d / "gemm.json") + " --db " + (d / "g.db"));
  INFO(c.out << c.err);
  REQUIRE(c.status == 0);
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "g.db");
  CHECK(one(s, "SELECT group_concat(name || ' ' || threads, '; ') FROM (SELECT name, threads FROM named_benchmarks "
               "ORDER BY name)") ==
        "BM_sgemm/m:1024/n:1024/k:1024/threads:2/real_time 2; BM_sgemm/m:64/n:128/k:1568/threads:1/real_time 1");
}
