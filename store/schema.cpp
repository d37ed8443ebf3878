// The audit database's layout (AuditDatabase::k_schema_version 3; version 1 differed in how
// tokens were stored, see tokens below, and versions 1 and 2 stored every text):
//   meta       key/value: schema_version, format, probe_activity (JSON, written after each run),
//              server:<index> (an endpoint's server description, JSON; absent: none),
//              capabilities:<index> (its capability preflight, JSON; absent: none ran)
//   audit      one row: id, times, status, the AuditConfig as JSON, the suite's source, errors
//   endpoints  one row per endpoint, by index
//   prompts    one row per suite prompt, by index, every Prompt field
//   requests   one row per logical request, unique on its plan key; rowid = recorded order; `text`
//              is NULL where it is its answer tokens' texts one after another, which the readers
//              fill in from them (version 3; nearly every completion, and most of the row's bytes
//              before). numbers_* count the log probabilities of its response that were no finite
//              number (core::NumberAnomalies). Those five columns came after version 1 was released
//              and are additive, so the version stayed: open() adds them to a database that lacks
//              them (every count 0), and older builds, which name their columns, still read and
//              write it. reasoning_text and reasoning_split (core::ReasoningSplit by name) hold a
//              reasoning model's reasoning beside the answer in `text` (reasoning_text NULL, as
//              `text`, where it is the reasoning tokens' texts); added later the same way ('' and
//              'none' in older rows). usage_prompt_tokens and usage_reasoning_tokens
//              (core::TokenUsage) are what the endpoint said the prompt and the hidden reasoning
//              used, NULL where it did not say; added later the same way (NULL in older rows), as
//              were lone_surrogates (0) and usage_cached_prompt_tokens (the prompt tokens the
//              server said it served from its prompt cache, TokenUsage::cached_prompt; NULL).
//              tool_calls holds core::Completion::tool_calls as core::tool_calls_json, NULL when
//              the completion called no tool; added later the same way (NULL in older rows)
//   token_texts  (versions 2 and 3) each distinct token text of the audit once: id (1, 2, 3...)
//              and its exact bytes as a BLOB (a token may hold part of a UTF-8 character)
//   packed_tokens  (versions 2 and 3) one row per request that has tokens: `answer` holds
//              core::Completion::tokens and `reasoning` core::Completion::reasoning_tokens, each a
//              token blob (token_blob.cpp; the byte format is in docs/design.md, "Token blobs":
//              version 2 in schema version 3, version 1 in schema version 2) or NULL when the
//              list is empty
//   tokens, reasoning_tokens  (version 1 only) one row per token, keyed (request_id, position),
//              with candidates 1 and 2 in columns and the rest as JSON in `more`;
//              upgrade_schema() (schema_upgrade.cpp) packs them and drops both tables
//   semantic, semantic_prompts  (only once --embeddings measured them) the embedding model and
//              threshold, and per prompt the pairwise similarity statistics (semantic_tables.cpp)
// Version 1 stored a row per token (about 62 bytes a token); version 2 packed a completion's tokens
// into one value (about a sixth of that), which is also what makes recording and `report` cheap;
// version 3 packs them tighter and stores no text its tokens already spell (bench/README.md has
// the bytes).
#include "store/detail/schema.hpp"

#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

constexpr const char* k_format = "llmrepro.audit";

constexpr const char* k_schema_sql = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE audit (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  id TEXT NOT NULL, started_ms INTEGER NOT NULL, finished_ms INTEGER NOT NULL,
  status TEXT NOT NULL, config TEXT NOT NULL, suite_source TEXT NOT NULL, errors TEXT NOT NULL);
CREATE TABLE endpoints (
  idx INTEGER PRIMARY KEY, url TEXT NOT NULL, dialect TEXT NOT NULL, model TEXT NOT NULL,
  embedded INTEGER NOT NULL);
CREATE TABLE prompts (
  idx INTEGER PRIMARY KEY, id TEXT NOT NULL, text TEXT, messages TEXT NOT NULL, max_tokens INTEGER,
  tags TEXT NOT NULL, expect TEXT NOT NULL, extract TEXT NOT NULL, response_format TEXT NOT NULL,
  source_line INTEGER NOT NULL);
)sql";

constexpr const char* k_token_texts_sql =
    "CREATE TABLE token_texts (id INTEGER PRIMARY KEY, text BLOB NOT NULL UNIQUE)";
constexpr const char* k_packed_tokens_sql =
    "CREATE TABLE packed_tokens (request_id INTEGER PRIMARY KEY, answer BLOB, reasoning BLOB)";

