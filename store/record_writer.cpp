#include "store/detail/record_writer.hpp"

#include <optional>
#include <span>

#include "core/result.hpp"
#include "core/tool_calls.hpp"
#include "store/detail/json_columns.hpp"
#include "store/detail/token_blob.hpp"

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

// The requests columns every database has, bound as ?1..?17; then the numbers_* counts and the
// reasoning and the usage, where the database has them (add_later_columns).
constexpr const char* k_request_columns =
    "endpoint_index, prompt_index, concurrency, probe, repeat, ok, http_status, error, attempts, "
    "started_ms, finished_ms, text, has_logprobs, finish_reason, system_fingerprint, model, "
    "completion_tokens";
constexpr int k_request_column_count = 17;
constexpr const char* k_numbers_columns = ", numbers_nan, numbers_infinity, "
                                          "numbers_negative_infinity, numbers_overflow, "
                                          "numbers_null";
constexpr int k_numbers_column_count = 5;
constexpr const char* k_reasoning_columns = ", reasoning_text, reasoning_split";
constexpr int k_reasoning_column_count = 2;
constexpr const char* k_usage_columns = ", usage_prompt_tokens, usage_reasoning_tokens";
constexpr int k_usage_column_count = 2;
constexpr const char* k_text_columns = ", lone_surrogates";
constexpr int k_text_column_count = 1;
constexpr const char* k_cache_columns = ", usage_cached_prompt_tokens";
constexpr int k_cache_column_count = 1;
constexpr const char* k_tool_calls_columns = ", tool_calls";
constexpr int k_tool_calls_column_count = 1;

// Binds a usage count, NULL where the endpoint did not say.
void bind_count(sqlite3_stmt* statement, int index, const std::optional<long>& count) {
  if (count)
    sqlite3_bind_int64(statement, index, *count);
  else
    sqlite3_bind_null(statement, index);
}

std::string insert_request_sql(LaterColumns columns) {
  std::string sql = std::string("INSERT INTO requests (") + k_request_columns;
  int count = k_request_column_count;
  if (columns.numbers) {
    sql += k_numbers_columns;
    count += k_numbers_column_count;
  }
  if (columns.reasoning) {
    sql += k_reasoning_columns;
    count += k_reasoning_column_count;
  }
  if (columns.usage) {
    sql += k_usage_columns;
    count += k_usage_column_count;
  }
  if (columns.text) {
    sql += k_text_columns;
    count += k_text_column_count;
  }
  if (columns.cache) {
    sql += k_cache_columns;
    count += k_cache_column_count;
  }
  if (columns.tool_calls) {
    sql += k_tool_calls_columns;
    count += k_tool_calls_column_count;
  }
  sql += ") VALUES (";
  for (int i = 1; i <= count; ++i) sql += (i == 1 ? "?" : ", ?") + std::to_string(i);
  return sql + ")";
}

// Binds `text`, or NULL where it is the texts of `tokens` one after another.
void bind_text_or_tokens(sqlite3_stmt* statement, int index, const std::string& text,
                         const std::vector<core::TokenLogprob>& tokens) {
  if (is_token_concatenation(text, tokens))
    sqlite3_bind_null(statement, index);
  else
    bind_text(statement, index, text);
}

// Binds a token blob, or NULL for an empty list; `blob` must live until the statement steps.
void bind_blob(sqlite3_stmt* statement, int index, const std::vector<core::TokenLogprob>& tokens,
               const std::string& blob) {
  if (tokens.empty())
    sqlite3_bind_null(statement, index);
  else
    sqlite3_bind_blob64(statement, index, blob.data(), blob.size(), SQLITE_STATIC);
}

} // namespace

RecordWriter::RecordWriter(const Connection& connection)
    : m_connection(connection), m_texts(connection) {}

