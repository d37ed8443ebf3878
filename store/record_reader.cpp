#include "store/detail/record_reader.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.hpp"
#include "core/tool_calls.hpp"
#include "store/detail/json_columns.hpp"
#include "store/detail/token_texts.hpp"

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

// The token columns append_token() reads from `table` (tokens or reasoning_tokens): the request,
// the position, then token, logprob, c1_token, c1_logprob, c2_token, c2_logprob and more.
std::string select_tokens(const char* table) {
  return std::string("SELECT request_id, position, token, logprob, c1_token, c1_logprob, "
                     "c2_token, c2_logprob, more FROM ") +
         table + " ";
}

// Puts `ids` in ascending order and each vector of `parallel` (as many elements) in the same
// order, in place with swaps, so that no second group is allocated. `order` is scratch.
template <typename... Parallel>
void sort_by_ids(std::vector<std::int64_t>& ids, std::vector<std::size_t>& order,
                 std::vector<Parallel>&... parallel) {
  if (std::is_sorted(ids.begin(), ids.end())) return;
  order.resize(ids.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&ids](std::size_t a, std::size_t b) { return ids[a] < ids[b]; });
  // Position k takes the element at order[k]: each cycle of the permutation is walked once, every
  // swap leaving one position final.
  for (std::size_t start = 0; start < order.size(); ++start) {
    std::size_t k = start;
    while (order[k] != start) {
      const std::size_t next = order[k];
      std::swap(ids[k], ids[next]);
      (std::swap(parallel[k], parallel[next]), ...);
      order[k] = k;
      k = next;
    }
    order[k] = k;
  }
}

} // namespace

Result<bool> has_endpoint_prompt_index(const Connection& db) {
  Statement indexes;
  LLMREPRO_TRY_ASSIGN(indexes, db.prepare("SELECT name FROM pragma_index_list('requests') WHERE "
                                          "NOT partial",
                                          ErrorCode::input));
  Statement keys;
  LLMREPRO_TRY_ASSIGN(keys, db.prepare("SELECT name, desc, coll FROM pragma_index_xinfo(?1) WHERE "
                                       "key ORDER BY seqno LIMIT 2",
                                       ErrorCode::input));
  bool found = false;
  auto read = db.for_each_row(
      indexes.get(), "cannot read the indexes of requests",
      [&](sqlite3_stmt* index) -> Result<void> {
        const std::string name = column_text(index, 0);
        bind_text(keys.get(), 1, name);
        std::vector<std::string> leading;
        LLMREPRO_TRY(db.for_each_row(keys.get(), "cannot read the indexes of requests",
                                     [&](sqlite3_stmt* key) -> Result<void> {
                                       if (column_int(key, 1) == 0 &&
                                           column_text(key, 2) == "BINARY")
                                         leading.push_back(column_text(key, 0));
                                       return Result<void>{};
                                     }));
        found = found || leading == std::vector<std::string>{"endpoint_index", "prompt_index"};
        return Result<void>{};
      });
  if (!read) return read.error();
  return found;
}

RecordReader::RecordReader(const Connection& connection, LaterColumns columns, int schema_version)
    : m_connection(connection), m_columns(columns), m_schema_version(schema_version) {}

