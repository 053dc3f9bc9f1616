// The guard on read-only result stores (query, compare, check, report's tools): an SQLite authorizer that
// refuses, when a statement is prepared, everything that could write a file or change what the connection
// can reach. Internal to results/.
#pragma once

#include <sqlite3.h>

#include <string>

namespace dtnn::store_detail {

// Installs the authorizer on `db` and turns extension loading off (the C API and the SQL function). Refused
// at prepare time, so nothing runs and no file is created: INSERT, UPDATE, DELETE, CREATE, DROP, ALTER,
// ATTACH, DETACH, load_extension(), and every PRAGMA except the reading ones (a known list, given no value).
// VACUUM (INTO) has no authorizer action: ResultStore::query also refuses statements that are not
// sqlite3_stmt_readonly. Errors name `path`.
void guard_read_only(sqlite3* db, const std::string& path);

}  // namespace dtnn::store_detail
