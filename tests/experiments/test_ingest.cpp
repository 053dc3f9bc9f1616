// `dtnn ingest` on files made by the real tools: suites/bench_conv's Google Benchmark JSON (with
// repetitions, and a case skipped because the algorithm declines the problem) and `dtnn layers --json`;
// the rows, the fastest-per-problem view, and bad files (nothing stored, one line, exit 1).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli_helpers.h"
#include "conv/conv_problem.h"
#include "ingest_helpers.h"
#include "results/store.h"
#include "skip.h"

namespace {

namespace fs = std::filesystem;

using dtnn::test::one;

// A scratch directory for one test.
struct Dir : dtnn::test::Dir {
  Dir() : dtnn::test::Dir("ingest") {}
};

}  // namespace

TEST_CASE("ingest: bench_conv and dtnn layers JSON land in conv_benchmarks", "[ingest]") {
  if (std::string(DTNN_BENCH_CONV).empty()) DTNN_SKIP("this build has no suites/bench_conv (DTNN_BUILD_SUITES=OFF)");
  Dir d;
  const std::string problem = "n4_c8h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32";
  std::ofstream(d / "shapes.txt") << problem << "  # one small layer\n";
  // im2row_gemm runs (3 repetitions: median aggregate + min/max); im2col_gemm declines NHWC (a skipped case).
  const std::string bench = std::string(DTNN_BENCH_CONV) + " --shapes=" + (d / "shapes.txt") +
                            " --benchmark_filter='im2row_gemm|im2col_gemm' --benchmark_min_time=0.005" +
                            " --benchmark_repetitions=3 --benchmark_out=" + (d / "gb.json") +
                            " --benchmark_out_format=json > /dev/null 2>&1";
  REQUIRE(std::system(bench.c_str()) == 0);
  const auto layers = dtnn::test::run_dtnn("layers --model simplecnn --batch_size 8 --samples 1 --conv_algo "
                                           "im2row_gemm,im2col_gemm --json " + (d / "layers.json"));
  REQUIRE(layers.status == 0);
  const auto ingest = dtnn::test::run_dtnn("ingest " + (d / "gb.json") + " " + (d / "layers.json") + " --db " + (d / "t.db"));
  INFO(ingest.out << ingest.err);
  REQUIRE(ingest.status == 0);
  CHECK_THAT(ingest.out, Catch::Contains("from bench_conv") && Catch::Contains("from dtnn layers"));

  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  // bench_conv: 2 algorithms x 3 directions, the im2col ones declined with im2col's reason.
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks WHERE source = 'bench_conv'") == "6");
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks WHERE source = 'bench_conv' AND algorithm = 'cpu.im2col_gemm' "
               "AND declined LIKE '%NCHW%' AND median_ms IS NULL") == "3");
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks WHERE source = 'bench_conv' AND algorithm = 'cpu.im2row_gemm' "
               "AND problem = '" + problem + "' AND threads = 1 AND min_ms <= median_ms AND median_ms <= max_ms "
               "AND abs(gflops - " + std::to_string(dtnn::ConvProblem::parse(problem).flops(dtnn::ConvDir::fwd)) +
               " / (median_ms * 1e6)) < 0.05 * gflops") == "3");  // each direction's rate: the problem's FLOPs
  // dtnn layers: simplecnn's 2 distinct conv problems x 2 algorithms x 3 directions.
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks WHERE source = 'dtnn_layers' AND model = 'simplecnn'") == "12");
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks WHERE source = 'dtnn_layers' AND declined IS NOT NULL") == "6");
  // The view keeps one fastest timed algorithm per (problem, direction): here im2row_gemm everywhere.
  CHECK(one(s, "SELECT count(*) FROM v_best_conv") == "9");
  CHECK(one(s, "SELECT count(*) FROM v_best_conv WHERE algorithm <> 'cpu.im2row_gemm'") == "0");
  CHECK(one(s, "SELECT count(DISTINCT environment_id) FROM conv_benchmarks") == "1");
}

