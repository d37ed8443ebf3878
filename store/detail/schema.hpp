// The audit database's tables and their version: creating them in a new file, checking the
// version of an existing one, and the in-place upgrade of a database written before the
// numbers_*, reasoning and usage columns existed. Private to store; the layout is described
// in schema.cpp.
#pragma once

#include <cstdint>

#include "core/result.hpp"
#include "store/detail/sqlite.hpp"

namespace llmrepro::store::detail {

// Succeeds when `connection`'s file holds no table (a new or empty SQLite file). ErrorCode::input
// when it is no SQLite database, already holds an audit or holds another program's tables;
// ErrorCode::environment when it cannot be read.
core::Result<void> check_new_file(const Connection& connection);

// Creates every table but the semantic ones (store_semantic() creates those). Inside the
// caller's transaction.
core::Result<void> create_tables(const Connection& connection);

// The tables an upgrade creates or rebuilds.
enum class Table { requests, token_texts, packed_tokens };

// Creates `table` as the current version defines it. Inside the caller's transaction.
core::Result<void> create_table(const Connection& connection, Table table);

// Stores the schema version (AuditDatabase::k_schema_version) and the format name in `meta`.
// Inside the caller's transaction, after create_tables().
core::Result<void> write_schema_version(const Connection& connection);

// The schema version of `connection`'s audit database: AuditDatabase::k_schema_version, or an
// older one (1 or 2, to be upgraded, upgrade_schema). ErrorCode::input when it is no SQLite
// database, not an audit, or of another version.
core::Result<int> check_schema_version(const Connection& connection);

// Upgrades a version 1 or 2 database in place to AuditDatabase::k_schema_version, in one
// transaction. From version 1: every row of the tokens and reasoning_tokens tables is packed into
// token_texts and packed_tokens and both tables are dropped. From either: packed_tokens is
// rebuilt with every blob in the current blob format, and requests with `text` and
// `reasoning_text` NULL where they are their tokens' texts one after another. Returns the number
// of token rows packed (version 1) or of tokens repacked (version 2); 0 when another process
// upgraded it first. The freed pages stay in the file until a VACUUM. Call add_later_columns()
// first. ErrorCode::input for an unreadable token row or blob, or tokens of a missing request;
// ErrorCode::environment when the file cannot be written (read-only, or locked past the busy
// timeout); nothing is changed then.
core::Result<std::int64_t> upgrade_schema(const Connection& connection);

// Which of the columns added after version 1 the database has: the numbers_* counts of
// `requests`, and the reasoning (requests.reasoning_text and reasoning_split, and the
// reasoning_tokens table), and the usage (requests.usage_prompt_tokens and
// usage_reasoning_tokens), and the tool calls (requests.tool_calls).
struct LaterColumns {
  bool numbers = true;
  bool reasoning = true;
  bool usage = true;
  bool text = true;       // lone_surrogates
  bool cache = true;      // usage_cached_prompt_tokens
  bool tool_calls = true; // tool_calls
};

// Gives a database created before those columns existed the columns (0, '', 'none' and NULL in
// every stored request) and, at `schema_version` 1, the reasoning_tokens table, and says which it
// has afterwards. What
// could not be added (a read-only file, a writer holding the lock past the busy timeout) is read
// as zero counts, no reasoning and unknown usage, and records are written without it.
LaterColumns add_later_columns(const Connection& connection, int schema_version);

} // namespace llmrepro::store::detail
