// Benchmark files for `dtnn ingest` (experiments/ingest.h): Google Benchmark JSON of suites/bench_conv,
// suites/bench_allreduce and any other suite (named rows), and `dtnn layers --json` output, recognised by content.
#include <cmath>

#include "experiments/ingest.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  const std::string path = fuzz::write_input("bench.json", data, size);
  IngestFile file;
  if (!fuzz::accepted([&] { file = read_benchmark_file(path); })) return 0;
  for (const ConvBenchmarkRow& r : file.conv)
    fuzz::require(r.threads >= 0 && (!r.median_ms || *r.median_ms >= 0), "stored times and thread counts are not negative");
  for (const CollectiveBenchmarkRow& r : file.collectives)
    fuzz::require(r.bytes > 0 && r.ranks > 0 && std::isfinite(r.time_s) && r.time_s > 0 && std::isfinite(r.bytes_per_s),
                  "collective rows have positive sizes, ranks and finite positive times");
  for (const NamedBenchmarkRow& r : file.named)
    fuzz::require(!r.name.empty() && r.threads >= 0 && r.repetitions >= 1 &&
                      (!r.real_time_ms || (std::isfinite(*r.real_time_ms) && *r.real_time_ms >= 0)) &&
                      (r.error.empty() || !r.real_time_ms),
                  "named rows have a name, non-negative finite times, and no time when skipped with an error");
  return 0;
}
