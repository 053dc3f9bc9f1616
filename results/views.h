// The store's views: results/views.sql, the one definition of every derived result, compiled in.
//
// A database records in PRAGMA user_version which views it holds (views_version(): a hash of views.sql's
// text; 0: none or unknown). Writers bring the file's views to this build's (ResultStore::migrate); a
// read-only connection whose file holds another build's views creates this build's as TEMP views, which
// shadow the file's for that connection only and write nothing to the file.
#pragma once

#include <string>

struct sqlite3;

namespace dtnn::store_detail {

// This build's views version: a 31-bit FNV-1a hash of views.sql, never 0.
int views_version();
// True when the database's views are this build's.
bool views_current(sqlite3* db, const std::string& path);
// Drops every view of the main schema and records that it holds none (user_version 0).
void drop_views(sqlite3* db, const std::string& path);
// Creates views.sql's views in the main schema and records their version. The tables they read must be at
// the latest migration.
void create_views(sqlite3* db, const std::string& path);
// Creates views.sql's views as TEMP views of this connection (for read-only connections).
void create_temp_views(sqlite3* db, const std::string& path);

}  // namespace dtnn::store_detail
