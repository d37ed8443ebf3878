// Everything the audit database writes but the schema and the semantic tables: the audit's
// header (audit row, endpoints, prompts), each finished request with its packed tokens, and the
// later updates (status, endpoint, configuration, probe activity). Private to store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"
#include "store/detail/schema.hpp"
#include "store/detail/sqlite.hpp"
#include "store/detail/token_texts.hpp"

namespace llmrepro::store::detail {

// Holds the statements a record needs, prepared once: a run stores thousands of records. Every
// write runs inside the caller's transaction (the header, a record) or is one statement (the
// updates); the caller holds AuditDatabase's lock.
class RecordWriter {
public:
  // `connection` must outlive the writer; prepare() before any write.
  explicit RecordWriter(const Connection& connection);

  // Prepares the cached statements for a database with `columns` (see add_later_columns):
  // records are written without what it lacks.
  core::Result<void> prepare(LaterColumns columns);

  // Stores the audit row, the endpoints, the suite's prompts and `header`'s records.
  core::Result<void> write_header(const core::AuditData& header);

  // Stores one finished request with its tokens. A record whose key (endpoint, prompt,
  // concurrency, probe, repeat) is already stored replaces the old record and its tokens.
  core::Result<void> write_record(const core::RequestRecord& record);

  // The updates behind AuditDatabase::set_status, update_endpoint, update_config and
  // store_probe_activity, with the errors those document.
  core::Result<void> write_status(const std::string& status, std::int64_t finished_ms);
  core::Result<void> write_endpoint(int index, const core::EndpointInfo& endpoint);
  core::Result<void> write_config(const core::AuditConfig& config);
  core::Result<void> write_probe_activity(const std::vector<core::ProbeActivity>& activity);

  // The caller's transaction ended, committed or rolled back: token text ids it added stay known
  // or are forgotten (TextInterner).
  void transaction_ended(bool committed);

private:
  // Stores the packed tokens of request `request_id`, interning their texts.
  core::Result<void> write_tokens(sqlite3_int64 request_id, const core::Completion& completion);

  const Connection& m_connection;
  LaterColumns m_columns;
  Statement m_find_request;
  TextInterner m_texts;
  Statement m_delete_tokens;
  Statement m_delete_request;
  Statement m_insert_request;
  Statement m_insert_tokens;
  std::vector<std::uint64_t> m_text_ids; // write_tokens()'s, kept for the next request's room
};

} // namespace llmrepro::store::detail
