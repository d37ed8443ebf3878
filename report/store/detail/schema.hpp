// The audit database's tables and their version: creating them in a new file, checking the
// version of an existing one, and the in-place upgrade of a database written before the
// numbers_* columns existed. Private to report/store; the layout is described in schema.cpp.
#pragma once

#include "core/result.hpp"
#include "report/store/detail/sqlite.hpp"

namespace llmrepro::store::detail {

// Succeeds when `connection`'s file holds no table (a new or empty SQLite file). ErrorCode::input
// when it is no SQLite database, already holds an audit or holds another program's tables;
// ErrorCode::environment when it cannot be read.
core::Result<void> check_new_file(const Connection& connection);

// Creates every table but the semantic ones (store_semantic() creates those). Inside the
// caller's transaction.
core::Result<void> create_tables(const Connection& connection);

// Stores the schema version (AuditDatabase::k_schema_version) and the format name in `meta`.
// Inside the caller's transaction, after create_tables().
core::Result<void> write_schema_version(const Connection& connection);

// Succeeds when `connection`'s file is an audit database of AuditDatabase::k_schema_version.
// ErrorCode::input when it is no SQLite database, not an audit, or of another version.
core::Result<void> check_schema_version(const Connection& connection);

// Gives a database created before the numbers_* columns of `requests` existed those columns, 0
// in every stored request. True when the requests table has them afterwards; false when they
// could not be added (a read-only file, a writer holding the lock past the busy timeout): the
// database is then read with zero counts and written without them.
bool add_numbers_columns(const Connection& connection);

} // namespace llmrepro::store::detail
