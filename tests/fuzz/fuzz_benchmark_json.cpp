// Convolution benchmark files for `dtnn ingest` (experiments/ingest.h): Google Benchmark JSON of
// suites/bench_conv and `dtnn layers --json` output, recognised by content.
#include "experiments/ingest.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  const std::string path = fuzz::write_input("bench.json", data, size);
  std::vector<ConvBenchmarkRow> rows;
  if (!fuzz::accepted([&] { rows = read_conv_benchmarks(path); })) return 0;
  for (const ConvBenchmarkRow& r : rows)
    fuzz::require(r.threads >= 0 && (!r.median_ms || *r.median_ms >= 0), "stored times and thread counts are not negative");
  return 0;
}
