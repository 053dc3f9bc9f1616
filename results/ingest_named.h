// Reading Google Benchmark JSON that is neither bench_conv's nor bench_allreduce's: suites/bench_gemm,
// suites/bench_layers, and any other project's suite, stored by name (results/store.h NamedBenchmarkRow).
//
// One row per run_name: with repetitions, the time is the median aggregate when the file has it (else the
// median of the repetitions), min and max come from the repetitions and the stddev from its aggregate; without,
// the single run. User counters (every numeric field Google Benchmark does not define itself, e.g. "FLOP/s")
// are kept as the median over repetitions. A case skipped with an error is stored with its message and no
// times. Malformed content (a negative time or count, an unknown time unit, a benchmark without a name) is an
// error naming the file and the case.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "results/store.h"

namespace dtnn {

// A Google Benchmark time in milliseconds; an unknown time_unit is an error naming `where` (a guessed unit would
// store wrong times).
double benchmark_ms(double value, const std::string& unit, const std::string& where);

// bench_gemm | bench_layers (by the executable's name in the file's context) | google_benchmark.
std::string named_benchmark_source(const nlohmann::json& j);

std::vector<NamedBenchmarkRow> read_named_benchmarks(const nlohmann::json& j, const std::string& path);

}  // namespace dtnn
