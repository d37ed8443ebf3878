#include "store/database_sink.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace llmrepro::store {

DatabaseSink::DatabaseSink(AuditDatabase& database, std::size_t queue_capacity,
                           std::size_t max_batch)
    : m_database(database), m_queue_capacity(std::max<std::size_t>(queue_capacity, 1)),
      m_max_batch(std::max<std::size_t>(max_batch, 1)), m_writer([this] { run(); }) {}

DatabaseSink::~DatabaseSink() { (void)finish(); }

core::Result<void> DatabaseSink::record(core::RequestRecord record) {
  std::unique_lock lock(m_mutex);
  m_has_room.wait(
      lock, [&] { return m_error.has_value() || m_stopping || m_queue.size() < m_queue_capacity; });
  if (m_error) return *m_error;
  if (m_stopping)
    return core::make_error(core::ErrorCode::internal,
                            "audit database '" + m_database.path() + "': record after finish");
  m_queue.push_back(std::move(record));
  m_queued.notify_one();
  return {};
}

core::Result<void> DatabaseSink::finish() {
  {
    const std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_queued.notify_all();
  m_has_room.notify_all();
  if (m_writer.joinable()) m_writer.join();
  const std::lock_guard lock(m_mutex);
  if (m_error) return *m_error;
  return {};
}

std::size_t DatabaseSink::committed() const {
  const std::lock_guard lock(m_mutex);
  return m_committed;
}

std::size_t DatabaseSink::transactions() const {
  const std::lock_guard lock(m_mutex);
  return m_transactions;
}

void DatabaseSink::run() {
  std::vector<core::RequestRecord> batch;
  batch.reserve(m_max_batch);
  std::unique_lock lock(m_mutex);
  while (true) {
    m_queued.wait(lock, [&] { return m_stopping || !m_queue.empty(); });
    // Stopping drains first: the loop ends only once the queue is empty.
    if (m_queue.empty()) return;
    const std::size_t take = std::min(m_queue.size(), m_max_batch);
    for (std::size_t i = 0; i < take; ++i) {
      batch.push_back(std::move(m_queue.front()));
      m_queue.pop_front();
    }
    m_has_room.notify_all();
    lock.unlock();
    auto stored = m_database.record_batch(batch);
    batch.clear();
    lock.lock();
    if (!stored) {
      // Later records would land after a gap; the audit stops and --resume sends them again.
      m_error = stored.error();
      m_queue.clear();
      m_has_room.notify_all();
      return;
    }
    m_committed += take;
    ++m_transactions;
  }
}

} // namespace llmrepro::store
