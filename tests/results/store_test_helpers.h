// Shared by the store's test files: a fresh database path and the single value of a query.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "helpers.h"
#include "results/store.h"

namespace dtnn::test {

// The one value of a one-row query, "NULL" for SQL NULL.
inline std::string one(const ResultStore& store, const std::string& sql) {
  const QueryResult r = store.query(sql);
  REQUIRE(r.rows.size() == 1);
  return r.rows[0][0].value_or("NULL");
}

// A database path in the test's temporary directory, with no file (nor -wal, -shm) there.
inline std::string fresh_db(const std::string& name) {
  const std::string path = temp_path(name + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return path;
}

}  // namespace dtnn::test