TEST_CASE("ingest: unreadable, malformed or foreign files store nothing and fail with one line", "[ingest]") {
  Dir d;
  std::ofstream(d / "bad.json") << "{\"benchmarks\": [";
  std::ofstream(d / "other.json") << "{\"schema\": \"dtnn.run_report/1\"}";
  std::ofstream(d / "badname.json")  // bench_conv's own file: its cases must be conv cases
      << R"({"context": {"executable": "/x/bench_conv"}, "benchmarks": [{"name": "not_a_conv_case", "real_time": 1}]})";
  std::ofstream(d / "badproblem.json")
      << R"({"benchmarks": [{"name": "cpu.im2row_gemm/fwd/n4_c8_broken", "real_time": 1, "time_unit": "ms"}]})";
  std::ofstream(d / "good.json")
      << R"({"benchmarks": [{"name": "cpu.im2row_gemm/fwd/n4_c8h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32/threads:1",)"
      << R"( "run_name": "cpu.im2row_gemm/fwd/n4_c8h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32/threads:1",)"
      << R"( "run_type": "iteration", "real_time": 0.25, "time_unit": "ms", "FLOP/s": 9.2e9}]})";
  std::ofstream(d / "empty.json") << "\n";
  for (const char* f : {"missing.json", "bad.json", "other.json", "badname.json", "badproblem.json", "empty.json"}) {
    INFO(f);
    const auto c = dtnn::test::run_dtnn("ingest " + (d / "good.json") + " " + (d / f) + " --db " + (d / "t.db"));
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Catch::Contains(f));
  }
  // The good file was never stored alone either: each call is all or nothing.
  CHECK(!fs::exists(d / "t.db"));
  const auto ok = dtnn::test::run_dtnn("ingest " + (d / "good.json") + " --db " + (d / "t.db"));
  REQUIRE(ok.status == 0);
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  CHECK(one(s, "SELECT median_ms || ' ' || min_ms || ' ' || max_ms || ' ' || gflops FROM conv_benchmarks") ==
        "0.25 0.25 0.25 9.2");
}

namespace {

// A bench_conv JSON file with one case.
std::string bench_file(const Dir& d, const std::string& name, const std::string& case_name,
                       const std::string& fields = R"("real_time": 0.25, "time_unit": "ms")") {
  std::ofstream(d / name) << R"({"benchmarks": [{"name": ")" << case_name << R"(", "run_type": "iteration", )"
                          << fields << "}]}";
  return d / name;
}

const std::string kProblem = "n4_c8h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32";

}  // namespace

