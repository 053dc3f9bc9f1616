// Shared by the store's test files: a fresh database path and the single value of a query.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "helpers.h"
#include "results/store.h"
#include "store_value.h"

namespace dtnn::test {

// A database path in the test's temporary directory, with no file (nor -wal, -shm) there.
inline std::string fresh_db(const std::string& name) {
  const std::string path = temp_path(name + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

// A fresh store with one matrix and one environment, and 'running' runs of simplemlp to finish with a
// report (the tests of the report's tables: trace, averaging).
struct RunFixture {
  std::string path;
  ResultStore store;
  int64_t matrix = 0, env = 0;
  explicit RunFixture(const std::string& name) : path(fresh_db(name)), store(ResultStore::open(path)) {
    matrix = store.add_matrix("m", "m.toml", "h", "name = \"m\"\n");
    StoredEnvironment e;
    e.host = "h";
    e.git_commit = "abc123";  // compare's selections by commit= (test_compare.cpp)
    env = store.add_environment(e);
  }
  // A run whose trial key, configuration and label are `key`; `extra` adds trial parameters.
  int64_t begin(const std::string& key, int ranks, const std::map<std::string, std::string>& extra = {}) {
    RunStart s;
    s.matrix_id = matrix;
    s.environment_id = env;
    s.trial_key = s.config_key = s.label = key;
    s.params = {{"model", "simplemlp"}, {"ranks", std::to_string(ranks)}};
    s.params.insert(extra.begin(), extra.end());
    s.command = "dtnn train";
    s.log_path = "x.log";
    return store.begin_run(s);
  }
  // Rows of `table` for the run.
  int64_t rows(const std::string& table, int64_t run) const {
    return std::stoll(one(store, "SELECT count(*) FROM " + table + " WHERE run_id = " + std::to_string(run)));
  }
};

}  // namespace dtnn::test