Result<void> RecordReader::read_header(core::AuditData& data) const {
  const Connection& db = m_connection;
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, db.prepare("SELECT id, started_ms, finished_ms, status, config, "
                                            "suite_source, errors FROM audit WHERE singleton = 1",
                                            ErrorCode::input));
  bool found = false;
  auto read = db.for_each_row(
      statement.get(), "cannot read the audit", [&](sqlite3_stmt* row) -> Result<void> {
        found = true;
        data.info.id = column_text(row, 0);
        data.info.started_ms = column_int64(row, 1);
        data.info.finished_ms = column_int64(row, 2);
        data.info.status = column_text(row, 3);
        LLMREPRO_TRY_ASSIGN(data.config, decode_config(column_text(row, 4), db.where()));
        data.suite.source = column_text(row, 5);
        LLMREPRO_TRY_ASSIGN(data.errors,
                            decode_strings(column_text(row, 6), db.where() + ": errors"));
        return Result<void>{};
      });
  if (!read) return read;
  if (!found) return db.corrupt("holds no audit");

  LLMREPRO_TRY_ASSIGN(statement, db.prepare("SELECT idx, url, dialect, model, embedded FROM "
                                            "endpoints ORDER BY idx",
                                            ErrorCode::input));
  read = db.for_each_row(
      statement.get(), "cannot read the endpoints", [&](sqlite3_stmt* row) -> Result<void> {
        if (column_int64(row, 0) != static_cast<std::int64_t>(data.endpoints.size()))
          return Result<void>{db.corrupt("endpoint indices are not contiguous")};
        core::EndpointInfo endpoint;
        endpoint.url = column_text(row, 1);
        endpoint.dialect = column_text(row, 2);
        endpoint.model = column_text(row, 3);
        endpoint.embedded = column_int(row, 4) != 0;
        data.endpoints.push_back(std::move(endpoint));
        return Result<void>{};
      });
  if (!read) return read;

  LLMREPRO_TRY_ASSIGN(
      statement, db.prepare("SELECT idx, id, text, messages, max_tokens, tags, expect, extract, "
                            "response_format, source_line FROM prompts ORDER BY idx",
                            ErrorCode::input));
  return db.for_each_row(
      statement.get(), "cannot read the suite", [&](sqlite3_stmt* row) -> Result<void> {
        if (column_int64(row, 0) != static_cast<std::int64_t>(data.suite.prompts.size()))
          return Result<void>{db.corrupt("prompt indices are not contiguous")};
        core::Prompt prompt;
        prompt.id = column_text(row, 1);
        if (!column_is_null(row, 2)) prompt.text = column_text(row, 2);
        if (!column_is_null(row, 4)) prompt.max_tokens = column_int(row, 4);
        const PromptJsonColumns columns{column_text(row, 3), column_text(row, 5),
                                        column_text(row, 6), column_text(row, 7)};
        if (auto decoded =
                decode_prompt_columns(columns, prompt, db.where() + ": prompt '" + prompt.id + "'");
            !decoded)
          return decoded;
        prompt.response_format_json = column_text(row, 8);
        prompt.source_line = column_int(row, 9);
        data.suite.prompts.push_back(std::move(prompt));
        return Result<void>{};
      });
}

// Zeros stand in for numbers_*, no reasoning for the reasoning and NULL (unknown) for the usage,
// where the database lacks them.
std::string RecordReader::requests_query(const char* rest) const {
  return std::string("SELECT id, endpoint_index, prompt_index, concurrency, probe, repeat, ok, "
                     "http_status, error, attempts, started_ms, finished_ms, text, has_logprobs, "
                     "finish_reason, system_fingerprint, model, completion_tokens, ") +
         (m_columns.numbers ? "numbers_nan, numbers_infinity, numbers_negative_infinity, "
                              "numbers_overflow, numbers_null"
                            : "0, 0, 0, 0, 0") +
         (m_columns.reasoning ? ", reasoning_text, reasoning_split" : ", '', 'none'") +
         (m_columns.usage ? ", usage_prompt_tokens, usage_reasoning_tokens" : ", NULL, NULL") +
         (m_columns.text ? ", lone_surrogates" : ", 0") +
         (m_columns.cache ? ", usage_cached_prompt_tokens" : ", NULL") +
         (m_columns.tool_calls ? ", tool_calls" : ", NULL") + " FROM requests " + rest;
}

