// The RecordSink the audit driver records into: finished requests go to the database on a
// writer thread that commits whatever is queued in one transaction (group commit), so the
// network loop waits on SQLite only when the bounded queue is full.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "core/request_record.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::store {

class DatabaseSink final : public core::RecordSink {
public:
  // Records waiting for the writer before record() blocks.
  static constexpr std::size_t k_default_queue_capacity = 256;
  // Records committed in one transaction at most.
  static constexpr std::size_t k_default_max_batch = 64;

  // Starts the writer thread. `database` is not owned and must outlive the sink; other calls
  // on it stay safe meanwhile (AuditDatabase serialises them). Capacities of 0 count as 1.
  explicit DatabaseSink(AuditDatabase& database,
                        std::size_t queue_capacity = k_default_queue_capacity,
                        std::size_t max_batch = k_default_max_batch);
  // Drains and stops the writer as finish() does; an error it returns is dropped.
  ~DatabaseSink() override;
  DatabaseSink(const DatabaseSink&) = delete;
  DatabaseSink& operator=(const DatabaseSink&) = delete;

  // Queues a copy of `record`, waiting only while the queue is full. The record counts as
  // recorded once the transaction holding it commits (AuditDatabase::record_batch); records are
  // committed in the order they were queued. Returns the writer's error once a commit failed:
  // that batch is rolled back, nothing queued after it is written, and what was committed
  // before stays. ErrorCode::internal after finish().
  core::Result<void> record(core::RequestRecord record) override;

  // Waits until every queued record is committed, stops the writer and returns its error, if
  // any. Call it before reading the records back or marking the audit finished. Idempotent.
  core::Result<void> finish();

  // Records committed so far.
  std::size_t committed() const;
  // Transactions committed so far (each holding one or more records).
  std::size_t transactions() const;

private:
  void run();

  AuditDatabase& m_database;
  const std::size_t m_queue_capacity;
  const std::size_t m_max_batch;
  mutable std::mutex m_mutex;
  std::condition_variable m_queued;   // the writer waits for records or the stop
  std::condition_variable m_has_room; // record() waits for room in the queue
  std::deque<core::RequestRecord> m_queue;
  std::optional<core::Error> m_error;
  bool m_stopping = false;
  std::size_t m_committed = 0;
  std::size_t m_transactions = 0;
  std::thread m_writer; // last: starts once every member it uses is constructed
};

} // namespace llmrepro::store
