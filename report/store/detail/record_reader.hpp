// Reads an audit back from the database: its header (audit row, endpoints, prompts), its records
// with their tokens, whole or prompt by prompt, the probe activity and the keys --resume skips.
// One reader for AuditDatabase::load() with and without a visitor, so that both decode every row
// the same way. Private to report/store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/plan.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"
#include "report/store/audit_database.hpp"
#include "report/store/detail/schema.hpp"
#include "report/store/detail/sqlite.hpp"

namespace llmrepro::store::detail {

// Reads through `connection`, whose lock the caller holds; a load runs inside one read
// transaction the caller opened, so that it sees one snapshot. Every unreadable or inconsistent
// row is ErrorCode::input naming the database and what is wrong.
class RecordReader {
public:
  // `columns`: which later columns the database has (see add_later_columns); what it lacks reads
  // as zero counts and no reasoning. `connection` must outlive the reader.
  RecordReader(const Connection& connection, LaterColumns columns);

  // Fills info, config, suite and endpoints of `data` (without fingerprints).
  core::Result<void> read_header(core::AuditData& data) const;

  // Appends every record to data.records in recorded order, with completion text and tokens
  // (the reasoning's included).
  core::Result<void> read_records(core::AuditData& data) const;

  // Hands each prompt's records, with text and tokens, to `visit` in ascending prompt order
  // (`data` is the header then), then appends them to data.records in recorded order without
  // their text and tokens. An error from `visit` stops the read and is returned.
  core::Result<void> stream_records(core::AuditData& data,
                                    const AuditDatabase::PromptRecordsVisitor& visit) const;

  // Fills data.probe_activity; empty when none was stored.
  core::Result<void> read_probe_activity(core::AuditData& data) const;

  // The keys of the successful records, in recorded order.
  core::Result<std::vector<core::PlannedRequest>> read_successes() const;

private:
  // The requests query with columns read_record() reads, in `order`.
  std::string requests_query(const char* order) const;
  // One row of requests_query(), without its tokens.
  core::Result<void> read_record(sqlite3_stmt* row, core::RequestRecord& record) const;
  // Appends the token in `row` (a row of the tokens table) to `tokens`, the tokens of request
  // `request_id` read so far; its position must be the next one.
  core::Result<void> append_token(sqlite3_stmt* row, std::int64_t request_id,
                                  std::vector<core::TokenLogprob>& tokens) const;

  // Reads every request's rows of `table` (tokens or reasoning_tokens) in one key-order scan into
  // the matching record of `records`, whose database ids are `ids` (ascending).
  core::Result<void> read_token_table(const char* table, const std::vector<std::int64_t>& ids,
                                      std::vector<core::RequestRecord>& records,
                                      bool reasoning) const;

  const Connection& m_connection;
  LaterColumns m_columns;
};

// Sets each endpoint's fingerprints to the distinct non-empty system_fingerprint values of its
// successful records, sorted.
void derive_fingerprints(core::AuditData& data);

} // namespace llmrepro::store::detail