// Version 3: `text` and `reasoning_text` are NULL where they are their tokens' texts one after
// another (read back from the tokens), which is nearly always.
constexpr const char* k_requests_sql = R"sql(
CREATE TABLE requests (
  id INTEGER PRIMARY KEY,
  endpoint_index INTEGER NOT NULL, prompt_index INTEGER NOT NULL, concurrency INTEGER NOT NULL,
  probe TEXT NOT NULL, repeat INTEGER NOT NULL,
  ok INTEGER NOT NULL, http_status INTEGER NOT NULL, error TEXT NOT NULL, attempts INTEGER NOT NULL,
  started_ms INTEGER NOT NULL, finished_ms INTEGER NOT NULL,
  text TEXT, has_logprobs INTEGER NOT NULL, finish_reason TEXT NOT NULL,
  system_fingerprint TEXT NOT NULL, model TEXT NOT NULL, completion_tokens INTEGER NOT NULL,
  numbers_nan INTEGER NOT NULL DEFAULT 0, numbers_infinity INTEGER NOT NULL DEFAULT 0,
  numbers_negative_infinity INTEGER NOT NULL DEFAULT 0, numbers_overflow INTEGER NOT NULL DEFAULT 0,
  numbers_null INTEGER NOT NULL DEFAULT 0,
  reasoning_text TEXT DEFAULT '', reasoning_split TEXT NOT NULL DEFAULT 'none',
  usage_prompt_tokens INTEGER, usage_reasoning_tokens INTEGER,
  lone_surrogates INTEGER NOT NULL DEFAULT 0, usage_cached_prompt_tokens INTEGER, tool_calls TEXT,
  UNIQUE (endpoint_index, prompt_index, concurrency, probe, repeat));
)sql";

// The requests columns that came after version 1 was released, with their definitions: the
// counts of Completion::numbers (in NumberAnomalies order), then the reasoning, then the usage.
enum class ColumnGroup { numbers, reasoning, usage, text, cache, tool_calls };
struct LaterColumn {
  const char* name;
  const char* definition;
  ColumnGroup group;
};
constexpr LaterColumn k_later_columns[] = {
    {"numbers_nan", "INTEGER NOT NULL DEFAULT 0", ColumnGroup::numbers},
    {"numbers_infinity", "INTEGER NOT NULL DEFAULT 0", ColumnGroup::numbers},
    {"numbers_negative_infinity", "INTEGER NOT NULL DEFAULT 0", ColumnGroup::numbers},
    {"numbers_overflow", "INTEGER NOT NULL DEFAULT 0", ColumnGroup::numbers},
    {"numbers_null", "INTEGER NOT NULL DEFAULT 0", ColumnGroup::numbers},
    {"reasoning_text", "TEXT NOT NULL DEFAULT ''", ColumnGroup::reasoning},
    {"reasoning_split", "TEXT NOT NULL DEFAULT 'none'", ColumnGroup::reasoning},
    {"usage_prompt_tokens", "INTEGER", ColumnGroup::usage},
    {"usage_reasoning_tokens", "INTEGER", ColumnGroup::usage},
    {"lone_surrogates", "INTEGER NOT NULL DEFAULT 0", ColumnGroup::text},
    {"usage_cached_prompt_tokens", "INTEGER", ColumnGroup::cache},
    {"tool_calls", "TEXT", ColumnGroup::tool_calls},
};

// The flag of `columns` that says whether `group` is there.
bool& has_group(LaterColumns& columns, ColumnGroup group) {
  switch (group) {
  case ColumnGroup::numbers: return columns.numbers;
  case ColumnGroup::reasoning: return columns.reasoning;
  case ColumnGroup::usage: return columns.usage;
  case ColumnGroup::text: return columns.text;
  case ColumnGroup::cache: return columns.cache;
  case ColumnGroup::tool_calls: return columns.tool_calls;
  }
  return columns.usage;
}

constexpr const char* k_reasoning_tokens_sql = R"sql(
CREATE TABLE IF NOT EXISTS reasoning_tokens (
  request_id INTEGER NOT NULL, position INTEGER NOT NULL, token TEXT NOT NULL, logprob REAL,
  c1_token TEXT, c1_logprob REAL, c2_token TEXT, c2_logprob REAL, more TEXT,
  PRIMARY KEY (request_id, position)) WITHOUT ROWID;
)sql";

Result<std::set<std::string>> request_column_names(const Connection& connection) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      connection.prepare("PRAGMA table_info(requests)", ErrorCode::input));
  std::set<std::string> names;
  LLMREPRO_TRY(connection.for_each_row(statement.get(), "cannot read the requests table",
                                       [&](sqlite3_stmt* row) -> Result<void> {
                                         names.insert(column_text(row, 1));
                                         return Result<void>{};
                                       }));
  return names;
}

} // namespace

