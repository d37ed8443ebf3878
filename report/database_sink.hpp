// The RecordSink the audit driver records into: each finished request goes to the database.
#pragma once

#include "core/request_record.hpp"
#include "report/audit_database.hpp"

namespace llmrepro::report {

class DatabaseSink final : public core::RecordSink {
public:
  // `database` is not owned and must outlive the sink.
  explicit DatabaseSink(AuditDatabase& database) : m_database(database) {}

  // Stores the record in its own transaction (see AuditDatabase::record).
  core::Result<void> record(const core::RequestRecord& record) override;

private:
  AuditDatabase& m_database;
};

} // namespace llmrepro::report
