#include "store/detail/sqlite.hpp"

namespace llmrepro::store::detail {

using core::Error;
using core::ErrorCode;
using core::Result;

Result<Connection> Connection::open(const std::string& path, int flags) {
  sqlite3* handle = nullptr;
  // Every use of the connection holds AuditDatabase's mutex, so SQLite's own per-call locking is
  // redundant.
  const int status = sqlite3_open_v2(path.c_str(), &handle, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  // The handle exists even when opening failed, and owns the message.
  Connection connection(path, handle);
  if (status != SQLITE_OK) return connection.failure(ErrorCode::environment, "cannot open");
  // Before the first statement: another process may be writing (a resumed or sharded audit).
  sqlite3_busy_timeout(handle, 10000);
  return connection;
}

Connection::Connection(std::string path, sqlite3* db) : m_path(std::move(path)), m_db(db) {}

Connection::Connection(Connection&& other) noexcept
    : m_path(std::move(other.m_path)), m_db(std::exchange(other.m_db, nullptr)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    sqlite3_close(m_db);
    m_path = std::move(other.m_path);
    m_db = std::exchange(other.m_db, nullptr);
  }
  return *this;
}

Connection::~Connection() { sqlite3_close(m_db); }

std::string Connection::where() const { return "audit database '" + m_path + "'"; }

Error Connection::failure(ErrorCode code, const std::string& what) const {
  return core::make_error(code, where() + ": " + what + ": " + sqlite3_errmsg(m_db));
}

Error Connection::corrupt(const std::string& what) const {
  return core::make_error(ErrorCode::input, where() + ": " + what);
}

Result<void> Connection::exec(const char* sql, ErrorCode code) const {
  char* message = nullptr;
  if (sqlite3_exec(m_db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errmsg(m_db);
    sqlite3_free(message);
    return core::make_error(code, where() + ": " + text);
  }
  return {};
}

Result<Statement> Connection::prepare(const char* sql, ErrorCode code) const {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v3(m_db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(statement);
    return failure(code, "cannot prepare a query");
  }
  return Statement(statement);
}

Result<void> Connection::step_done(sqlite3_stmt* statement, const char* what) const {
  const StatementUse use(statement);
  if (sqlite3_step(statement) != SQLITE_DONE) return failure(ErrorCode::environment, what);
  return {};
}

} // namespace llmrepro::store::detail