Result<void> RecordWriter::prepare(LaterColumns columns) {
  m_columns = columns;
  LLMREPRO_TRY_ASSIGN(
      m_find_request,
      m_connection.prepare("SELECT id FROM requests WHERE endpoint_index = ?1 AND prompt_index = "
                           "?2 AND concurrency = ?3 AND probe = ?4 AND repeat = ?5"));
  LLMREPRO_TRY_ASSIGN(m_delete_tokens,
                      m_connection.prepare("DELETE FROM packed_tokens WHERE request_id = ?1"));
  LLMREPRO_TRY_ASSIGN(m_delete_request, m_connection.prepare("DELETE FROM requests WHERE id = ?1"));
  LLMREPRO_TRY_ASSIGN(m_insert_request, m_connection.prepare(insert_request_sql(columns).c_str()));
  LLMREPRO_TRY_ASSIGN(m_insert_tokens,
                      m_connection.prepare("INSERT INTO packed_tokens (request_id, answer, "
                                           "reasoning) VALUES (?1, ?2, ?3)"));
  return m_texts.prepare();
}

Result<void> RecordWriter::write_record(const core::RequestRecord& record) {
  const auto& planned = record.planned;
  const auto& outcome = record.outcome;
  const std::string probe = core::to_string(planned.probe);
  {
    sqlite3_stmt* statement = m_find_request.get();
    const StatementUse use(statement);
    sqlite3_bind_int(statement, 1, planned.endpoint_index);
    sqlite3_bind_int(statement, 2, planned.prompt_index);
    sqlite3_bind_int(statement, 3, planned.concurrency);
    bind_text(statement, 4, probe);
    sqlite3_bind_int(statement, 5, planned.repeat);
    const int step = sqlite3_step(statement);
    if (step == SQLITE_ROW) {
      const sqlite3_int64 old_id = sqlite3_column_int64(statement, 0);
      sqlite3_bind_int64(m_delete_tokens.get(), 1, old_id);
      if (auto done = m_connection.step_done(m_delete_tokens.get(), "cannot replace a record");
          !done)
        return done;
      sqlite3_bind_int64(m_delete_request.get(), 1, old_id);
      if (auto done = m_connection.step_done(m_delete_request.get(), "cannot replace a record");
          !done)
        return done;
    } else if (step != SQLITE_DONE) {
      return m_connection.failure(ErrorCode::environment, "cannot look up a record");
    }
  }
  const auto& completion = outcome.completion;
  sqlite3_stmt* statement = m_insert_request.get();
  sqlite3_bind_int(statement, 1, planned.endpoint_index);
  sqlite3_bind_int(statement, 2, planned.prompt_index);
  sqlite3_bind_int(statement, 3, planned.concurrency);
  bind_text(statement, 4, probe);
  sqlite3_bind_int(statement, 5, planned.repeat);
  sqlite3_bind_int(statement, 6, outcome.ok ? 1 : 0);
  sqlite3_bind_int(statement, 7, outcome.http_status);
  bind_text(statement, 8, outcome.error);
  sqlite3_bind_int(statement, 9, outcome.attempts);
  sqlite3_bind_int64(statement, 10, outcome.started_ms);
  sqlite3_bind_int64(statement, 11, outcome.finished_ms);
  // NULL where the text is its tokens' texts one after another: read back from them.
  bind_text_or_tokens(statement, 12, completion.text, completion.tokens);
  sqlite3_bind_int(statement, 13, completion.has_logprobs ? 1 : 0);
  bind_text(statement, 14, completion.finish_reason);
  bind_text(statement, 15, completion.system_fingerprint);
  bind_text(statement, 16, completion.model);
  sqlite3_bind_int64(statement, 17, completion.completion_tokens);
  int next = k_request_column_count + 1;
  if (m_columns.numbers) {
    const auto& numbers = completion.numbers;
    sqlite3_bind_int(statement, next++, numbers.nan);
    sqlite3_bind_int(statement, next++, numbers.infinity);
    sqlite3_bind_int(statement, next++, numbers.negative_infinity);
    sqlite3_bind_int(statement, next++, numbers.overflow);
    sqlite3_bind_int(statement, next++, numbers.null);
  }
  const std::string split = core::to_string(completion.reasoning_split);
  if (m_columns.reasoning) {
    bind_text_or_tokens(statement, next++, completion.reasoning_text, completion.reasoning_tokens);
    bind_text(statement, next++, split);
  }
  if (m_columns.usage) {
    bind_count(statement, next++, completion.usage.prompt);
    bind_count(statement, next++, completion.usage.reasoning);
  }
  if (m_columns.text) sqlite3_bind_int(statement, next++, completion.lone_surrogates);
  if (m_columns.cache) bind_count(statement, next++, completion.usage.cached_prompt);
  const std::string tool_calls =
      completion.tool_calls.empty() ? std::string() : core::tool_calls_json(completion.tool_calls);
  if (m_columns.tool_calls) {
    if (tool_calls.empty())
      sqlite3_bind_null(statement, next++);
    else
      bind_text(statement, next++, tool_calls);
  }
  LLMREPRO_TRY(m_connection.step_done(statement, "cannot store a record"));
  const sqlite3_int64 request_id = sqlite3_last_insert_rowid(m_connection.handle());
  return write_tokens(request_id, completion);
}

