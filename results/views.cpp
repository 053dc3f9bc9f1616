#include "results/views.h"

#include <sqlite3.h>

#include <cstdint>
#include <regex>
#include <vector>

#include "results/sqlite_util.h"
#include "results/views_sql.h"

namespace dtnn::store_detail {

namespace {

int user_version(sqlite3* db, const std::string& path) {
  Statement st(db, path, "PRAGMA user_version");
  st.step();
  return static_cast<int>(st.int_column(0));
}

void set_user_version(sqlite3* db, const std::string& path, int version) {
  exec_sql(db, path, "PRAGMA user_version = " + std::to_string(version));
}

}  // namespace

int views_version() {
  static const int version = [] {
    uint32_t h = 2166136261u;
    for (const char* p = kViewsSql; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
    const int v = static_cast<int>(h & 0x7fffffffu);
    return v == 0 ? 1 : v;
  }();
  return version;
}

bool views_current(sqlite3* db, const std::string& path) { return user_version(db, path) == views_version(); }

void drop_views(sqlite3* db, const std::string& path) {
  std::vector<std::string> names;
  {
    Statement st(db, path, "SELECT name FROM sqlite_master WHERE type = 'view'");
    while (st.step()) names.push_back(*st.text_column(0));
  }
  // SQLite lets a view go while another still reads it: any order works.
  for (const std::string& name : names) exec_sql(db, path, "DROP VIEW IF EXISTS \"" + name + "\"");
  set_user_version(db, path, 0);
}

void create_views(sqlite3* db, const std::string& path) {
  exec_sql(db, path, kViewsSql);
  set_user_version(db, path, views_version());
}

void create_temp_views(sqlite3* db, const std::string& path) {
  static const std::string temp =
      std::regex_replace(std::string(kViewsSql), std::regex("CREATE VIEW "), "CREATE TEMP VIEW ");
  exec_sql(db, path, temp);
}

}  // namespace dtnn::store_detail
