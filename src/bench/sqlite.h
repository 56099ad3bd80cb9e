// A thin RAII layer over the sqlite3 C API for the eval DB: one connection, prepared statements with
// typed binds, errors as Status. Not thread-safe: one SqliteDb per thread (the eval DB is written by a
// single benchmark driver).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "util/status.h"

namespace ember::bench {

class SqliteStmt {
 public:
  SqliteStmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  SqliteStmt(SqliteStmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;
  ~SqliteStmt();

  // Binds are 1-based like sqlite's; nullopt binds NULL.
  void Bind(int i, const std::optional<double>& v);
  void Bind(int i, const std::optional<int64_t>& v);
  void Bind(int i, const std::optional<std::string>& v);
  void BindText(int i, const std::string& v) { Bind(i, std::optional<std::string>(v)); }
  void BindInt(int i, int64_t v) { Bind(i, std::optional<int64_t>(v)); }

  // Advances; true while a row is available, false when done; an error sets status().
  bool Step();
  const Status& status() const { return status_; }

  std::optional<double> ColumnDouble(int i) const;
  std::optional<int64_t> ColumnInt(int i) const;
  std::optional<std::string> ColumnText(int i) const;
  std::string ColumnName(int i) const { return sqlite3_column_name(stmt_, i); }
  int ColumnCount() const { return sqlite3_column_count(stmt_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  Status status_;
};

class SqliteDb {
 public:
  // Opens (creating if needed) the database file and its parent directory.
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  Status Exec(const std::string& sql);
  StatusOr<SqliteStmt> Prepare(const std::string& sql);
  // Runs a statement to completion (for INSERT/UPDATE with binds already set).
  Status Run(SqliteStmt& stmt);
  int64_t LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

}  // namespace ember::bench