Result<void> check_new_file(const Connection& connection) {
  // An empty file is an empty SQLite database; anything with tables belongs to something else.
  auto statement = connection.prepare("SELECT count(*), sum(name = 'meta') FROM sqlite_master",
                                      ErrorCode::input);
  if (!statement || sqlite3_step(statement->get()) != SQLITE_ROW) {
    if (sqlite3_errcode(connection.handle()) == SQLITE_NOTADB)
      return connection.corrupt("is not an SQLite database");
    return connection.failure(ErrorCode::environment, "cannot read");
  }
  if (sqlite3_column_int(statement->get(), 1) > 0)
    return connection.corrupt("already holds an audit");
  if (sqlite3_column_int(statement->get(), 0) > 0)
    return connection.corrupt("holds another program's tables, not an audit");
  return {};
}

Result<void> create_tables(const Connection& connection) {
  LLMREPRO_TRY(connection.exec(k_schema_sql));
  for (const Table table : {Table::requests, Table::token_texts, Table::packed_tokens})
    LLMREPRO_TRY(create_table(connection, table));
  return {};
}

Result<void> create_table(const Connection& connection, Table table) {
  switch (table) {
  case Table::requests: return connection.exec(k_requests_sql);
  case Table::token_texts: return connection.exec(k_token_texts_sql);
  case Table::packed_tokens: return connection.exec(k_packed_tokens_sql);
  }
  return core::make_error(ErrorCode::internal, "no such table");
}

Result<void> write_schema_version(const Connection& connection) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("INSERT INTO meta (key, value) VALUES "
                                                    "('schema_version', ?1), ('format', ?2)"));
  const std::string version = std::to_string(AuditDatabase::k_schema_version);
  const std::string format = k_format;
  bind_text(statement.get(), 1, version);
  bind_text(statement.get(), 2, format);
  return connection.step_done(statement.get(), "cannot write the schema version");
}

Result<int> check_schema_version(const Connection& connection) {
  sqlite3_stmt* raw = nullptr;
  const int prepared =
      sqlite3_prepare_v2(connection.handle(), "SELECT value FROM meta WHERE key = 'schema_version'",
                         -1, &raw, nullptr);
  const Statement statement(raw);
  if (prepared != SQLITE_OK) {
    if (sqlite3_errcode(connection.handle()) == SQLITE_NOTADB)
      return connection.corrupt("is not an SQLite database");
    return connection.corrupt("is not an llmrepro audit database (no meta table)");
  }
  const int step = sqlite3_step(raw);
  if (step != SQLITE_ROW) {
    if (step == SQLITE_DONE) return connection.corrupt("has no schema version");
    return connection.failure(ErrorCode::input, "cannot read the schema version");
  }
  const std::string version = column_text(raw, 0);
  for (int known = 1; known <= AuditDatabase::k_schema_version; ++known)
    if (version == std::to_string(known)) return known;
  return connection.corrupt("has schema version " + version + "; this build reads versions 1 to " +
                            std::to_string(AuditDatabase::k_schema_version));
}

// In one transaction, because another process may be adding the columns too: the check is
// repeated under the write lock.
LaterColumns add_later_columns(const Connection& connection, int schema_version) {
  // Version 2 keeps the reasoning's tokens in packed_tokens: only version 1 has a table for them.
  const bool token_tables = schema_version < 2;
  const auto missing = [&]() -> Result<std::vector<LaterColumn>> {
    auto names = request_column_names(connection);
    if (!names) return names.error();
    std::vector<LaterColumn> absent;
    for (const LaterColumn& column : k_later_columns)
      if (names->count(column.name) == 0) absent.push_back(column);
    return absent;
  };
  // What the file has, when it cannot be given the rest.
  const auto present = [&]() {
    LaterColumns columns;
    auto absent = missing();
    if (!absent) return LaterColumns{false, false, false, false, false};
    for (const LaterColumn& column : *absent) has_group(columns, column.group) = false;
    if (columns.reasoning && token_tables &&
        !connection.exec("SELECT 1 FROM reasoning_tokens LIMIT 0", ErrorCode::input))
      columns.reasoning = false;
    return columns;
  };
  if (const LaterColumns now = present();
      now.numbers && now.reasoning && now.usage && now.text && now.cache && now.tool_calls)
    return now;
  if (!connection.exec("BEGIN IMMEDIATE")) return present();
  auto added = [&]() -> Result<void> {
    auto still_absent = missing();
    if (!still_absent) return still_absent.error();
    for (const LaterColumn& column : *still_absent) {
      const std::string sql =
          std::string("ALTER TABLE requests ADD COLUMN ") + column.name + " " + column.definition;
      LLMREPRO_TRY(connection.exec(sql.c_str()));
    }
    if (token_tables) LLMREPRO_TRY(connection.exec(k_reasoning_tokens_sql));
    return connection.exec("COMMIT");
  }();
  if (!added) (void)connection.exec("ROLLBACK");
  return present();
}

} // namespace llmrepro::store::detail
