// `dtnn ingest` of suites/bench_allreduce's Google Benchmark JSON: one row of collective_benchmarks per case
// (BM_Allreduce/<bytes> or BM_Iallreduce/<bytes>, whatever Google Benchmark appends after the size). With
// --benchmark_repetitions the median aggregate is the time, the stddev aggregate the spread, and the
// repetitions give min and max; without, the one run is the time. Ranks, transport and MPI library come from
// the file's context (bench_allreduce writes them; a counter "ranks" stands in for the context's). A case
// that is not of that form, has a non-positive or non-finite time, an unknown time unit, a "bytes" counter
// that is not its size, or was skipped with an error (bench_allreduce never skips) is an error naming the
// file and the case.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

// True when a Google Benchmark JSON document is bench_allreduce's: its context says
// dtnn_suite = bench_allreduce, or its first case is a BM_Allreduce/ or BM_Iallreduce/ one.
bool is_collective_benchmark_json(const nlohmann::json& j);

// Its rows (throws dtnn::Error naming `path` and the case when they cannot be understood).
std::vector<CollectiveBenchmarkRow> read_collective_benchmarks(const nlohmann::json& j, const std::string& path);

}  // namespace dtnn