Result<void> RecordReader::read_record(sqlite3_stmt* row, core::RequestRecord& record,
                                       TextsFromTokens& from_tokens) const {
  record.planned.endpoint_index = column_int(row, 1);
  record.planned.prompt_index = column_int(row, 2);
  record.planned.concurrency = column_int(row, 3);
  const std::string probe = column_text(row, 4);
  auto kind = core::parse_probe_kind(probe);
  if (!kind) return m_connection.corrupt("unknown probe kind '" + probe + "' in a record");
  record.planned.probe = *kind;
  record.planned.repeat = column_int(row, 5);
  auto& outcome = record.outcome;
  outcome.ok = column_int(row, 6) != 0;
  outcome.http_status = column_int(row, 7);
  outcome.error = column_text(row, 8);
  outcome.attempts = column_int(row, 9);
  outcome.started_ms = column_int64(row, 10);
  outcome.finished_ms = column_int64(row, 11);
  auto& completion = outcome.completion;
  completion.text = column_text(row, 12);
  from_tokens.text = column_is_null(row, 12);
  completion.has_logprobs = column_int(row, 13) != 0;
  completion.finish_reason = column_text(row, 14);
  completion.system_fingerprint = column_text(row, 15);
  completion.model = column_text(row, 16);
  completion.completion_tokens = static_cast<long>(column_int64(row, 17));
  completion.numbers.nan = column_int(row, 18);
  completion.numbers.infinity = column_int(row, 19);
  completion.numbers.negative_infinity = column_int(row, 20);
  completion.numbers.overflow = column_int(row, 21);
  completion.numbers.null = column_int(row, 22);
  completion.reasoning_text = column_text(row, 23);
  from_tokens.reasoning_text = column_is_null(row, 23);
  completion.reasoning_split = core::parse_reasoning_split(column_text(row, 24));
  completion.usage.prompt = column_optional_count(row, 25);
  completion.usage.reasoning = column_optional_count(row, 26);
  completion.lone_surrogates = column_int(row, 27);
  completion.usage.cached_prompt = column_optional_count(row, 28);
  if (!column_is_null(row, 29)) {
    auto calls = core::parse_tool_calls_json(column_text(row, 29));
    if (!calls)
      return m_connection.corrupt("tool calls of request " + std::to_string(column_int64(row, 0)) +
                                  ": " + calls.error().message);
    completion.tool_calls = std::move(*calls);
  }
  return {};
}

void RecordReader::fill_texts(const TextsFromTokens& from_tokens, core::Completion& completion) {
  if (from_tokens.text) completion.text = token_concatenation(completion.tokens);
  if (from_tokens.reasoning_text)
    completion.reasoning_text = token_concatenation(completion.reasoning_tokens);
}

Result<void> append_version_1_token(const Connection& connection, sqlite3_stmt* row,
                                    std::int64_t request_id,
                                    std::vector<core::TokenLogprob>& tokens) {
  if (column_int64(row, 1) != static_cast<std::int64_t>(tokens.size()))
    return connection.corrupt("token positions of request " + std::to_string(request_id) +
                              " are not contiguous");
  core::TokenLogprob token;
  token.token = column_text(row, 2);
  token.logprob = column_double(row, 3);
  token.top.reserve(2);
  if (!column_is_null(row, 4)) token.top.push_back({column_text(row, 4), column_double(row, 5)});
  if (!column_is_null(row, 6)) token.top.push_back({column_text(row, 6), column_double(row, 7)});
  if (!column_is_null(row, 8))
    if (auto decoded = decode_candidates(column_text(row, 8), token.top,
                                         connection.where() + ": candidates of request " +
                                             std::to_string(request_id));
        !decoded)
      return decoded;
  tokens.push_back(std::move(token));
  return {};
}

// Requests and tokens are both scanned in request id order, so each request's tokens are matched
// with one forward walk: the cheapest read when every token is kept.
Result<void> RecordReader::read_records(core::AuditData& data) const {
  const Connection& db = m_connection;
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      db.prepare(requests_query("ORDER BY id").c_str(), ErrorCode::input));
  std::vector<std::int64_t> ids;
  std::vector<TextsFromTokens> from_tokens;
  auto read = db.for_each_row(statement.get(), "cannot read the records",
                              [&](sqlite3_stmt* row) -> Result<void> {
                                core::RequestRecord record;
                                ids.push_back(column_int64(row, 0));
                                LLMREPRO_TRY(read_record(row, record, from_tokens.emplace_back()));
                                data.records.push_back(std::move(record));
                                return Result<void>{};
                              });
  if (!read) return read;
  if (m_schema_version >= 2) {
    LLMREPRO_TRY(read_packed_tokens(ids, data.records));
    for (std::size_t i = 0; i < ids.size(); ++i)
      fill_texts(from_tokens[i], data.records[i].outcome.completion);
    return {};
  }
  LLMREPRO_TRY(read_token_table("tokens", ids, data.records, false));
  if (!m_columns.reasoning) return {};
  return read_token_table("reasoning_tokens", ids, data.records, true);
}

