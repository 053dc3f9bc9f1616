// Read-only stores (query, compare, check): every way SQL could write a file or widen what the connection
// reaches is refused before it runs, with one line naming the database.
#include <catch2/catch.hpp>
#include <filesystem>

#include "core/error.h"
#include "helpers.h"
#include "results/store.h"

using Catch::Contains;

namespace {

namespace fs = std::filesystem;

// A current, empty results database (its -wal/-shm files removed first).
std::string made_db(const std::string& name) {
  const std::string path = dtnn::test::temp_path(name + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  dtnn::ResultStore::open(path);
  return path;
}

}  // namespace

TEST_CASE("store: a read-only store refuses VACUUM, ATTACH, writes, writing pragmas and extensions", "[store]") {
  const std::string db = made_db("ro_guard");
  const std::string copy = dtnn::test::temp_path("ro_guard_copy.db");
  fs::remove(copy);
  dtnn::ResultStore ro = dtnn::ResultStore::open_read_only(db);
  const std::string refused = db + ": ";
  CHECK_THROWS_WITH(ro.query("VACUUM INTO '" + copy + "'"), Contains(refused) && Contains("read-only"));
  CHECK_FALSE(fs::exists(copy));
  CHECK_THROWS_WITH(ro.exec("VACUUM INTO '" + copy + "'"), Contains(refused) && Contains("read-only"));
  CHECK_FALSE(fs::exists(copy));
  CHECK_THROWS_WITH(ro.query("ATTACH '" + copy + "' AS other"), Contains(refused) && Contains("not authorized"));
  CHECK_FALSE(fs::exists(copy));
  CHECK_THROWS_WITH(ro.query("INSERT INTO matrices (name, file, hash, text) VALUES ('m', 'f', 'h', 't')"),
                    Contains(refused) && Contains("not authorized"));
  CHECK_THROWS_WITH(ro.query("PRAGMA user_version = 5"), Contains(refused) && Contains("not authorized"));
  CHECK_THROWS_WITH(ro.query("PRAGMA journal_mode = DELETE"), Contains(refused) && Contains("not authorized"));
  CHECK_THROWS_WITH(ro.query("SELECT load_extension('/nonexistent/x.so')"), Contains(refused) && Contains("not authorized"));
  CHECK_THROWS_WITH(ro.query("CREATE TEMP TABLE t (x)"), Contains(refused) && Contains("not authorized"));
  // Reading still works, pragmas that read included.
  CHECK(ro.query("PRAGMA user_version").rows.at(0).at(0) == "0");
  CHECK(ro.query("PRAGMA table_info(runs)").rows.size() > 5);
  CHECK(ro.query("SELECT count(*) FROM runs").rows.at(0).at(0) == "0");
  dtnn::ResultStore rw = dtnn::ResultStore::open(db);
  CHECK(rw.query("PRAGMA user_version").rows.at(0).at(0) == "0");
}
