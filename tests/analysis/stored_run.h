// A real `dtnn train` run (simplecnn, 3 synthetic steps, 1 rank) stored as an ok run of a results store, for
// the tests that read a stored run's report (dtnn predict --from-run, --store, a matrix's predicted trials).
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "cli_helpers.h"
#include "core/file_io.h"
#include "results/store.h"

namespace dtnn::test {

// Stores a report as an ok run of `store` (matrix `matrix`, environment host "h" at commit "abc"), with this
// trial key (also its label and configuration) and these trial parameters; returns its id.
inline int64_t store_report_run(ResultStore& store, const std::string& matrix, const std::string& key,
                                const std::map<std::string, std::string>& params, const std::string& report) {
  RunStart s;
  s.matrix_id = store.add_matrix(matrix, matrix + ".toml", "hash", "name = \"" + matrix + "\"\n");
  StoredEnvironment e;
  e.host = "h";
  e.git_commit = "abc";
  s.environment_id = store.add_environment(e);
  s.trial_key = s.label = s.config_key = key;
  s.params = params;
  s.command = "dtnn train";
  s.log_path = key + ".log";
  const int64_t run = store.begin_run(s);
  store.finish_run_ok(run, report, 1.0);
  return run;
}

// Stores the run in `db` (created if needed) with these trial parameters; returns its id. The report is
// trained once per test process.
inline int64_t store_trained_run(const std::string& db, const std::map<std::string, std::string>& params,
                                 const std::string& config_key = "t") {
  static const std::string report = [] {
    const std::string path = temp_path("stored_run_report.json");
    REQUIRE(run_dtnn("train --model=simplecnn --use_synthetic_data=True --steps_per_epoch=3 "
                     "--evaluate_on_test=False --progress=False --report=" + path).status == 0);
    const std::string text = read_file(path);
    std::filesystem::remove(path);
    return text;
  }();
  ResultStore store = ResultStore::open(db);
  return store_report_run(store, "m", config_key, params, report);
}

}  // namespace dtnn::test
