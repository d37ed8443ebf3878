// A small wrapper over the SQLite C API, for the audit database only: the connection and its
// prepared statements as owners that finalize and close, the bind and column helpers, and every
// SQLite failure mapped to a core::Error that names the database file. Private to store:
// it is the one header that includes sqlite3.h, and no public header includes it.
#pragma once

#include <sqlite3.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "core/result.hpp"

namespace llmrepro::store::detail {

// Owns one prepared statement; reset after each use so that it can be cached.
class Statement {
public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* statement) : m_statement(statement) {}
  Statement(Statement&& other) noexcept : m_statement(std::exchange(other.m_statement, nullptr)) {}
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(m_statement);
      m_statement = std::exchange(other.m_statement, nullptr);
    }
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(m_statement); }

  // The statement, owned by this object; null when none is held.
  sqlite3_stmt* get() const { return m_statement; }

private:
  sqlite3_stmt* m_statement = nullptr;
};

// Clears bindings and rewinds a cached statement whatever happened to it.
class StatementUse {
public:
  explicit StatementUse(sqlite3_stmt* statement) : m_statement(statement) {}
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;
  ~StatementUse() {
    sqlite3_reset(m_statement);
    sqlite3_clear_bindings(m_statement);
  }

private:
  sqlite3_stmt* m_statement;
};

// Binds `text` to parameter `index` without a destructor (SQLITE_STATIC): every bound string
// must outlive the step.
inline void bind_text(sqlite3_stmt* statement, int index, const std::string& text) {
  sqlite3_bind_text64(statement, index, text.data(), text.size(), nullptr, SQLITE_UTF8);
}

// Binds `*text`, or NULL when `text` is null.
inline void bind_optional_text(sqlite3_stmt* statement, int index, const std::string* text) {
  if (text == nullptr)
    sqlite3_bind_null(statement, index);
  else
    bind_text(statement, index, *text);
}

// A REAL column. NaN cannot be stored as REAL (SQLite turns it into NULL), so NULL reads back as
// NaN.
inline double column_double(sqlite3_stmt* statement, int index) {
  if (sqlite3_column_type(statement, index) == SQLITE_NULL)
    return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(statement, index);
}

// A TEXT column; NULL reads as the empty string.
inline std::string column_text(sqlite3_stmt* statement, int index) {
  const auto* text = sqlite3_column_text(statement, index);
  if (text == nullptr) return {};
  const int size = sqlite3_column_bytes(statement, index);
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(size));
}

// Whether the column is NULL.
inline bool column_is_null(sqlite3_stmt* statement, int index) {
  return sqlite3_column_type(statement, index) == SQLITE_NULL;
}

// An INTEGER column as int.
inline int column_int(sqlite3_stmt* statement, int index) {
  return sqlite3_column_int(statement, index);
}

// An INTEGER column as 64 bits.
inline std::int64_t column_int64(sqlite3_stmt* statement, int index) {
  return static_cast<std::int64_t>(sqlite3_column_int64(statement, index));
}

// A nullable INTEGER count (a usage column): nullopt where it is NULL.
inline std::optional<long> column_optional_count(sqlite3_stmt* statement, int index) {
  if (sqlite3_column_type(statement, index) == SQLITE_NULL) return std::nullopt;
  return static_cast<long>(sqlite3_column_int64(statement, index));
}

// One open database file. Every message it builds names the file ("audit database 'PATH'").
// Statements prepared on it must be destroyed before it is: declare them after it.
class Connection {
public:
  // Opens `path` with the sqlite3_open_v2 `flags`, without SQLite's own per-call locking (the
  // caller serialises every use) and with a busy timeout, so that another process writing the
  // same file (a resumed or sharded audit) delays a statement instead of failing it.
  // ErrorCode::environment when the file cannot be opened, with SQLite's message.
  static core::Result<Connection> open(const std::string& path, int flags);

  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  // Closes the connection.
  ~Connection();

  // The SQLite handle, owned by this object.
  sqlite3* handle() const { return m_db; }
  // The file this connection was opened at.
  const std::string& path() const { return m_path; }
  // "audit database 'PATH'", for messages.
  std::string where() const;

  // An error of `code` naming the file, `what` failed and SQLite's last message.
  core::Error failure(core::ErrorCode code, const std::string& what) const;
  // ErrorCode::input naming the file and what is wrong with its contents.
  core::Error corrupt(const std::string& what) const;

  // Runs `sql` (one or more statements, no rows); an error of `code` with SQLite's message.
  core::Result<void> exec(const char* sql,
                          core::ErrorCode code = core::ErrorCode::environment) const;
  // Prepares `sql` for repeated use; an error of `code` when it does not compile.
  core::Result<Statement> prepare(const char* sql,
                                  core::ErrorCode code = core::ErrorCode::environment) const;
  // Runs a statement that returns no rows and rewinds it; ErrorCode::environment naming `what`.
  core::Result<void> step_done(sqlite3_stmt* statement, const char* what) const;

  // Runs `statement` to the end, handing each row to `row` (a callable taking the statement and
  // returning Result<void>), and rewinds it; stops at the first error. A failed step is
  // ErrorCode::input naming `what`.
  template <typename Row>
  core::Result<void> for_each_row(sqlite3_stmt* statement, const char* what, Row&& row) const {
    const StatementUse use(statement);
    for (;;) {
      const int step = sqlite3_step(statement);
      if (step == SQLITE_DONE) return {};
      if (step != SQLITE_ROW) return failure(core::ErrorCode::input, what);
      LLMREPRO_TRY(row(statement));
    }
  }

private:
  Connection(std::string path, sqlite3* db);

  std::string m_path;
  sqlite3* m_db = nullptr;
};

} // namespace llmrepro::store::detail
