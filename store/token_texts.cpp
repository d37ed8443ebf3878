#include "store/detail/token_texts.hpp"

#include <algorithm>
#include <utility>

namespace llmrepro::store::detail {

using core::ErrorCode;
using core::Result;

namespace {

// Token texts are bytes (an endpoint may split a UTF-8 character between tokens), so they are
// bound and read as BLOBs: SQLite keeps them exactly and compares them bytewise.
void bind_bytes(sqlite3_stmt* statement, int index, std::string_view bytes) {
  // Never a null pointer: SQLite binds NULL for one, and an empty text is a text.
  sqlite3_bind_blob64(statement, index, bytes.empty() ? "" : bytes.data(), bytes.size(),
                      SQLITE_STATIC);
}

} // namespace

TextInterner::TextInterner(const Connection& connection) : m_connection(connection) {}

Result<void> TextInterner::prepare() {
  LLMREPRO_TRY_ASSIGN(m_find, m_connection.prepare("SELECT id FROM token_texts WHERE text = ?1"));
  LLMREPRO_TRY_ASSIGN(m_insert, m_connection.prepare("INSERT INTO token_texts (text) VALUES (?1)"));
  return {};
}

Result<std::uint64_t> TextInterner::intern_text(std::string_view text) {
  if (const auto cached = m_ids.find(text)) return *cached;
  {
    const StatementUse use(m_find.get());
    bind_bytes(m_find.get(), 1, text);
    const int step = sqlite3_step(m_find.get());
    if (step == SQLITE_ROW) {
      // Committed before this transaction began (this one's own texts are in m_ids already), so
      // it stays whatever becomes of this transaction.
      const auto id = static_cast<std::uint64_t>(sqlite3_column_int64(m_find.get(), 0));
      m_ids.insert(text, id, false);
      return id;
    }
    if (step != SQLITE_DONE)
      return m_connection.failure(ErrorCode::environment, "cannot look up a token text");
  }
  bind_bytes(m_insert.get(), 1, text);
  LLMREPRO_TRY(m_connection.step_done(m_insert.get(), "cannot store a token text"));
  const auto id = static_cast<std::uint64_t>(sqlite3_last_insert_rowid(m_connection.handle()));
  m_ids.insert(text, id, true);
  return id;
}

Result<void> TextInterner::intern(const std::vector<core::TokenLogprob>& tokens,
                                  std::vector<std::uint64_t>& ids) {
  for (const auto& token : tokens) {
    std::uint64_t id = 0;
    LLMREPRO_TRY_ASSIGN(id, intern_text(token.token));
    ids.push_back(id);
    // A token's first candidate is usually the token itself: its id is known without a lookup.
    for (const auto& candidate : token.top) {
      std::uint64_t candidate_id = id;
      if (candidate.token != token.token)
        LLMREPRO_TRY_ASSIGN(candidate_id, intern_text(candidate.token));
      ids.push_back(candidate_id);
    }
  }
  return {};
}

void TextInterner::commit() { m_ids.keep_added(); }

void TextInterner::rollback() { m_ids.forget_added(); }

Result<TokenTexts> read_token_texts(const Connection& connection) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      connection.prepare("SELECT id, text FROM token_texts", ErrorCode::input));
  std::vector<std::pair<std::int64_t, std::string>> rows;
  std::int64_t largest = 0;
  LLMREPRO_TRY(connection.for_each_row(
      statement.get(), "cannot read the token texts", [&](sqlite3_stmt* row) -> Result<void> {
        const std::int64_t id = column_int64(row, 0);
        if (id < 0)
          return Result<void>{
              connection.corrupt("token text id " + std::to_string(id) + " is negative")};
        const auto* bytes = static_cast<const char*>(sqlite3_column_blob(row, 1));
        const auto size = static_cast<std::size_t>(sqlite3_column_bytes(row, 1));
        rows.emplace_back(id, bytes == nullptr ? std::string() : std::string(bytes, size));
        largest = std::max(largest, id);
        return Result<void>{};
      }));
  // Ids are assigned 1, 2, 3... and never deleted: ids far beyond the row count are a corrupt
  // table, not a reason to allocate a huge index.
  if (largest > 2 * static_cast<std::int64_t>(rows.size()) + 1024)
    return connection.corrupt("token text id " + std::to_string(largest) + " is out of range");
  TokenTexts texts;
  texts.text.resize(static_cast<std::size_t>(largest) + 1);
  texts.present.resize(static_cast<std::size_t>(largest) + 1, 0);
  for (auto& [id, text] : rows) {
    texts.text[static_cast<std::size_t>(id)] = std::move(text);
    texts.present[static_cast<std::size_t>(id)] = 1;
  }
  return texts;
}

} // namespace llmrepro::store::detail
