#include "bench/sqlite.h"

#include <filesystem>

namespace ember::bench {

SqliteStmt::~SqliteStmt() {
  if (stmt_) sqlite3_finalize(stmt_);
}

void SqliteStmt::Bind(int i, const std::optional<double>& v) {
  v ? sqlite3_bind_double(stmt_, i, *v) : sqlite3_bind_null(stmt_, i);
}
void SqliteStmt::Bind(int i, const std::optional<int64_t>& v) {
  v ? sqlite3_bind_int64(stmt_, i, *v) : sqlite3_bind_null(stmt_, i);
}
void SqliteStmt::Bind(int i, const std::optional<std::string>& v) {
  v ? sqlite3_bind_text(stmt_, i, v->data(), static_cast<int>(v->size()), SQLITE_TRANSIENT)
    : sqlite3_bind_null(stmt_, i);
}

bool SqliteStmt::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) status_ = IoError(std::string("sqlite step: ") + sqlite3_errmsg(db_));
  return false;
}

std::optional<double> SqliteStmt::ColumnDouble(int i) const {
  if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(stmt_, i);
}
std::optional<int64_t> SqliteStmt::ColumnInt(int i) const {
  if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(stmt_, i);
}
std::optional<std::string> SqliteStmt::ColumnText(int i) const {
  if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
  const unsigned char* t = sqlite3_column_text(stmt_, i);
  return std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)));
}

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return IoError("open eval db " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  return std::unique_ptr<SqliteDb>(new SqliteDb(db, path));
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

Status SqliteDb::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return IoError(path_ + ": " + msg);
  }
  return Status::Ok();
}

StatusOr<SqliteStmt> SqliteDb::Prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
    return IoError(path_ + ": prepare: " + sqlite3_errmsg(db_));
  return SqliteStmt(db_, stmt);
}

Status SqliteDb::Run(SqliteStmt& stmt) {
  while (stmt.Step()) {
  }
  return stmt.status();
}

}  // namespace ember::bench
