// Text in the results store is valid UTF-8 whatever a run's error or a file name held, and readers of rows
// stored before that (query --format json) replace invalid bytes instead of failing on the whole database.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/query.h"
#include "helpers.h"
#include "results/sqlite_util.h"
#include "results/store.h"

namespace {

namespace fs = std::filesystem;

// A database with one failed run whose error is `error`; returns the store.
dtnn::ResultStore db_with_error(const std::string& name, const std::string& error) {
  const std::string path = dtnn::test::temp_path(name + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  dtnn::ResultStore store = dtnn::ResultStore::open(path);
  dtnn::RunStart s;
  s.matrix_id = store.add_matrix("m", "m.toml", "hash", "name = \"m\"\n");
  s.environment_id = store.add_environment(dtnn::StoredEnvironment{});
  s.trial_key = s.config_key = s.label = "k";
  const int64_t id = store.begin_run(s);
  store.finish_run(id, "failed", error, 1.0);
  return store;
}

std::string json_of(const dtnn::ResultStore& store) {
  std::ostringstream out;
  dtnn::print_query(out, store.query("SELECT error FROM runs"), "json");
  return out.str();
}

}  // namespace

TEST_CASE("store: text is stored as valid UTF-8, invalid bytes as U+FFFD", "[store]") {
  CHECK(dtnn::store_detail::valid_utf8("bad\xff.npz") == "bad\xEF\xBF\xBD.npz");
  CHECK(dtnn::store_detail::valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xF0\x9F\x98\x80");  // kept
  CHECK(dtnn::store_detail::valid_utf8("\xC0\xAF|\xED\xA0\x80|\xE2\x82") ==  // overlong, surrogate, cut short
        "\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD");
  const dtnn::ResultStore store = db_with_error("text_utf8", "cannot read bad\xff.npz");
  CHECK(store.query("SELECT error FROM runs").rows.at(0).at(0) == "cannot read bad\xEF\xBF\xBD.npz");
  std::string json;
  REQUIRE_NOTHROW(json = json_of(store));
  CHECK_NOTHROW(nlohmann::json::parse(json));  // a JSON parser's word: nlohmann refuses invalid UTF-8 in strings
  CHECK(json.find("cannot read bad\xEF\xBF\xBD.npz") != std::string::npos);
}

TEST_CASE("query: JSON output of a row stored with invalid UTF-8 replaces the bytes", "[store]") {
  dtnn::ResultStore store = db_with_error("text_old_row", "x");
  store.exec("UPDATE runs SET error = CAST(X'626164FF2E6E707A' AS TEXT)");  // as an older store may hold it
  std::string json;
  REQUIRE_NOTHROW(json = json_of(store));
  CHECK(json.find("bad\xEF\xBF\xBD.npz") != std::string::npos);
}

TEST_CASE("query: a table's config_key cells name what differs between the rows, the rest once below", "[store]") {
  const std::string path = dtnn::test::temp_path("text_keys.db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  dtnn::ResultStore store = dtnn::ResultStore::open(path);
  dtnn::RunStart s;
  s.matrix_id = store.add_matrix("m", "m.toml", "hash", "name = \"m\"\n");
  s.environment_id = store.add_environment(dtnn::StoredEnvironment{});
  // Keys longer than the table's 60-character cells, equal in their first 60 characters.
  const std::string common = "dataset=mnist;dataset_train_path=/usr/share/datasets/fashion-mnist;model=simplecnn";
  for (const std::string& key : {common + ";non_blocking_mpi=True;scaling=strong", common + ";scaling=strong",
                                 common + ";scaling=weak"}) {
    s.trial_key = s.config_key = s.label = key;
    store.begin_run(s);  // a run record, left running: only its key matters here
  }
  std::ostringstream table, csv;
  const dtnn::QueryResult r = store.query("SELECT id, config_key FROM runs ORDER BY id");
  dtnn::print_query(table, r, "table");
  dtnn::print_query(csv, r, "csv");
  const std::string t = table.str();
  CHECK(t.find("1   non_blocking_mpi=True, scaling=strong") != std::string::npos);
  CHECK(t.find("2   non_blocking_mpi=default, scaling=strong") != std::string::npos);
  CHECK(t.find("3   non_blocking_mpi=default, scaling=weak") != std::string::npos);
  CHECK(t.find("config_key shared by every row: " + common + "\n") != std::string::npos);
  CHECK(csv.str().find(common + ";scaling=weak") != std::string::npos);  // csv keeps keys whole
  std::ostringstream one;
  dtnn::print_query(one, store.query("SELECT config_key FROM runs WHERE id = 3"), "table");
  CHECK(one.str().find("shared by every row") == std::string::npos);  // one row: nothing to tell apart
}