Result<void> decode_packed_row(const Connection& connection, sqlite3_stmt* row, int first,
                               std::int64_t request_id, const TokenTexts& texts,
                               core::Completion& completion, SpareTokenLists* spare) {
  for (const bool reasoning : {false, true}) {
    const int column = first + (reasoning ? 1 : 0);
    if (column_is_null(row, column)) continue;
    auto& tokens = reasoning ? completion.reasoning_tokens : completion.tokens;
    if (spare != nullptr && !spare->empty()) {
      tokens.swap(spare->back());
      spare->pop_back();
    }
    const auto* bytes = static_cast<const char*>(sqlite3_column_blob(row, column));
    const auto size = static_cast<std::size_t>(sqlite3_column_bytes(row, column));
    auto decoded =
        decode_token_blob(std::string_view(bytes == nullptr ? "" : bytes, size), texts, tokens);
    if (!decoded)
      return connection.corrupt(std::string(reasoning ? "reasoning tokens" : "tokens") +
                                " of request " + std::to_string(request_id) + ": " +
                                decoded.error().message);
  }
  return {};
}

Result<void> RecordReader::read_packed_tokens(const std::vector<std::int64_t>& ids,
                                              std::vector<core::RequestRecord>& records) const {
  const Connection& db = m_connection;
  TokenTexts texts;
  LLMREPRO_TRY_ASSIGN(texts, read_token_texts(db));
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, db.prepare("SELECT request_id, answer, reasoning FROM "
                                            "packed_tokens ORDER BY request_id",
                                            ErrorCode::input));
  std::size_t current = 0;
  return db.for_each_row(statement.get(), "cannot read the tokens",
                         [&](sqlite3_stmt* row) -> Result<void> {
                           const std::int64_t request_id = column_int64(row, 0);
                           while (current < ids.size() && ids[current] < request_id) ++current;
                           if (current == ids.size() || ids[current] != request_id)
                             return Result<void>{db.corrupt("tokens of a missing request " +
                                                            std::to_string(request_id))};
                           return decode_packed_row(db, row, 1, request_id, texts,
                                                    records[current].outcome.completion);
                         });
}

Result<void> RecordReader::read_token_table(const char* table, const std::vector<std::int64_t>& ids,
                                            std::vector<core::RequestRecord>& records,
                                            bool reasoning) const {
  const Connection& db = m_connection;
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement,
                      db.prepare((select_tokens(table) + "ORDER BY request_id, position").c_str(),
                                 ErrorCode::input));
  std::size_t current = 0;
  return db.for_each_row(
      statement.get(), "cannot read the tokens", [&](sqlite3_stmt* row) -> Result<void> {
        const std::int64_t request_id = column_int64(row, 0);
        while (current < ids.size() && ids[current] < request_id) ++current;
        if (current == ids.size() || ids[current] != request_id)
          return Result<void>{
              db.corrupt("token rows of a missing request " + std::to_string(request_id))};
        core::Completion& completion = records[current].outcome.completion;
        return append_version_1_token(db, row, request_id,
                                      reasoning ? completion.reasoning_tokens : completion.tokens);
      });
}

Result<std::vector<Statement>> RecordReader::requests_by_prompt() const {
  const Connection& db = m_connection;
  std::vector<Statement> cursors;
  bool indexed = false;
  LLMREPRO_TRY_ASSIGN(indexed, has_endpoint_prompt_index(db));
  // An audit has a handful of endpoints; a file with more distinct values than this (made by
  // hand, or to cost a reader a prepared statement each) is read with the sorted query instead.
  constexpr int k_most_cursors = 256;
  if (indexed) {
    // The distinct values come from a walk of the index too. IS rather than =, so that a NULL
    // endpoint_index (a file made by hand) is read like any other value.
    Statement endpoints;
    LLMREPRO_TRY_ASSIGN(endpoints, db.prepare("SELECT DISTINCT endpoint_index FROM requests "
                                              "LIMIT ?1",
                                              ErrorCode::input));
    sqlite3_bind_int(endpoints.get(), 1, k_most_cursors + 1);
    const std::string query = requests_query("WHERE endpoint_index IS ?1 ORDER BY prompt_index");
    auto read = db.for_each_row(
        endpoints.get(), "cannot read the records", [&](sqlite3_stmt* row) -> Result<void> {
          Statement cursor;
          LLMREPRO_TRY_ASSIGN(cursor, db.prepare(query.c_str(), ErrorCode::input));
          sqlite3_bind_value(cursor.get(), 1, sqlite3_column_value(row, 0));
          cursors.push_back(std::move(cursor));
          return Result<void>{};
        });
    if (!read) return read.error();
    if (cursors.size() <= k_most_cursors) return cursors;
    cursors.clear();
  }
  Statement all;
  LLMREPRO_TRY_ASSIGN(
      all, db.prepare(requests_query("ORDER BY prompt_index, id").c_str(), ErrorCode::input));
  cursors.push_back(std::move(all));
  return cursors;
}

