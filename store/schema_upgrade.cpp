// The in-place upgrade of a version 1 audit database to version 2: the token rows become one
// token blob per request and list (token_blob.cpp), their texts interned in token_texts.
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/detail/record_reader.hpp"
#include "store/detail/schema.hpp"
#include "store/detail/token_blob.hpp"
#include "store/detail/token_texts.hpp"

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

constexpr const char* k_packed_tables_sql = R"sql(
CREATE TABLE token_texts (id INTEGER PRIMARY KEY, text BLOB NOT NULL UNIQUE);
CREATE TABLE packed_tokens (request_id INTEGER PRIMARY KEY, answer BLOB, reasoning BLOB);
)sql";

// Packs every request's rows of `table` (tokens or reasoning_tokens) into `column` of
// packed_tokens (answer or reasoning), one request at a time so that memory holds one request's
// tokens. Returns the number of rows packed.
Result<std::int64_t> pack_table(const Connection& connection, TextInterner& texts,
                                const char* table, const char* column) {
  Statement rows;
  const std::string select =
      std::string("SELECT request_id, position, token, logprob, c1_token, c1_logprob, c2_token, "
                  "c2_logprob, more FROM ") +
      table + " ORDER BY request_id, position";
  LLMREPRO_TRY_ASSIGN(rows, connection.prepare(select.c_str(), ErrorCode::input));
  Statement store;
  const std::string upsert = std::string("INSERT INTO packed_tokens (request_id, ") + column +
                             ") VALUES (?1, ?2) ON CONFLICT (request_id) DO UPDATE SET " + column +
                             " = excluded." + column;
  LLMREPRO_TRY_ASSIGN(store, connection.prepare(upsert.c_str()));

  std::int64_t packed = 0;
  std::int64_t current = 0;
  std::vector<core::TokenLogprob> tokens;
  const auto flush = [&]() -> Result<void> {
    if (tokens.empty()) return {};
    LLMREPRO_TRY(texts.intern(tokens));
    const std::string blob =
        encode_token_blob(tokens, [&](const std::string& text) { return texts.id_of(text); });
    sqlite3_bind_int64(store.get(), 1, current);
    sqlite3_bind_blob64(store.get(), 2, blob.data(), blob.size(), SQLITE_STATIC);
    LLMREPRO_TRY(connection.step_done(store.get(), "cannot store packed tokens"));
    packed += static_cast<std::int64_t>(tokens.size());
    tokens.clear();
    return {};
  };
  auto read = connection.for_each_row(
      rows.get(), "cannot read the token rows", [&](sqlite3_stmt* row) -> Result<void> {
        const std::int64_t request_id = column_int64(row, 0);
        if (request_id != current) {
          LLMREPRO_TRY(flush());
          current = request_id;
        }
        return append_version_1_token(connection, row, request_id, tokens);
      });
  if (!read) return read.error();
  LLMREPRO_TRY(flush());
  return packed;
}

Result<bool> has_table(const Connection& connection, const char* name) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("SELECT count(*) FROM sqlite_master WHERE "
                                                    "type = 'table' AND name = ?1",
                                                    ErrorCode::input));
  const std::string table = name;
  bind_text(statement.get(), 1, table);
  if (sqlite3_step(statement.get()) != SQLITE_ROW)
    return connection.failure(ErrorCode::input, "cannot list the tables");
  return sqlite3_column_int(statement.get(), 0) > 0;
}

} // namespace

Result<std::int64_t> upgrade_to_version_2(const Connection& connection) {
  if (sqlite3_db_readonly(connection.handle(), "main") == 1)
    return connection.failure(ErrorCode::environment,
                              "is schema version 1 and read-only, so it cannot be upgraded");
  LLMREPRO_TRY(connection.exec("BEGIN IMMEDIATE", ErrorCode::environment));
  TextInterner texts(connection);
  auto upgraded = [&]() -> Result<std::int64_t> {
    // Checked again under the write lock: another process may have upgraded it meanwhile.
    int version = 0;
    LLMREPRO_TRY_ASSIGN(version, check_schema_version(connection));
    if (version != 1) return std::int64_t{0};
    LLMREPRO_TRY(connection.exec(k_packed_tables_sql));
    LLMREPRO_TRY(texts.prepare());
    std::int64_t packed = 0;
    LLMREPRO_TRY_ASSIGN(packed, pack_table(connection, texts, "tokens", "answer"));
    bool reasoning = false;
    LLMREPRO_TRY_ASSIGN(reasoning, has_table(connection, "reasoning_tokens"));
    if (reasoning) {
      std::int64_t reasoning_packed = 0;
      LLMREPRO_TRY_ASSIGN(reasoning_packed,
                          pack_table(connection, texts, "reasoning_tokens", "reasoning"));
      packed += reasoning_packed;
    }
    // Version 1 read such rows as an error; they are not carried over silently either.
    {
      Statement orphans;
      LLMREPRO_TRY_ASSIGN(orphans,
                          connection.prepare("SELECT min(request_id) FROM packed_tokens WHERE "
                                             "request_id NOT IN (SELECT id FROM requests)"));
      if (sqlite3_step(orphans.get()) == SQLITE_ROW && !column_is_null(orphans.get(), 0))
        return connection.corrupt("token rows of a missing request " +
                                  std::to_string(column_int64(orphans.get(), 0)));
    }
    LLMREPRO_TRY(connection.exec("DROP TABLE tokens; DROP TABLE IF EXISTS reasoning_tokens;"));
    LLMREPRO_TRY(connection.exec("UPDATE meta SET value = '2' WHERE key = 'schema_version'"));
    LLMREPRO_TRY(connection.exec("COMMIT"));
    return packed;
  }();
  if (!upgraded) (void)connection.exec("ROLLBACK");
  return upgraded;
}

} // namespace llmrepro::store::detail
