// Reads an audit back from the database: its header (audit row, endpoints, prompts), its records
// with their tokens, whole or prompt by prompt, the probe activity and the keys --resume skips.
// One reader for AuditDatabase::load() with and without a visitor, so that both decode every row
// the same way. Private to store.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/plan.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"
#include "store/detail/schema.hpp"
#include "store/detail/sqlite.hpp"
#include "store/detail/token_blob.hpp"

namespace llmrepro::store::detail {

// Reads through `connection`, whose lock the caller holds; a load runs inside one read
// transaction the caller opened, so that it sees one snapshot. Every unreadable or inconsistent
// row is ErrorCode::input naming the database and what is wrong.
class RecordReader {
public:
  // `columns`: which later columns the database has (see add_later_columns); what it lacks reads
  // as zero counts and no reasoning. `schema_version`: 2 and 3 read the packed tokens
  // (token_texts and packed_tokens), 1 the token rows of a version 1 file that could not be
  // upgraded (read-only).
  // `connection` must outlive the reader.
  RecordReader(const Connection& connection, LaterColumns columns, int schema_version);

  // Fills info, config, suite and endpoints of `data` (without fingerprints).
  core::Result<void> read_header(core::AuditData& data) const;

  // Appends every record to data.records in recorded order, with completion text and tokens
  // (the reasoning's included).
  core::Result<void> read_records(core::AuditData& data) const;

  // Hands each prompt's records, and a reader of their tokens, to `visit` in ascending prompt
  // order (`data` is the header then), then appends them to data.records in recorded order
  // without their text and tokens: those `keep` accepts (every one where it is empty), the
  // others counted in data.records_not_kept. An error from `visit` stops the read and is
  // returned.
  core::Result<void>
  stream_records(core::AuditData& data, const AuditDatabase::PromptStreamVisitor& visit,
                 const std::function<bool(const core::RequestRecord&)>& keep = {}) const;

  // Fills data.probe_activity; empty when none was stored.
  core::Result<void> read_probe_activity(core::AuditData& data) const;

  // The keys of the successful records, in recorded order.
  core::Result<std::vector<core::PlannedRequest>> read_successes() const;

private:
  // Which texts of a record its row stores as NULL (schema version 3): its tokens' texts one
  // after another, filled in once the tokens are read (fill_texts).
  struct TextsFromTokens {
    bool text = false;
    bool reasoning_text = false;
  };

  // The requests query with columns read_record() reads, then `rest` (its WHERE and ORDER BY).
  std::string requests_query(const char* rest) const;
  // stream_records()' cursors over the requests, each in ascending prompt_index (rows of one
  // prompt_index in no particular order): one per distinct endpoint_index, walking the index of
  // the plan key from that endpoint's first entry. Where the file has no such index (made by
  // hand), one cursor over the whole table in (prompt_index, id) order, which SQLite sorts.
  core::Result<std::vector<Statement>> requests_by_prompt() const;
  // One row of requests_query(), without its tokens; `from_tokens` says which texts wait for them.
  core::Result<void> read_record(sqlite3_stmt* row, core::RequestRecord& record,
                                 TextsFromTokens& from_tokens) const;
  // Sets the texts `from_tokens` names from the tokens read into `completion`.
  static void fill_texts(const TextsFromTokens& from_tokens, core::Completion& completion);
  // Versions 2 and 3: every packed_tokens row in one scan into the matching record of `records`,
  // whose database ids are `ids` (ascending).
  core::Result<void> read_packed_tokens(const std::vector<std::int64_t>& ids,
                                        std::vector<core::RequestRecord>& records) const;

  // Version 1: reads every request's rows of `table` (tokens or reasoning_tokens) in one key-order
  // scan into the matching record of `records`, whose database ids are `ids` (ascending).
  core::Result<void> read_token_table(const char* table, const std::vector<std::int64_t>& ids,
                                      std::vector<core::RequestRecord>& records,
                                      bool reasoning) const;

  const Connection& m_connection;
  LaterColumns m_columns;
  int m_schema_version;
};

// Appends the token in `row` (a row of a version 1 token table: request_id, position, token,
// logprob, c1_token, c1_logprob, c2_token, c2_logprob, more) to `tokens`, the tokens of request
// `request_id` read so far; its position must be the next one. Also what the upgrade to version
// 2 reads.
core::Result<void> append_version_1_token(const Connection& connection, sqlite3_stmt* row,
                                          std::int64_t request_id,
                                          std::vector<core::TokenLogprob>& tokens);

// Token lists done with, kept to be decoded into again (decode_token_blob overwrites a list's
// elements in place): a streaming load reads each record's tokens into a list an earlier record
// dropped.
using SpareTokenLists = std::vector<std::vector<core::TokenLogprob>>;

// Decodes a packed_tokens row's `answer` blob (column `first` of `row`) and its `reasoning` blob
// (column `first` + 1), each NULL where its list is empty, into `completion`'s tokens and
// reasoning_tokens, which must be empty; a non-empty list takes its storage from `spare` where it
// has one. A corrupt blob is ErrorCode::input naming request `request_id` and which list ("audit
// database 'X': reasoning tokens of request 7: truncated").
core::Result<void> decode_packed_row(const Connection& connection, sqlite3_stmt* row, int first,
                                     std::int64_t request_id, const TokenTexts& texts,
                                     core::Completion& completion,
                                     SpareTokenLists* spare = nullptr);

// Whether the requests table has an index that lists one endpoint's requests in prompt order
// (endpoint_index and prompt_index its first keys, ascending, BINARY, not partial), as the UNIQUE
// constraint on the plan key gives every schema version. Without one, a streaming load reads the
// requests in one query that SQLite sorts.
core::Result<bool> has_endpoint_prompt_index(const Connection& connection);

// Sets each endpoint's fingerprints to the distinct non-empty system_fingerprint values of its
// successful records, sorted.
void derive_fingerprints(core::AuditData& data);

} // namespace llmrepro::store::detail