// One packed_tokens row for both lists; none when both are empty (a failed request).
Result<void> RecordWriter::write_tokens(sqlite3_int64 request_id,
                                        const core::Completion& completion) {
  if (completion.tokens.empty() && completion.reasoning_tokens.empty()) return {};
  m_text_ids.clear();
  LLMREPRO_TRY(m_texts.intern(completion.tokens, m_text_ids));
  const std::size_t answer_ids = m_text_ids.size();
  LLMREPRO_TRY(m_texts.intern(completion.reasoning_tokens, m_text_ids));
  const std::span<const std::uint64_t> ids(m_text_ids);
  const std::string answer = completion.tokens.empty()
                                 ? std::string()
                                 : encode_token_blob(completion.tokens, ids.first(answer_ids));
  const std::string reasoning =
      completion.reasoning_tokens.empty()
          ? std::string()
          : encode_token_blob(completion.reasoning_tokens, ids.subspan(answer_ids));
  sqlite3_stmt* statement = m_insert_tokens.get();
  sqlite3_bind_int64(statement, 1, request_id);
  bind_blob(statement, 2, completion.tokens, answer);
  bind_blob(statement, 3, completion.reasoning_tokens, reasoning);
  return m_connection.step_done(statement, "cannot store the tokens");
}

void RecordWriter::transaction_ended(bool committed) {
  if (committed)
    m_texts.commit();
  else
    m_texts.rollback();
}

