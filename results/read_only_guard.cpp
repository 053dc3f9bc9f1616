// The read-only guard. See read_only_guard.h.
#include "results/read_only_guard.h"

#include <cctype>
#include <set>

#include "results/sqlite_util.h"

namespace dtnn::store_detail {

namespace {

// Pragmas that only read. Those in kObjectPragmas take the name of a table or index, not a value.
const std::set<std::string> kReadingPragmas = {
    "application_id", "auto_vacuum",   "cache_size",       "collation_list",   "compile_options", "data_version",
    "database_list",  "encoding",      "foreign_key_check", "foreign_key_list", "foreign_keys",   "freelist_count",
    "function_list",  "index_info",    "index_list",       "index_xinfo",      "integrity_check", "journal_mode",
    "module_list",    "page_count",    "page_size",        "pragma_list",      "query_only",      "quick_check",
    "schema_version", "synchronous",   "table_info",       "table_list",       "table_xinfo",     "user_version"};
const std::set<std::string> kObjectPragmas = {"foreign_key_check", "foreign_key_list", "index_info",  "index_list",
                                              "index_xinfo",       "integrity_check",  "quick_check", "table_info",
                                              "table_list",        "table_xinfo"};

int authorize(void*, int action, const char* a, const char* b, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      return SQLITE_OK;
    case SQLITE_FUNCTION:
      return b && sqlite3_stricmp(b, "load_extension") == 0 ? SQLITE_DENY : SQLITE_OK;
    case SQLITE_PRAGMA: {
      std::string name = a ? a : "";
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!kReadingPragmas.count(name)) return SQLITE_DENY;
      return !b || kObjectPragmas.count(name) ? SQLITE_OK : SQLITE_DENY;
    }
    default:  // writes, schema changes, ATTACH/DETACH, ANALYZE, REINDEX, virtual tables
      return SQLITE_DENY;
  }
}

}  // namespace

void guard_read_only(sqlite3* db, const std::string& path) {
  check_sqlite(db, path, "turning extension loading off",
               sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr));
  check_sqlite(db, path, "turning extension loading off", sqlite3_enable_load_extension(db, 0));
  check_sqlite(db, path, "setting the read-only authorizer", sqlite3_set_authorizer(db, authorize, nullptr));
}

}  // namespace dtnn::store_detail
