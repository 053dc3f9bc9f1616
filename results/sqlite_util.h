// SQLite wrappers shared by the results store's files (store.cpp, store_reports.cpp): every call checked,
// the message naming the database and what was being done. Internal to results/.
#pragma once

#include <sqlite3.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/utf8.h"

namespace dtnn::store_detail {

// Every SQLite call is checked; the message names the database, what was being done (in words: users read
// it) and SQLite's own words.
inline void check_sqlite(sqlite3* db, const std::string& path, const char* doing, int rc) {
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    fail(path, ": ", doing, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

// The first character of `tail` that starts another statement, or nullptr when the rest is only whitespace,
// ';' and SQL comments ("-- ..." to the end of the line, "/* ... */", an unclosed one to the end).
inline const char* statement_text(const char* tail) {
  while (tail && *tail) {
    if (std::isspace(static_cast<unsigned char>(*tail)) || *tail == ';') {
      ++tail;
    } else if (tail[0] == '-' && tail[1] == '-') {
      while (*tail && *tail != '\n') ++tail;
    } else if (tail[0] == '/' && tail[1] == '*') {
      const char* end = std::strstr(tail + 2, "*/");
      tail = end ? end + 2 : tail + std::strlen(tail);
    } else {
      return tail;
    }
  }
  return nullptr;
}

// `text` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD: what the store binds,
// so readers (JSON, Python) never meet invalid text. Overlong forms, surrogates and code points past
// U+10FFFF count as invalid.
inline std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    if (const size_t len = utf8_sequence(s + i, text.size() - i)) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// A prepared statement bound by position; text columns read back as std::optional<std::string>.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(path) {
    const char* tail = nullptr;
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, &tail);
    if (rc == SQLITE_AUTH)  // read_only_guard.h refused it
      fail(path, ": ", sqlite3_errmsg(db), " (the database is open read-only: only statements that read run)");
    if (rc != SQLITE_OK) fail(path, ": ", sqlite3_errmsg(db));
    if (!stmt_) fail(path, ": empty SQL statement");
    if (const char* extra = statement_text(tail)) {
      sqlite3_finalize(stmt_);
      fail(path, ": one SQL statement at a time (extra text: \"", std::string(extra).substr(0, 40), "\")");
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Text is stored as valid UTF-8 (valid_utf8): an error naming a file called "bad\xff.npz" must not make
  // the database unreadable as JSON.
  Statement& bind(int i, const std::string& v) {
    const std::string text = valid_utf8(v);
    const int n = static_cast<int>(text.size());
    check_sqlite(db_, path_, "binding a value", sqlite3_bind_text(stmt_, i, text.data(), n, SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind(int i, const char* v) { return bind(i, std::string(v)); }
  Statement& bind(int i, int64_t v) {
    check_sqlite(db_, path_, "binding a value", sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Statement& bind(int i, double v) {
    check_sqlite(db_, path_, "binding a value", sqlite3_bind_double(stmt_, i, v));
    return *this;
  }
  // std::nullopt binds SQL NULL.
  template <typename T>
  Statement& bind(int i, const std::optional<T>& v) {
    if (v) return bind(i, *v);
    check_sqlite(db_, path_, "binding a value", sqlite3_bind_null(stmt_, i));
    return *this;
  }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(path_, ": ", sqlite3_errmsg(db_));
  }
  void run() {
    while (step()) {
    }
  }
  // Ready to bind and run again (rows of one INSERT in a loop: prepared once).
  void reset() {
    sqlite3_reset(stmt_);
    check_sqlite(db_, path_, "clearing bindings", sqlite3_clear_bindings(stmt_));
  }
  // True when the statement cannot change the database file (sqlite3_stmt_readonly).
  bool read_only() const { return sqlite3_stmt_readonly(stmt_) != 0; }
  int64_t int_column(int i) const { return sqlite3_column_int64(stmt_, i); }
  int columns() const { return sqlite3_column_count(stmt_); }
  std::string column_name(int i) const { return sqlite3_column_name(stmt_, i); }
  // The cell's text as SQLite holds it: valid until the next step() or the statement's end.
  std::optional<std::string_view> text_view(int i) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
    const unsigned char* t = sqlite3_column_text(stmt_, i);
    return std::string_view(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
  }
  std::optional<std::string> text_column(int i) const {
    if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
    const unsigned char* t = sqlite3_column_text(stmt_, i);
    return std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when an exception leaves the scope. IMMEDIATE takes the write lock
// up front, so two writers queue on the busy timeout instead of failing on a lock upgrade.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {
    check_sqlite(db_, path_, "starting a transaction",
                 sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr));
  }
  void commit() {
    check_sqlite(db_, path_, "committing", sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr));
    done_ = true;
  }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

inline void exec_sql(sqlite3* db, const std::string& path, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    fail(path, ": ", msg);
  }
}

}  // namespace dtnn::store_detail
