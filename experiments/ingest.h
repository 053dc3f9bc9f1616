// `dtnn ingest FILE...`: convolution benchmark results into the results store (table conv_benchmarks,
// view v_best_conv), so `dtnn query` compares algorithms per problem across runs, machines and commits, MPI
// collective benchmarks into collective_benchmarks (for a latency/bandwidth model of the reduction), and every
// other Google Benchmark result by name into named_benchmarks.
//
// Five formats, recognised by their content:
//   - Google Benchmark JSON of suites/bench_allreduce (its context or its case names say so; the reader is
//     results/ingest_collectives.h);
//   - Google Benchmark JSON of suites/bench_conv (`bench_conv --benchmark_format=json` or
//     `--benchmark_out=F`): cases "<algorithm>/<dir>/<problem>[/threads:T]"; with repetitions, the median
//     aggregate is the time and the repetitions give min and max; cases skipped with an error (a declined
//     problem, no GPU) are stored with their reason;
//   - any other Google Benchmark JSON -- suites/bench_gemm and suites/bench_layers (named by the executable in
//     the file's context) and other projects' suites -- stored by benchmark name in named_benchmarks
//     (results/ingest_named.h);
//   - `dtnn layers --json` output, CPU (per algorithm: fwd/bwd_data/bwd_filter medians, min and max) or
//     GPU (per algorithm and direction);
//   - experiments/contention_ceiling.sh's dtnn.contention_ceiling/1 file (results/ingest_ceiling.h), into
//     contention_ceilings, which `dtnn predict` reads.
// Every row of one call goes in one transaction with this machine's environment (ingest where the
// benchmark ran). A file that is unreadable (or a directory), not JSON or in none of the formats is an error
// naming it, and nothing of that call is stored; so is a case or layer with a negative time, rate or thread
// count, an unknown time_unit or direction, or an algorithm this build does not register (a build without
// CUDA registers no GPU algorithm and accepts any "gpu.<name>"). Rows already stored for this environment
// (the same file ingested again) are skipped and counted in the file's line.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

struct IngestOptions {
  std::vector<std::string> files;
  std::string db_path = "results/dtnn.db";
};

// The rows one file holds, of one table (throws dtnn::Error naming the file when it cannot be read or understood).
struct IngestFile {
  std::string format;  // bench_conv | dtnn layers | bench_allreduce | bench_gemm | bench_layers | google_benchmark
                       // | contention_ceiling
  std::vector<ConvBenchmarkRow> conv;
  std::vector<CollectiveBenchmarkRow> collectives;
  std::vector<NamedBenchmarkRow> named;
  std::vector<ContentionCeilingRow> ceilings;
};
IngestFile read_benchmark_file(const std::string& path);

// Returns the exit code (0). Prints one line per file: rows read, their format and how many were skipped.
int run_ingest(const IngestOptions& options, std::ostream& out);

}  // namespace dtnn
