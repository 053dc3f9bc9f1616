// `dtnn ingest` of suites/bench_allreduce's JSON, on files written here by hand in Google Benchmark's
// documented JSON format (docs/user_guide.md, "Output Formats"; run_type/aggregate_name as 1.7 writes them
// with --benchmark_repetitions), not by bench_allreduce itself: the rows and their arithmetic, the read-only
// `dtnn query collectives`, a conv and a collective file in one call, the same file twice, and bad files
// refused in one line with nothing stored. The real suite under mpirun is tests/parallel/test_bench_allreduce.sh.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli_helpers.h"
#include "experiments/ingest_helpers.h"
#include "results/store.h"

namespace {

namespace fs = std::filesystem;

using dtnn::test::one;

// A scratch directory for one test.
struct Dir : dtnn::test::Dir {
  Dir() : dtnn::test::Dir("ingest_collectives") {}
};

// A context as bench_allreduce writes it (AddCustomContext values are strings) after Google Benchmark's own.
std::string context(const std::string& ranks = R"("2")", const std::string& transport = "btl=self,tcp") {
  return R"("context": {"date": "2026-11-24T03:00:00+00:00", "host_name": "vm", "executable": "bench_allreduce", )"
         R"("num_cpus": 2, "mhz_per_cpu": 2300, "cpu_scaling_enabled": false, "caches": [], )"
         R"("load_avg": [0.1, 0.2, 0.3], "library_build_type": "release", "dtnn_suite": "bench_allreduce", )"
         R"("mpi_library": "Open MPI v4.1.4, package: Debian OpenMPI", "mpi_transport": ")" +
         transport + R"(", "mpi_version": "3.1", "nodes": "1", "ranks": )" + ranks + "}";
}

// One benchmark entry. `type` "iteration" or an aggregate name (mean, median, stddev, cv).
std::string entry(const std::string& run_name, const std::string& type, double real_time, const std::string& unit,
                  double bytes, double ranks = 2, int repetitions = 3) {
  const bool agg = type != "iteration";
  return "{\"name\": \"" + run_name + (agg ? "_" + type : "") + "\", \"family_index\": 0, " +
         "\"per_family_instance_index\": 0, \"run_name\": \"" + run_name + "\", \"run_type\": \"" +
         (agg ? "aggregate" : "iteration") + "\", \"repetitions\": " + std::to_string(repetitions) + ", " +
         (agg ? "\"aggregate_name\": \"" + type + "\", \"aggregate_unit\": \"" +
                    (type == "cv" ? "percentage" : "time") + "\", "
              : "\"repetition_index\": 0, ") +
         "\"threads\": 1, \"iterations\": 10, \"real_time\": " + std::to_string(real_time) +
         ", \"cpu_time\": 9000.0, \"time_unit\": \"" + unit + "\", \"bytes\": " + std::to_string(bytes) +
         ", \"ranks\": " + std::to_string(ranks) + ", \"ops_per_batch\": 2000, \"bytes_per_second\": 1.0e9, " +
         "\"bus_bytes_per_second\": 1.0e9}";
}

std::string file(const Dir& d, const std::string& name, const std::string& ctx,
                 const std::vector<std::string>& entries) {
  std::string list;
  for (const std::string& e : entries) list += (list.empty() ? "" : ",\n") + e;
  std::ofstream(d / name) << "{" << ctx << ",\n\"benchmarks\": [\n" << list << "\n]}\n";
  return d / name;
}

const std::string kAll = "BM_Allreduce/4096/iterations:10/manual_time";
const std::string kIall = "BM_Iallreduce/1048576/iterations:10/manual_time";

}  // namespace

