// The reading thread reads the announced records in order, at most `depth` ahead, and drops what
// the analysis has done with; the analysis takes each record when it is read. Each side wakes the
// other only when the other's wait is over (the reader at half the depth, not at every record),
// since a wake is a system call and a record's analysis takes a few tens of microseconds.
#include "audit/read_ahead.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

namespace llmrepro::audit {

ReadAhead::ReadAhead(core::RecordTokens& source, std::size_t depth,
                     const std::vector<core::RequestRecord>* records)
    : m_source(&source), m_depth(std::max<std::size_t>(depth, 2)), m_records(records) {
  if (m_records != nullptr) m_facts.resize(m_records->size());
}

const core::CompletionFacts* ReadAhead::facts(std::size_t index) const {
  if (index >= m_facts.size() || !m_facts[index]) return nullptr;
  return &*m_facts[index];
}

int& ReadAhead::held(std::size_t index) {
  if (index >= m_held.size()) m_held.resize(index + 1, 0);
  return m_held[index];
}

bool ReadAhead::may_read() const {
  return !m_failure && m_read < m_order.size() && in_flight() < m_depth;
}

// A record the analysis reads twice (a probe's reference, read first and again in its turn) is
// read again only once its first read is dropped.
bool ReadAhead::next_is_held() const {
  const std::size_t index = m_order[m_read];
  return index < m_held.size() && m_held[index] > 0;
}

bool ReadAhead::reader_should_wake() const {
  if (m_done) return true;
  const bool can_read = may_read();
  const bool blocked = can_read && next_is_held();
  if (!m_drops.empty() && (m_settling || blocked)) return true;
  return can_read && !blocked && (in_flight() <= m_depth / 2);
}

void ReadAhead::wake_reader() {
  if (m_reader_waits && reader_should_wake()) m_reader.notify_one();
}

void ReadAhead::will_read(const std::vector<std::size_t>& order) {
  const std::lock_guard lock(m_mutex);
  m_order.insert(m_order.end(), order.begin(), order.end());
  wake_reader();
}

core::Result<void> ReadAhead::read(std::size_t index) {
  std::unique_lock lock(m_mutex);
  if (m_used == m_order.size()) { // not announced: read as asked
    m_order.push_back(index);
    wake_reader();
  }
  if (m_order[m_used] != index)
    return core::make_error(core::ErrorCode::internal,
                            "a record read out of the order its analysis announced");
  const auto ready = [&] { return m_read > m_used || m_failure.has_value() || m_reader_gone; };
  if (!ready()) {
    m_analysis_waits = true;
    m_analysis.wait(lock, ready);
    m_analysis_waits = false;
  }
  if (m_read == m_used) { // this entry's read failed, or the reader is gone
    if (m_failure) return *m_failure;
    return core::make_error(core::ErrorCode::internal, "the records' reader stopped");
  }
  ++m_used;
  wake_reader();
  return {};
}

void ReadAhead::drop(std::size_t index) {
  const std::lock_guard lock(m_mutex);
  m_drops.push_back(index);
  wake_reader();
}

void ReadAhead::settle() {
  std::unique_lock lock(m_mutex);
  const auto settled = [&] { return (m_drops.empty() && m_dropping == 0) || m_reader_gone; };
  if (settled()) return;
  m_settling = true;
  wake_reader();
  m_analysis_waits = true;
  m_analysis.wait(lock, settled);
  m_analysis_waits = false;
  m_settling = false;
}

void ReadAhead::drop_asked(std::unique_lock<std::mutex>& lock) {
  while (!m_drops.empty()) {
    std::vector<std::size_t> drops;
    drops.swap(m_drops);
    m_dropping = drops.size();
    lock.unlock();
    for (std::size_t index : drops) m_source->drop(index);
    lock.lock();
    for (std::size_t index : drops) --held(index);
    m_dropping = 0;
    if (m_analysis_waits && m_drops.empty()) m_analysis.notify_one();
  }
}

void ReadAhead::serve() {
  std::unique_lock lock(m_mutex);
  while (true) {
    if (!reader_should_wake()) {
      m_reader_waits = true;
      m_reader.wait(lock, [&] { return reader_should_wake(); });
      m_reader_waits = false;
    }
    // Drops first, and between reads: the memory they free, and a record read twice, wait on
    // them.
    drop_asked(lock);
    if (m_done) break;
    while (may_read() && !next_is_held()) {
      const std::size_t index = m_order[m_read];
      ++held(index);
      lock.unlock();
      auto read = m_source->read(index);
      if (read && index < m_facts.size()) {
        const core::RequestRecord& record = (*m_records)[index];
        m_facts[index].reset();
        if (record.outcome.ok) m_facts[index] = core::completion_facts(record.outcome.completion);
      }
      lock.lock();
      if (read) {
        ++m_read;
      } else {
        --held(index);
        m_failure = std::move(read.error());
      }
      if (m_analysis_waits) m_analysis.notify_one();
      drop_asked(lock);
    }
  }
  // What the analysis read ahead and never took, or took and never dropped (it returned early).
  for (std::size_t index = 0; index < m_held.size(); ++index)
    if (m_held[index] > 0) {
      m_held[index] = 0;
      lock.unlock();
      m_source->drop(index);
      lock.lock();
    }
}

core::Result<void>
ReadAhead::run(const std::function<core::Result<void>(core::RecordTokens&)>& analyse) {
  std::optional<core::Result<void>> outcome;
  std::exception_ptr thrown;
  std::thread analysis([&] {
    try {
      outcome.emplace(analyse(*this));
    } catch (...) {
      thrown = std::current_exception();
    }
    const std::lock_guard lock(m_mutex);
    m_done = true;
    if (m_reader_waits) m_reader.notify_one();
  });
  try {
    serve();
  } catch (...) { // the reader threw (out of memory): the analysis ends, then the exception goes on
    {
      const std::lock_guard lock(m_mutex);
      m_reader_gone = true;
      m_analysis.notify_one();
    }
    analysis.join();
    throw;
  }
  analysis.join();
  if (thrown) std::rethrow_exception(thrown);
  return std::move(*outcome);
}

} // namespace llmrepro::audit