TEST_CASE("ingest: bad cases and layers are refused naming the file and the case", "[ingest]") {
  Dir d;
  const std::string ok_case = "cpu.im2row_gemm/fwd/" + kProblem;
  const struct {
    std::string file, message;
  } cases[] = {
      {bench_file(d, "abc.json", ok_case + "/threads:abc"), "/threads:abc': threads 'abc' is not"},
      {bench_file(d, "big.json", ok_case + "/threads:99999999999"), "threads '99999999999' is not"},
      {bench_file(d, "negthreads.json", ok_case + "/threads:-2"), "threads '-2' is not"},
      {bench_file(d, "negtime.json", ok_case, R"("real_time": -1, "time_unit": "ms")"), "negative real_time"},
      {bench_file(d, "unit.json", ok_case, R"("real_time": 1, "time_unit": "fortnights")"),
       "unknown time_unit 'fortnights'"},
      {bench_file(d, "algo.json", "whatever/fwd/" + kProblem), "unknown convolution algorithm 'whatever'"},
      {bench_file(d, "inftime.json", ok_case, R"("real_time": 1e308, "time_unit": "s")"),
       "time 1e+308 s is not a finite number of milliseconds"},
  };
  std::ofstream(d / "sideways.json") << R"({"model": "simplecnn", "device": "gpu", "layers": [{"layer": 1, )"
                                     << R"("problem": ")" << kProblem << R"(", "algorithm": "gpu.cudnn.fft", "direction": "sideways", )"
                                     << R"("ms": 1, "min_ms": 1, "max_ms": 1}]})";
  std::ofstream(d / "negms.json") << R"({"model": "simplecnn", "threads": 1, "layers": [{"layer": 1, "problem": ")"
                                  << kProblem << R"(", "algorithm": "cpu.im2row_gemm", "fwd_ms": -1, )"
                                  << R"("fwd_min_ms": 1, "fwd_max_ms": 1}]})";
  std::ofstream(d / "neglayers.json") << R"({"model": "simplecnn", "threads": -3, "layers": []})";
  // Floats where counts belong were cast (undefined behaviour: -1e300 was stored as layer -2^63), and a time
  // past the largest double in milliseconds was stored as inf.
  std::ofstream(d / "floatlayer.json") << R"({"model": "simplecnn", "threads": 1, "layers": [{"layer": -1e300, )"
                                       << R"("problem": ")" << kProblem << R"(", "algorithm": "cpu.im2row_gemm", )"
                                       << R"("fwd_ms": 1, "fwd_min_ms": 1, "fwd_max_ms": 1}]})";
  std::ofstream(d / "floatthreads.json") << R"({"model": "simplecnn", "threads": 1e300, "layers": []})";
  std::ofstream(d / "hugethreads.json") << R"({"model": "simplecnn", "threads": 10000000000, "layers": []})";
  std::ofstream(d / "cpuname.json") << R"({"model": "simplecnn", "threads": 1, "layers": [{"layer": 2, "problem": ")"
                                    << kProblem << R"(", "algorithm": "cpu.nonsense", "declined": "x"}]})";
  // Times no measurement gives: a zero median made its algorithm the fastest in `dtnn query conv`.
  const auto timed = [&](const std::string& name, const std::string& fwd) {
    std::ofstream(d / name) << R"({"model": "simplecnn", "threads": 1, "layers": [{"layer": 1, "problem": ")" << kProblem
                            << R"(", "algorithm": "cpu.im2row_gemm", )" << fwd
                            << R"(, "bwd_data_ms": 1, "bwd_data_min_ms": 1, "bwd_data_max_ms": 1, "bwd_filter_ms": 1, )"
                            << R"("bwd_filter_min_ms": 1, "bwd_filter_max_ms": 1}]})";
  };
  timed("zeroms.json", R"("fwd_ms": 0, "fwd_min_ms": 0, "fwd_max_ms": 0)");
  timed("disorder.json", R"("fwd_ms": 2, "fwd_min_ms": 10, "fwd_max_ms": 1)");
  fs::create_directories(d / "adir");
  std::vector<std::pair<std::string, std::string>> all;
  all.emplace_back(d / "zeroms.json", "layer 1 cpu.im2row_gemm fwd: a median time of 0 ms");
  all.emplace_back(d / "disorder.json", "layer 1 cpu.im2row_gemm fwd: times out of order (min 10, median 2, max 1 ms)");
  for (const auto& c : cases) all.emplace_back(c.file, c.message);
  all.emplace_back(d / "sideways.json", "layer 1 gpu.cudnn.fft: unknown direction 'sideways'");
  all.emplace_back(d / "negms.json", "layer 1 cpu.im2row_gemm: negative fwd_ms");
  all.emplace_back(d / "neglayers.json", "threads -3 is not a thread count");
  all.emplace_back(d / "hugethreads.json", "threads 10000000000 is not a thread count");  // was stored as 1410065408
  all.emplace_back(d / "floatlayer.json", "field 'layer' holds -1e+300 where a whole number");
  all.emplace_back(d / "floatthreads.json", "field 'threads' holds 1e+300 where a whole number");
  all.emplace_back(d / "cpuname.json", "layer 2 cpu.nonsense: unknown convolution algorithm 'cpu.nonsense'");
  all.emplace_back(d / "adir", "adir: is a directory, expected a JSON file");
  for (const auto& [file, message] : all) {
    INFO(file);
    const auto c = dtnn::test::run_dtnn("ingest " + file + " --db " + (d / "t.db"));
    CHECK(dtnn::test::one_line_error(c));
    CHECK_THAT(c.err, Catch::StartsWith("dtnn: " + file) && Catch::Contains(message));
  }
  CHECK(!fs::exists(d / "t.db"));
}

