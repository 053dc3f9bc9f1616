// The single value of a one-row query on a results store, for the tests of the store, the runner and the
// analysis commands. "NULL" stands for SQL NULL; any other row count fails the test.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "results/store.h"

namespace dtnn::test {

inline std::string one(const ResultStore& store, const std::string& sql) {
  const QueryResult r = store.query(sql);
  REQUIRE(r.rows.size() == 1);
  return r.rows[0][0].value_or("NULL");
}

// The same on the database file at `db`, opened read-only for the one query.
inline std::string one(const std::string& db, const std::string& sql) {
  return one(ResultStore::open_read_only(db), sql);
}

}  // namespace dtnn::test