// Requests prompt by prompt, in ascending prompt_index: one cursor per endpoint walks the plan
// key's index, which lists that endpoint's requests in prompt order (requests_by_prompt), and a
// prompt's group is every cursor's rows of that prompt, put in id (recorded) order here. So
// SQLite sorts nothing and memory holds one prompt's requests, where one `ORDER BY prompt_index,
// id` query would have SQLite's sorter hold every request row until the scan ends (what a file
// without that index still gets). A record's tokens are read by request (a packed_tokens key, or
// a primary-key range of the version 1 token tables) when the visitor asks for them, and dropped
// when it is done with them or the prompt is.
Result<void>
RecordReader::stream_records(core::AuditData& data, const AuditDatabase::PromptStreamVisitor& visit,
                             const std::function<bool(const core::RequestRecord&)>& keep) const {
  const Connection& db = m_connection;
  std::vector<Statement> cursors;
  LLMREPRO_TRY_ASSIGN(cursors, requests_by_prompt());
  // Versions 2 and 3: one key probe of packed_tokens per request. Version 1: the request's rows
  // of the token tables, a primary-key range each.
  const bool packed = m_schema_version >= 2;
  TokenTexts texts;
  Statement tokens;
  Statement reasoning_tokens;
  if (packed) {
    LLMREPRO_TRY_ASSIGN(texts, read_token_texts(db));
    LLMREPRO_TRY_ASSIGN(tokens, db.prepare("SELECT answer, reasoning FROM packed_tokens WHERE "
                                           "request_id = ?",
                                           ErrorCode::input));
  } else {
    LLMREPRO_TRY_ASSIGN(
        tokens,
        db.prepare((select_tokens("tokens") + "WHERE request_id = ? ORDER BY position").c_str(),
                   ErrorCode::input));
    if (m_columns.reasoning)
      LLMREPRO_TRY_ASSIGN(reasoning_tokens, db.prepare((select_tokens("reasoning_tokens") +
                                                        "WHERE request_id = ? ORDER BY position")
                                                           .c_str(),
                                                       ErrorCode::input));
  }
  const core::AuditData& header = data; // records are added only once every prompt is visited
  std::vector<std::pair<std::int64_t, core::RequestRecord>> kept;         // (id, trimmed record)
  std::vector<std::set<std::string>> fingerprints(data.endpoints.size()); // of records not kept
  std::vector<core::RequestRecord> group;
  std::vector<std::int64_t> group_ids;
  std::vector<TextsFromTokens> group_from_tokens;
  SpareTokenLists spare; // the token lists of the prompt before, decoded into again
  int group_prompt = 0;

  const auto read_version_1 = [&](std::int64_t request_id,
                                  core::Completion& completion) -> Result<void> {
    auto& out = completion.tokens;
    out.reserve(static_cast<std::size_t>(std::max(0L, completion.completion_tokens)));
    sqlite3_bind_int64(tokens.get(), 1, request_id);
    LLMREPRO_TRY(db.for_each_row(tokens.get(), "cannot read the tokens",
                                 [&](sqlite3_stmt* row) -> Result<void> {
                                   return append_version_1_token(db, row, request_id, out);
                                 }));
    // Only a reasoning model's records have these rows; the look-up is one key probe.
    if (!m_columns.reasoning || completion.reasoning_split == core::ReasoningSplit::none) return {};
    auto& reasoning = completion.reasoning_tokens;
    sqlite3_bind_int64(reasoning_tokens.get(), 1, request_id);
    return db.for_each_row(reasoning_tokens.get(), "cannot read the tokens",
                           [&](sqlite3_stmt* row) -> Result<void> {
                             return append_version_1_token(db, row, request_id, reasoning);
                           });
  };
  const auto read_packed = [&](std::int64_t request_id,
                               core::Completion& completion) -> Result<void> {
    sqlite3_bind_int64(tokens.get(), 1, request_id);
    return db.for_each_row(
        tokens.get(), "cannot read the tokens", [&](sqlite3_stmt* row) -> Result<void> {
          return decode_packed_row(db, row, 0, request_id, texts, completion, &spare);
        });
  };

  const auto lend = [&spare](std::vector<core::TokenLogprob>& list) {
    if (list.capacity() > 0) spare.push_back(std::move(list));
    list = {};
  };
  // The group's tokens as the visitor reads them: each record's state, whether its tokens are
  // in and whether its texts were ever filled from them.
  class GroupTokens final : public core::RecordTokens {
  public:
    GroupTokens(std::vector<core::RequestRecord>& records,
                std::function<Result<void>(std::size_t, bool)> read_tokens,
                std::function<void(core::Completion&)> drop_tokens)
        : m_records(records), m_read(std::move(read_tokens)), m_drop(std::move(drop_tokens)),
          m_state(records.size(), State::unread) {}
    Result<void> read(std::size_t index) override {
      if (index >= m_state.size())
        return core::make_error(core::ErrorCode::internal,
                                "no record " + std::to_string(index) + " in the prompt's group");
      if (m_state[index] == State::in) return {};
      LLMREPRO_TRY(m_read(index, m_state[index] == State::unread));
      m_state[index] = State::in;
      return {};
    }
    void drop(std::size_t index) override {
      if (index >= m_state.size() || m_state[index] != State::in) return;
      m_drop(m_records[index].outcome.completion);
      m_state[index] = State::dropped;
    }

  private:
    enum class State : unsigned char { unread, in, dropped };
    std::vector<core::RequestRecord>& m_records;
    std::function<Result<void>(std::size_t, bool)> m_read;
    std::function<void(core::Completion&)> m_drop;
    std::vector<State> m_state;
  };

  const auto flush = [&]() -> Result<void> {
    if (group.empty()) return {};
    GroupTokens group_tokens(
        group,
        [&](std::size_t i, bool first) -> Result<void> {
          auto& completion = group[i].outcome.completion;
          LLMREPRO_TRY(packed ? read_packed(group_ids[i], completion)
                              : read_version_1(group_ids[i], completion));
          if (first) fill_texts(group_from_tokens[i], completion);
          return {};
        },
        [&lend](core::Completion& completion) {
          lend(completion.tokens);
          lend(completion.reasoning_tokens);
        });
    LLMREPRO_TRY(visit(header, group_prompt, group, group_tokens));
    for (std::size_t i = 0; i < group.size(); ++i) {
      const bool kept_record = !keep || keep(group[i]);
      lend(group[i].outcome.completion.tokens);
      lend(group[i].outcome.completion.reasoning_tokens);
      if (!kept_record) {
        // What derive_fingerprints reads of a record is kept apart.
        const auto& outcome = group[i].outcome;
        const auto endpoint = static_cast<std::size_t>(group[i].planned.endpoint_index);
        if (outcome.ok && !outcome.completion.system_fingerprint.empty() &&
            endpoint < fingerprints.size())
          fingerprints[endpoint].insert(outcome.completion.system_fingerprint);
        ++data.records_not_kept;
        continue;
      }
      auto& completion = group[i].outcome.completion;
      // Swapped with empty ones: assigning an empty string keeps the capacity. (The token lists
      // were lent to `spare` above.)
      std::string().swap(completion.text);
      std::string().swap(completion.reasoning_text);
      kept.emplace_back(group_ids[i], std::move(group[i]));
    }
    group.clear();
    group_ids.clear();
    group_from_tokens.clear();
    return {};
  };

  // Whether each cursor stands on a row.
  std::vector<char> at_row(cursors.size(), 0);
  const auto advance = [&](std::size_t c) -> Result<void> {
    const int step = sqlite3_step(cursors[c].get());
    if (step != SQLITE_ROW && step != SQLITE_DONE)
      return db.failure(ErrorCode::input, "cannot read the records");
    at_row[c] = step == SQLITE_ROW ? 1 : 0;
    return {};
  };
  for (std::size_t c = 0; c < cursors.size(); ++c) LLMREPRO_TRY(advance(c));
  std::vector<std::size_t> order; // sort_by_ids' scratch
  for (;;) {
    // The next group: the lowest prompt_index a cursor stands on. Every row read is added to the
    // group and the cursor stepped, so each row is read once, whatever its values.
    std::optional<std::int64_t> prompt;
    for (std::size_t c = 0; c < cursors.size(); ++c) {
      if (at_row[c] == 0) continue;
      const std::int64_t at = column_int64(cursors[c].get(), 2);
      if (!prompt || at < *prompt) prompt = at;
    }
    if (!prompt) break;
    for (std::size_t c = 0; c < cursors.size(); ++c) {
      sqlite3_stmt* row = cursors[c].get();
      while (at_row[c] != 0 && column_int64(row, 2) == *prompt) {
        core::RequestRecord record;
        TextsFromTokens from_tokens;
        LLMREPRO_TRY(read_record(row, record, from_tokens));
        group_ids.push_back(column_int64(row, 0));
        group_from_tokens.push_back(from_tokens);
        group.push_back(std::move(record));
        LLMREPRO_TRY(advance(c));
      }
    }
    group_prompt = group.front().planned.prompt_index;
    // Recorded order within the prompt, as the visitor is promised; one cursor per endpoint gives
    // plan key order.
    sort_by_ids(group_ids, order, group, group_from_tokens);
    LLMREPRO_TRY(flush());
  }

  // Recorded order, as read_records() gives it.
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  data.records.reserve(kept.size());
  for (auto& entry : kept) data.records.push_back(std::move(entry.second));
  // derive_fingerprints adds the kept records' fingerprints to these.
  for (std::size_t e = 0; e < fingerprints.size(); ++e)
    data.endpoints[e].fingerprints.assign(fingerprints[e].begin(), fingerprints[e].end());
  return {};
}