TEST_CASE("ingest: bench_allreduce JSON lands in collective_benchmarks", "[ingest]") {
  Dir d;
  // BM_Allreduce/4096 with 3 repetitions (us): runs 3, 2, 5, GB's aggregates (its median 3 and stddev 1.5275).
  // BM_Iallreduce/1 MiB: one run (ms).
  const std::string two = file(d, "two.json", context(),
                               {entry(kAll, "iteration", 3.0, "us", 4096), entry(kAll, "iteration", 2.0, "us", 4096),
                                entry(kAll, "iteration", 5.0, "us", 4096), entry(kAll, "mean", 3.3333, "us", 4096),
                                entry(kAll, "median", 3.0, "us", 4096), entry(kAll, "stddev", 1.5275, "us", 0, 0),
                                entry(kAll, "cv", 0.458, "us", 0, 0),
                                entry(kIall, "iteration", 0.5, "ms", 1048576, 2, 1)});
  // 4 ranks over the default transport: the bus bandwidth is 2(4-1)/4 = 1.5 × the algorithm bandwidth.
  const std::string four =
      file(d, "four.json", context(R"("4")", "default"), {entry(kAll, "iteration", 8.0, "us", 4096, 4, 1)});
  const auto c = dtnn::test::run_dtnn("ingest " + two + " " + four + " --db " + (d / "t.db"));
  INFO(c.out << c.err);
  REQUIRE(c.status == 0);
  CHECK_THAT(c.out, Catch::Contains("two.json: 2 row(s) from bench_allreduce into"));
  CHECK_THAT(c.out, Catch::Contains("four.json: 1 row(s) from bench_allreduce into"));

  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  CHECK(one(s, "SELECT count(*) FROM collective_benchmarks") == "3");
  CHECK(one(s, "SELECT op || ' ' || ranks || ' ' || transport || ' ' || repetitions || ' ' || (time_s * 1e6) || ' ' || "
               "(time_min_s * 1e6) || ' ' || (time_max_s * 1e6) || ' ' || round(time_stddev_s * 1e6, 4) || ' ' || "
               "round(bytes_per_s) || ' ' || round(bus_bytes_per_s) FROM collective_benchmarks "
               "WHERE bytes = 4096 AND ranks = 2") ==
        "allreduce 2 btl=self,tcp 3 3.0 2.0 5.0 1.5275 1365333333.0 1365333333.0");  // 4096 B / 3 us
  CHECK(one(s, "SELECT op || ' ' || repetitions || ' ' || (time_s * 1e3) || ' ' || coalesce(time_min_s, 'NULL') || "
               "' ' || coalesce(time_stddev_s, 'NULL') || ' ' || round(bytes_per_s) FROM collective_benchmarks "
               "WHERE bytes = 1048576") == "iallreduce 1 0.5 NULL NULL 2097152000.0");
  CHECK(one(s, "SELECT transport || ' ' || round(bytes_per_s) || ' ' || round(bus_bytes_per_s) FROM "
               "collective_benchmarks WHERE ranks = 4") == "default 512000000.0 768000000.0");
  CHECK(one(s, "SELECT count(*) FROM collective_benchmarks WHERE mpi_library LIKE 'Open MPI v4.1.4%' AND "
               "environment_id = (SELECT max(id) FROM environments) AND file LIKE '%.json'") == "3");

  // The store's read-only query path shows the table (named view and plain SQL).
  const auto q = dtnn::test::run_dtnn("query collectives --format csv --db " + (d / "t.db"));
  INFO(q.err);
  REQUIRE(q.status == 0);
  CHECK_THAT(q.out, Catch::StartsWith("id,environment_id,op,bytes,ranks,transport,repetitions,time_us,min_us,max_us"));
  CHECK_THAT(q.out, Catch::Contains(",allreduce,4096,2,\"btl=self,tcp\",3,3.0,2.0,5.0,"));  // CSV quotes the comma
  const auto sql = dtnn::test::run_dtnn("query \"SELECT sum(bytes) FROM collective_benchmarks\" --format csv --db " +
                                        (d / "t.db"));
  CHECK(sql.out == "sum(bytes)\n1056768\n");
}

TEST_CASE("ingest: a conv file and a collective file in one call, and the same file twice", "[ingest]") {
  Dir d;
  const std::string coll = file(d, "c.json", context(), {entry(kAll, "iteration", 3.0, "us", 4096)});
  std::ofstream(d / "conv.json")
      << R"({"benchmarks": [{"name": "cpu.im2row_gemm/fwd/)"
      << R"(n4_c8h10w10_k16r3s3_st1x1_pd1x1_dl1x1_g1_nhwc_f32/threads:1",)"
      << R"( "run_type": "iteration", "real_time": 0.25, "time_unit": "ms", "FLOP/s": 9.2e9}]})";
  const auto c = dtnn::test::run_dtnn("ingest " + (d / "conv.json") + " " + coll + " --db " + (d / "t.db"));
  INFO(c.out << c.err);
  REQUIRE(c.status == 0);
  CHECK_THAT(c.out, Catch::Contains("conv.json: 1 row(s) (0 declined) from bench_conv"));
  const auto again = dtnn::test::run_dtnn("ingest " + (d.path / "." / "c.json").string() + " --db " + (d / "t.db"));
  REQUIRE(again.status == 0);
  CHECK_THAT(again.out, Catch::Contains("1 row(s) from bench_allreduce") &&
                            Catch::Contains("1 of them already stored (skipped)"));
  const dtnn::ResultStore s = dtnn::ResultStore::open_read_only(d / "t.db");
  CHECK(one(s, "SELECT count(*) FROM collective_benchmarks") == "1");
  CHECK(one(s, "SELECT count(*) FROM conv_benchmarks") == "1");
}

