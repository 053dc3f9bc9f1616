// Read-only stores (query, compare, check): every way SQL could write a file or widen what the connection
// reaches is refused before it runs, with one line naming the database.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "helpers.h"
#include "results/store.h"
#include "results/views.h"
#include "skip.h"

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
  const std::string views = std::to_string(dtnn::store_detail::views_version());  // the views this build wrote
  CHECK(ro.query("PRAGMA user_version").rows.at(0).at(0) == views);
  CHECK(ro.query("PRAGMA table_info(runs)").rows.size() > 5);
  CHECK(ro.query("SELECT count(*) FROM runs").rows.at(0).at(0) == "0");
  dtnn::ResultStore rw = dtnn::ResultStore::open(db);
  CHECK(rw.query("PRAGMA user_version").rows.at(0).at(0) == views);
}

TEST_CASE("store: a query that would never end or fill memory is stopped with one line", "[store]") {
  const std::string db = made_db("ro_limits");
  const dtnn::ResultStore ro = dtnn::ResultStore::open_read_only(db);
  const std::string endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) ";
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(ro.query(endless + "SELECT count(*) FROM c", 0.3),
                    Contains(db + ": the statement ran longer than 0.3 s") && Contains("--timeout"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));  // stopped, not run to the end
  // Rows of one 100-byte value: each holds 100 + kCellBytes + kRowBytes = 188 bytes, so the 6th passes 1000.
  static_assert(dtnn::ResultStore::kCellBytes + dtnn::ResultStore::kRowBytes == 88, "the rows' cost below");
  CHECK_THROWS_WITH(ro.query(endless + "SELECT printf('%.100c', 'x') FROM c", 0, 1000),
                    Contains(db + ": the result passed 1000 bytes after 5 rows") && Contains("LIMIT"));
  // Streamed, only the text counts (each value one byte more, its separator): the 10th row passes 1000, and no
  // row is held.
  size_t streamed = 0;
  CHECK_THROWS_WITH(ro.query_rows(
                        endless + "SELECT printf('%.100c', 'x') FROM c", [](const std::vector<std::string>&) {},
                        [&](const dtnn::ResultStore::RowView&) { ++streamed; }, 0, 1000),
                    Contains(db + ": the result passed 1000 bytes after 9 rows"));
  CHECK(streamed == 9);
  // A statement that ends is not touched by either limit, and the store stays usable after a stop.
  CHECK(ro.query(endless + "SELECT count(*) FROM (SELECT x FROM c LIMIT 1000)", 5, 1000).rows.at(0).at(0) == "1000");
  CHECK(ro.query("SELECT count(*) FROM runs").rows.at(0).at(0) == "0");
}

TEST_CASE("store: a WAL with no -shm in a directory the reader cannot write says what to do", "[store]") {
  // root ignores permission bits: as root, read as nobody (setpriv); otherwise as this user.
  if (::geteuid() == 0 && !fs::exists("/usr/bin/setpriv"))
    DTNN_SKIP("running as root without /usr/bin/setpriv to drop privileges");
  const std::string as_reader = ::geteuid() == 0 ? "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const fs::path dir = dtnn::test::temp_path("ro_wal_dir");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "dtnn.db").string();
  {
    // A writer still open: its commit is only in the -wal file. Copy the database and -wal, not the -shm.
    const std::string live = made_db("ro_wal_live");
    dtnn::ResultStore w = dtnn::ResultStore::open(live);
    w.exec("PRAGMA wal_autocheckpoint = 0");
    w.add_matrix("m", "m.toml", "hash", "name = \"m\"\n");
    fs::copy_file(live, db);
    fs::copy_file(live + "-wal", db + "-wal");
  }
  const auto rx = fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read | fs::perms::group_exec |
                  fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(dir, rx);
  for (const std::string& f : {db, db + "-wal"}) fs::permissions(f, fs::perms::owner_read | fs::perms::others_read);
  const std::string out = dtnn::test::temp_path("ro_wal.log");
  std::system((as_reader + DTNN_BINARY + " query matrices --format csv --db " + db + " > " + out + " 2>&1").c_str());
  fs::permissions(dir, rx | fs::perms::owner_write);
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Contains("dtnn.db-wal holds changes") && Contains("copy the database and its -wal file"));
  CHECK_THAT(text, !Contains("not a dtnn results database"));
  CHECK_FALSE(fs::exists(db + "-shm"));
}
