// The in-place upgrade of an older audit database to the current schema version (3). From
// version 1 the token rows become one token blob per request and list (token_blob.cpp), their
// texts interned in token_texts; from version 2 every blob is written again in the current blob
// format. Then the requests table is rebuilt with `text` and `reasoning_text` NULL wherever they
// are their tokens' texts one after another.
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/audit_database.hpp"
#include "store/detail/record_reader.hpp"
#include "store/detail/schema.hpp"
#include "store/detail/token_blob.hpp"
#include "store/detail/token_texts.hpp"

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

// Binds `tokens` packed (kept alive in `blob`), or NULL where the list is empty; interns their
// texts first.
Result<void> bind_packed(sqlite3_stmt* statement, int index,
                         const std::vector<core::TokenLogprob>& tokens, TextInterner& texts,
                         std::string& blob) {
  if (tokens.empty()) {
    sqlite3_bind_null(statement, index);
    return {};
  }
  std::vector<std::uint64_t> ids;
  LLMREPRO_TRY(texts.intern(tokens, ids));
  blob = encode_token_blob(tokens, ids);
  sqlite3_bind_blob64(statement, index, blob.data(), blob.size(), SQLITE_STATIC);
  return {};
}

// Version 1: packs every request's rows of `table` (tokens or reasoning_tokens) into `column` of
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
  std::string blob;
  const auto flush = [&]() -> Result<void> {
    if (tokens.empty()) return {};
    sqlite3_bind_int64(store.get(), 1, current);
    LLMREPRO_TRY(bind_packed(store.get(), 2, tokens, texts, blob));
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

// Version 1 to 2's part: the token tables packed into new token_texts and packed_tokens tables,
// then dropped. Returns the token rows packed.
Result<std::int64_t> pack_version_1(const Connection& connection, TextInterner& texts) {
  LLMREPRO_TRY(create_table(connection, Table::token_texts));
  LLMREPRO_TRY(create_table(connection, Table::packed_tokens));
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
  return packed;
}

// Version 2's blobs written again in the current format, into a new packed_tokens table.
// Returns the tokens repacked.
Result<std::int64_t> repack_version_2(const Connection& connection, TextInterner& texts) {
  LLMREPRO_TRY(connection.exec("ALTER TABLE packed_tokens RENAME TO packed_tokens_version_2"));
  LLMREPRO_TRY(create_table(connection, Table::packed_tokens));
  LLMREPRO_TRY(texts.prepare());
  TokenTexts by_id;
  LLMREPRO_TRY_ASSIGN(by_id, read_token_texts(connection));
  Statement rows;
  LLMREPRO_TRY_ASSIGN(rows, connection.prepare("SELECT request_id, answer, reasoning FROM "
                                               "packed_tokens_version_2 ORDER BY request_id",
                                               ErrorCode::input));
  Statement store;
  LLMREPRO_TRY_ASSIGN(store, connection.prepare("INSERT INTO packed_tokens (request_id, answer, "
                                                "reasoning) VALUES (?1, ?2, ?3)"));
  std::int64_t repacked = 0;
  std::string answer_blob;
  std::string reasoning_blob;
  auto read = connection.for_each_row(
      rows.get(), "cannot read the packed tokens", [&](sqlite3_stmt* row) -> Result<void> {
        const std::int64_t request_id = column_int64(row, 0);
        core::Completion tokens;
        LLMREPRO_TRY(decode_packed_row(connection, row, 1, request_id, by_id, tokens));
        sqlite3_bind_int64(store.get(), 1, request_id);
        LLMREPRO_TRY(bind_packed(store.get(), 2, tokens.tokens, texts, answer_blob));
        LLMREPRO_TRY(bind_packed(store.get(), 3, tokens.reasoning_tokens, texts, reasoning_blob));
        repacked +=
            static_cast<std::int64_t>(tokens.tokens.size() + tokens.reasoning_tokens.size());
        return connection.step_done(store.get(), "cannot store packed tokens");
      });
  if (!read) return read.error();
  LLMREPRO_TRY(connection.exec("DROP TABLE packed_tokens_version_2"));
  return repacked;
}

// Which requests' text and reasoning_text are their tokens' texts one after another (by request
// id, ascending; requests without tokens are not listed). A packed row of a missing request is
// an error, as the reader makes it.
struct DerivedTexts {
  std::int64_t request_id = 0;
  bool text = false;
  bool reasoning_text = false;
};
Result<std::vector<DerivedTexts>> derived_texts(const Connection& connection) {
  TokenTexts texts;
  LLMREPRO_TRY_ASSIGN(texts, read_token_texts(connection));
  Statement rows;
  LLMREPRO_TRY_ASSIGN(
      rows, connection.prepare("SELECT p.request_id, p.answer, p.reasoning, r.id, r.text, "
                               "r.reasoning_text FROM packed_tokens p LEFT JOIN "
                               "requests r ON r.id = p.request_id ORDER BY p.request_id",
                               ErrorCode::input));
  std::vector<DerivedTexts> derived;
  auto read = connection.for_each_row(
      rows.get(), "cannot read the packed tokens", [&](sqlite3_stmt* row) -> Result<void> {
        const std::int64_t request_id = column_int64(row, 0);
        if (column_is_null(row, 3))
          return Result<void>{
              connection.corrupt("tokens of a missing request " + std::to_string(request_id))};
        core::Completion tokens;
        LLMREPRO_TRY(decode_packed_row(connection, row, 1, request_id, texts, tokens));
        derived.push_back({request_id, is_token_concatenation(column_text(row, 4), tokens.tokens),
                           is_token_concatenation(column_text(row, 5), tokens.reasoning_tokens)});
        return Result<void>{};
      });
  if (!read) return read.error();
  return derived;
}

// The requests table rebuilt as the current version defines it, every row copied as it is but
// `text` and `reasoning_text`, NULL where `derived` (or, for a request without tokens, an empty
// text) says they are their tokens' texts.
Result<void> rebuild_requests(const Connection& connection,
                              const std::vector<DerivedTexts>& derived) {
  LLMREPRO_TRY(connection.exec("ALTER TABLE requests RENAME TO requests_version_2"));
  LLMREPRO_TRY(create_table(connection, Table::requests));
  std::vector<std::string> columns;
  {
    Statement info;
    LLMREPRO_TRY_ASSIGN(info, connection.prepare("PRAGMA table_info(requests)", ErrorCode::input));
    LLMREPRO_TRY(connection.for_each_row(info.get(), "cannot read the requests table",
                                         [&](sqlite3_stmt* row) -> Result<void> {
                                           columns.push_back(column_text(row, 1));
                                           return Result<void>{};
                                         }));
  }
  std::string names;
  std::string parameters;
  int text = -1;
  int reasoning_text = -1;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    names += (i == 0 ? "" : ", ") + columns[i];
    parameters += (i == 0 ? "?" : ", ?") + std::to_string(i + 1);
    if (columns[i] == "text") text = static_cast<int>(i);
    if (columns[i] == "reasoning_text") reasoning_text = static_cast<int>(i);
  }
  Statement rows;
  LLMREPRO_TRY_ASSIGN(
      rows, connection.prepare(("SELECT " + names + " FROM requests_version_2 ORDER BY id").c_str(),
                               ErrorCode::input));
  Statement insert;
  LLMREPRO_TRY_ASSIGN(
      insert, connection.prepare(
                  ("INSERT INTO requests (" + names + ") VALUES (" + parameters + ")").c_str()));
  std::size_t next = 0; // in `derived`, whose ids ascend as the rows do
  LLMREPRO_TRY(connection.for_each_row(
      rows.get(), "cannot read the requests", [&](sqlite3_stmt* row) -> Result<void> {
        const std::int64_t id = column_int64(row, 0);
        while (next < derived.size() && derived[next].request_id < id) ++next;
        const bool has_tokens = next < derived.size() && derived[next].request_id == id;
        const auto from_tokens = [&](int column, bool derived_here) {
          return has_tokens ? derived_here : sqlite3_column_bytes(row, column) == 0;
        };
        const bool null_text = from_tokens(text, has_tokens && derived[next].text);
        const bool null_reasoning =
            from_tokens(reasoning_text, has_tokens && derived[next].reasoning_text);
        for (int i = 0; i < static_cast<int>(columns.size()); ++i) {
          if ((i == text && null_text) || (i == reasoning_text && null_reasoning))
            sqlite3_bind_null(insert.get(), i + 1);
          else
            sqlite3_bind_value(insert.get(), i + 1, sqlite3_column_value(row, i));
        }
        return connection.step_done(insert.get(), "cannot copy a request");
      }));
  return connection.exec("DROP TABLE requests_version_2");
}

} // namespace

