// Run reports (dtnn.run_report/1, `dtnn train --report`) as the runner reads them after a trial exits
// (experiments/runner.cpp): refused_report_reason checks the attempt's nonce in the file, then the results
// store ingests the text as a finished run (results/store_reports.cpp), ok and diverged. The store is a
// database in the scratch directory, started afresh every kFreshEvery runs so it stays small.
#include <time.h>

#include "experiments/run_files.h"
#include "fuzz_common.h"
#include "results/store.h"

namespace {

constexpr int kFreshEvery = 500;

struct Db {
  std::unique_ptr<dtnn::ResultStore> store;
  int64_t matrix = 0, env = 0;
  int runs = 0;
};

Db& db() {
  static Db d;
  if (d.store && d.runs < kFreshEvery) return d;
  const std::string path = dtnn::fuzz::scratch_path("results.db");
  d.store.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  d.store = std::make_unique<dtnn::ResultStore>(dtnn::ResultStore::open(path));
  d.store->exec("PRAGMA synchronous = OFF");  // a scratch database: durability would only cost executions
  d.matrix = d.store->add_matrix("fuzz", "fuzz.toml", "hash", "name = \"fuzz\"\n");
  dtnn::StoredEnvironment e;
  e.host = "fuzz";
  d.env = d.store->add_environment(e);
  d.runs = 0;
  return d;
}

int64_t begin_run(Db& d) {
  dtnn::RunStart s;
  s.matrix_id = d.matrix;
  s.environment_id = d.env;
  s.trial_key = s.config_key = s.label = "model=simplecnn";
  s.params = {{"model", "simplecnn"}};
  s.command = "dtnn train";
  s.log_path = dtnn::fuzz::scratch_path("run.log");
  ++d.runs;
  return d.store->begin_run(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dtnn;
  const std::string path = fuzz::write_input("run.report.json", data, size);
  const timespec began{0, 0};
  fuzz::accepted([&] { refused_report_reason(path, "0123456789abcdef", began); });
  const std::string text(reinterpret_cast<const char*>(data), size);
  Db& d = db();
  fuzz::accepted([&] { d.store->finish_run_ok(begin_run(d), text, 1.0); });
  fuzz::accepted([&] { d.store->finish_run_diverged(begin_run(d), text, "dtnn: diverged", 1.0); });
  return 0;
}