Result<void> RecordReader::read_probe_activity(core::AuditData& data) const {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, m_connection.prepare("SELECT value FROM meta WHERE key = "
                                                      "'probe_activity'",
                                                      ErrorCode::input));
  if (sqlite3_step(statement.get()) != SQLITE_ROW) return {};
  LLMREPRO_TRY_ASSIGN(data.probe_activity,
                      decode_probe_activity(column_text(statement.get(), 0),
                                            m_connection.where() + ": probe_activity"));
  return {};
}

Result<std::vector<core::PlannedRequest>> RecordReader::read_successes() const {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, m_connection.prepare("SELECT endpoint_index, prompt_index, "
                                                      "concurrency, probe, repeat FROM requests "
                                                      "WHERE ok = 1 ORDER BY id",
                                                      ErrorCode::input));
  std::vector<core::PlannedRequest> keys;
  LLMREPRO_TRY(m_connection.for_each_row(
      statement.get(), "cannot read the records", [&](sqlite3_stmt* row) -> Result<void> {
        core::PlannedRequest key;
        key.endpoint_index = column_int(row, 0);
        key.prompt_index = column_int(row, 1);
        key.concurrency = column_int(row, 2);
        const std::string probe = column_text(row, 3);
        auto kind = core::parse_probe_kind(probe);
        if (!kind) return Result<void>{m_connection.corrupt("unknown probe kind '" + probe + "'")};
        key.probe = *kind;
        key.repeat = column_int(row, 4);
        keys.push_back(key);
        return Result<void>{};
      }));
  return keys;
}

void derive_fingerprints(core::AuditData& data) {
  std::vector<std::set<std::string>> fingerprints(data.endpoints.size());
  // Those of the records a streaming load did not keep (stream_records).
  for (std::size_t i = 0; i < data.endpoints.size(); ++i)
    fingerprints[i].insert(data.endpoints[i].fingerprints.begin(),
                           data.endpoints[i].fingerprints.end());
  for (const auto& record : data.records) {
    const auto index = static_cast<std::size_t>(record.planned.endpoint_index);
    const auto& fingerprint = record.outcome.completion.system_fingerprint;
    if (record.outcome.ok && !fingerprint.empty() && index < fingerprints.size())
      fingerprints[index].insert(fingerprint);
  }
  for (std::size_t i = 0; i < data.endpoints.size(); ++i)
    data.endpoints[i].fingerprints.assign(fingerprints[i].begin(), fingerprints[i].end());
}

} // namespace llmrepro::store::detail