Result<std::int64_t> upgrade_schema(const Connection& connection) {
  if (sqlite3_db_readonly(connection.handle(), "main") == 1)
    return connection.failure(ErrorCode::environment,
                              "is of an older schema version and read-only, so it cannot be "
                              "upgraded");
  LLMREPRO_TRY(connection.exec("BEGIN IMMEDIATE", ErrorCode::environment));
  TextInterner texts(connection);
  auto upgraded = [&]() -> Result<std::int64_t> {
    // Checked again under the write lock: another process may have upgraded it meanwhile.
    int version = 0;
    LLMREPRO_TRY_ASSIGN(version, check_schema_version(connection));
    if (version == AuditDatabase::k_schema_version) return std::int64_t{0};
    std::int64_t packed = 0;
    if (version == 1) {
      LLMREPRO_TRY_ASSIGN(packed, pack_version_1(connection, texts));
    } else {
      LLMREPRO_TRY_ASSIGN(packed, repack_version_2(connection, texts));
    }
    std::vector<DerivedTexts> derived;
    LLMREPRO_TRY_ASSIGN(derived, derived_texts(connection));
    LLMREPRO_TRY(rebuild_requests(connection, derived));
    const std::string set_version = "UPDATE meta SET value = '" +
                                    std::to_string(AuditDatabase::k_schema_version) +
                                    "' WHERE key = 'schema_version'";
    LLMREPRO_TRY(connection.exec(set_version.c_str()));
    LLMREPRO_TRY(connection.exec("COMMIT"));
    return packed;
  }();
  if (!upgraded) (void)connection.exec("ROLLBACK");
  return upgraded;
}

} // namespace llmrepro::store::detail