Result<void> RecordWriter::write_header(const core::AuditData& header) {
  const std::string config_text = encode_config(header.config);
  const std::string errors_text = encode_strings(header.errors);
  Statement statement;
  LLMREPRO_TRY_ASSIGN(
      statement,
      m_connection.prepare("INSERT INTO audit (singleton, id, started_ms, finished_ms, status, "
                           "config, suite_source, errors) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  bind_text(statement.get(), 1, header.info.id);
  sqlite3_bind_int64(statement.get(), 2, header.info.started_ms);
  sqlite3_bind_int64(statement.get(), 3, header.info.finished_ms);
  bind_text(statement.get(), 4, header.info.status);
  bind_text(statement.get(), 5, config_text);
  bind_text(statement.get(), 6, header.suite.source);
  bind_text(statement.get(), 7, errors_text);
  LLMREPRO_TRY(m_connection.step_done(statement.get(), "cannot write the audit"));

  LLMREPRO_TRY_ASSIGN(statement,
                      m_connection.prepare("INSERT INTO endpoints (idx, url, dialect, "
                                           "model, embedded) VALUES (?1, ?2, ?3, ?4, ?5)"));
  for (std::size_t i = 0; i < header.endpoints.size(); ++i) {
    const auto& endpoint = header.endpoints[i];
    sqlite3_bind_int64(statement.get(), 1, static_cast<sqlite3_int64>(i));
    bind_text(statement.get(), 2, endpoint.url);
    bind_text(statement.get(), 3, endpoint.dialect);
    bind_text(statement.get(), 4, endpoint.model);
    sqlite3_bind_int(statement.get(), 5, endpoint.embedded ? 1 : 0);
    LLMREPRO_TRY(m_connection.step_done(statement.get(), "cannot write an endpoint"));
  }

  LLMREPRO_TRY_ASSIGN(
      statement,
      m_connection.prepare("INSERT INTO prompts (idx, id, text, messages, max_tokens, tags, "
                           "expect, extract, response_format, source_line) VALUES (?1, ?2, ?3, "
                           "?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
  for (std::size_t i = 0; i < header.suite.prompts.size(); ++i) {
    const auto& prompt = header.suite.prompts[i];
    const PromptJsonColumns columns = encode_prompt_columns(prompt);
    sqlite3_stmt* raw = statement.get();
    sqlite3_bind_int64(raw, 1, static_cast<sqlite3_int64>(i));
    bind_text(raw, 2, prompt.id);
    bind_optional_text(raw, 3, prompt.text ? &*prompt.text : nullptr);
    bind_text(raw, 4, columns.messages);
    if (prompt.max_tokens) sqlite3_bind_int(raw, 5, *prompt.max_tokens);
    bind_text(raw, 6, columns.tags);
    bind_text(raw, 7, columns.expect);
    bind_text(raw, 8, columns.extract);
    bind_text(raw, 9, prompt.response_format_json);
    sqlite3_bind_int(raw, 10, prompt.source_line);
    LLMREPRO_TRY(m_connection.step_done(raw, "cannot write a prompt"));
  }
  for (const auto& record : header.records) LLMREPRO_TRY(write_record(record));
  return {};
}

Result<void> RecordWriter::write_status(const std::string& status, std::int64_t finished_ms) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      m_connection.prepare("UPDATE audit SET status = ?1, finished_ms = ?2 "
                                           "WHERE singleton = 1"));
  bind_text(statement.get(), 1, status);
  sqlite3_bind_int64(statement.get(), 2, finished_ms);
  LLMREPRO_TRY(m_connection.step_done(statement.get(), "cannot store the status"));
  if (sqlite3_changes(m_connection.handle()) != 1) return m_connection.corrupt("holds no audit");
  return {};
}

Result<void> RecordWriter::write_endpoint(int index, const core::EndpointInfo& endpoint) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      m_connection.prepare("UPDATE endpoints SET url = ?2, dialect = ?3, "
                                           "model = ?4, embedded = ?5 WHERE idx = ?1"));
  sqlite3_bind_int(statement.get(), 1, index);
  bind_text(statement.get(), 2, endpoint.url);
  bind_text(statement.get(), 3, endpoint.dialect);
  bind_text(statement.get(), 4, endpoint.model);
  sqlite3_bind_int(statement.get(), 5, endpoint.embedded ? 1 : 0);
  LLMREPRO_TRY(m_connection.step_done(statement.get(), "cannot store the endpoint"));
  if (sqlite3_changes(m_connection.handle()) != 1)
    return core::make_error(ErrorCode::internal,
                            m_connection.where() + ": no endpoint " + std::to_string(index));
  return {};
}

Result<void> RecordWriter::write_config(const core::AuditConfig& config) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      m_connection.prepare("UPDATE audit SET config = ?1 WHERE singleton = 1"));
  const std::string encoded = encode_config(config);
  bind_text(statement.get(), 1, encoded);
  LLMREPRO_TRY(m_connection.step_done(statement.get(), "cannot store the configuration"));
  if (sqlite3_changes(m_connection.handle()) != 1) return m_connection.corrupt("holds no audit");
  return {};
}

Result<void> RecordWriter::write_probe_activity(const std::vector<core::ProbeActivity>& activity) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      m_connection.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES "
                                           "('probe_activity', ?1)"));
  const std::string encoded = encode_probe_activity(activity); // bound without a copy
  bind_text(statement.get(), 1, encoded);
  return m_connection.step_done(statement.get(), "cannot store the probe activity");
}

} // namespace llmrepro::store::detail