TEST_CASE("ingest: the same file twice stores its rows once", "[ingest]") {
  Dir d;
  const std::string file = bench_file(d, "b.json", "cpu.im2row_gemm/fwd/" + kProblem + "/threads:1");
  REQUIRE(dtnn::test::run_dtnn("ingest " + file + " --db " + (d / "t.db")).status == 0);
  const auto again = dtnn::test::run_dtnn("ingest " + file + " --db " + (d / "t.db"));
  REQUIRE(again.status == 0);
  CHECK_THAT(again.out, Catch::Contains("1 of them already stored (skipped)"));
  // Another spelling of the same file is the same rows too.
  REQUIRE(dtnn::test::run_dtnn("ingest " + (d.path / "." / "b.json").string() + " --db " + (d / "t.db")).status == 0);
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks") == "1");
}

TEST_CASE("ingest: a problem is stored as dtnn writes it, one key however it was spelled", "[ingest]") {
  Dir d;
  const std::string padded = "n04_c08h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32";
  REQUIRE(padded != kProblem);
  for (const std::string& problem : {kProblem, padded}) {
    const std::string file = bench_file(d, "b" + std::to_string(problem.size()) + ".json",
                                        "cpu.im2row_gemm/fwd/" + problem + "/threads:1");
    REQUIRE(dtnn::test::run_dtnn("ingest " + file + " --db " + (d / "t.db")).status == 0);
  }
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  CHECK(one(s, "SELECT count(DISTINCT problem) FROM conv_benchmarks") == "1");
  CHECK(one(s, "SELECT DISTINCT problem FROM conv_benchmarks") == kProblem);
}

TEST_CASE("ingest: a dtnn layers entry whose check failed is stored untimed, with the verdict", "[ingest]") {
  Dir d;
  std::ofstream(d / "wrong.json") << R"({"model": "simplecnn", "threads": 1, "layers": [{"layer": 1, "problem": ")"
                                  << kProblem << R"(", "algorithm": "cpu.im2row_gemm", )"
                                  << R"("wrong": "fwd wrong: max rel. error 1.0e-01 > tolerance 1.0e-05"}]})";
  const auto c = dtnn::test::run_dtnn("ingest " + (d / "wrong.json") + " --db " + (d / "t.db"));
  INFO(c.err);
  REQUIRE(c.status == 0);
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks WHERE declined LIKE 'fwd wrong: max rel. error%' "
               "AND median_ms IS NULL") == "3");
}

// bench_conv --allow_tf32 says so in its context: its GPU rows are stored as TF32 timings (they were stored as
// float32 ones, competing with them in v_best_conv), CPU rows and files without the flag as float32.
TEST_CASE("ingest: bench_conv's TF32 GPU cases are stored as TF32", "[ingest]") {
  Dir d;
  const auto file = [&](const std::string& name, const std::string& tf32) {
    std::ofstream(d / name) << R"({"context": {"executable": "/x/bench_conv", "allow_tf32": ")" << tf32
                            << R"("}, "benchmarks": [)"
                            << R"({"name": "gpu.cudnn.implicit_gemm/fwd/)" << kProblem
                            << R"(/manual_time", "run_type": "iteration", "real_time": 0.25, "time_unit": "ms"},)"
                            << R"({"name": "cpu.im2row_gemm/fwd/)" << kProblem
                            << R"(/threads:1", "run_type": "iteration", "real_time": 0.5, "time_unit": "ms"}]})";
    return d / name;
  };
  const auto c = dtnn::test::run_dtnn("ingest " + file("tf32.json", "true") + " " + file("f32.json", "false") +
                                      " --db " + (d / "t.db"));
  INFO(c.out << c.err);
  REQUIRE(c.status == 0);
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  CHECK(one(s, "SELECT group_concat(device || ':' || tf32, ' ') FROM (SELECT device, tf32 FROM conv_benchmarks "
               "ORDER BY device, tf32)") == "cpu:0 gpu:0 gpu:1");  // (the second file's CPU row: the same, stored once)
}