TEST_CASE("ingest: bad bench_allreduce files are refused in one line naming the file, nothing stored", "[ingest]") {
  Dir d;
  const std::string good = file(d, "good.json", context(), {entry(kAll, "iteration", 3.0, "us", 4096)});
  const std::string skipped_case = R"({"name": ")" + kAll + R"(", "run_name": ")" + kAll +
                                   R"(", "run_type": "iteration", "error_occurred": true, "error_message": "boom"})";
  const struct {
    std::string file, message;
  } cases[] = {
      {file(d, "name.json", context(),
            {entry(kAll, "iteration", 3, "us", 4096), entry("BM_Bcast/64", "iteration", 3, "us", 64)}),
       "benchmark 'BM_Bcast/64' is not a bench_allreduce case"},
      {file(d, "bytes.json", context(), {entry("BM_Allreduce/4k", "iteration", 3, "us", 4096)}),
       "bytes '4k' is not a positive integer"},
      {file(d, "zero.json", context(), {entry(kAll, "iteration", 0, "us", 4096)}), "real_time must be positive"},
      {file(d, "neg.json", context(), {entry(kAll, "iteration", -2, "us", 4096)}), "real_time must be positive"},
      {file(d, "unit.json", context(), {entry(kAll, "iteration", 3, "fortnights", 4096)}),
       "unknown time_unit 'fortnights'"},
      {file(d, "size.json", context(), {entry(kAll, "iteration", 3, "us", 8192)}),
       "counter bytes (8192) is not the case's size (4096)"},
      {file(d, "ranks.json", context(R"("two")"), {entry(kAll, "iteration", 3, "us", 4096)}),
       "context ranks 'two' is not a positive integer"},
      {file(d, "mismatch.json", context(R"("4")"), {entry(kAll, "iteration", 3, "us", 4096, 2)}),
       "counter ranks (2) is not 4"},
      {file(d, "skipped.json", context(), {skipped_case}), "skipped with error 'boom'"},
      {file(d, "type.json", context(), {R"({"name": ")" + kAll + R"(", "real_time": "fast"})"}),
       "missing or mistyped field"},
  };
  for (const auto& c : cases) {
    INFO(c.file);
    const auto r = dtnn::test::run_dtnn("ingest " + good + " " + c.file + " --db " + (d / "t.db"));
    CHECK(dtnn::test::one_line_error(r));
    CHECK_THAT(r.err, Catch::StartsWith("dtnn: " + c.file) && Catch::Contains(c.message));
  }
  // Without a context (not bench_allreduce's own file) the case names still say what it is, but the rank
  // count must come from somewhere: a counter.
  std::ofstream(d / "noranks.json") << R"({"benchmarks": [{"name": ")" << kAll
                                    << R"(", "run_type": "iteration", "real_time": 3, "time_unit": "us"}]})";
  const auto r = dtnn::test::run_dtnn("ingest " + (d / "noranks.json") + " --db " + (d / "t.db"));
  CHECK(dtnn::test::one_line_error(r));
  CHECK_THAT(r.err, Catch::Contains("no rank count"));
  CHECK(!fs::exists(d / "t.db"));  // every call failed whole: not even the good file was stored
}

// The migration that adds collective_benchmarks (6; the version before it is opened here).
TEST_CASE("store: a version-5 database gains collective_benchmarks and keeps its conv rows", "[store]") {
  Dir d;
  {
    dtnn::ResultStore v4 = dtnn::ResultStore::open_at_version(d / "v4.db", 5);
    REQUIRE(v4.version() == 5);
    CHECK_THROWS(v4.query("SELECT count(*) FROM collective_benchmarks"));
    v4.exec("INSERT INTO environments (host, cpu_model, cores, gpu, compiler, blas, onednn, mpi, cuda, build_type,"
            " dtnn_version, git_commit, git_dirty, env_vars) VALUES ('h','c',2,'none','g','b','o','m','c','R','0',"
            " 'c0ffee',0,'{}');"
            "INSERT INTO conv_benchmarks (environment_id, source, file, model, problem, algorithm, direction, device,"
            " threads, tf32, median_ms) VALUES (1, 'bench_conv', 'b.json', '', 'p', 'cpu.convgemm', 'fwd', 'cpu', 1, 0,"
            " 0.5);");
  }
  dtnn::ResultStore latest = dtnn::ResultStore::open(d / "v4.db");
  CHECK(latest.version() == dtnn::ResultStore::latest_version());
  CHECK(one(latest, "SELECT count(*) FROM conv_benchmarks") == "1");
  const dtnn::CollectiveBenchmarkRow row{"a.json", "allreduce", 4096, 2, "default", "Open MPI v4.1.4", 1, 3e-6,
                                         std::nullopt, std::nullopt, std::nullopt, 4096 / 3e-6, 4096 / 3e-6};
  CHECK(latest.add_benchmarks(1, {}, {row}).collectives == std::vector<bool>{true});
  CHECK(one(latest, "SELECT op || ' ' || bytes || ' ' || ranks FROM collective_benchmarks") == "allreduce 4096 2");
  // The table's CHECKs: only the two operations, positive sizes and rank counts.
  dtnn::CollectiveBenchmarkRow bad = row;
  bad.op = "bcast";
  CHECK_THROWS(latest.add_benchmarks(1, {}, {bad}));
  bad = row;
  bad.bytes = 0;
  CHECK_THROWS(latest.add_benchmarks(1, {}, {bad}));
  CHECK(one(latest, "SELECT count(*) FROM collective_benchmarks") == "1");  // each refused call stored nothing
}
