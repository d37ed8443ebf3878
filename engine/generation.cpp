#include "engine/generation.hpp"

namespace llmrepro::engine {

void Generation::push(const TokenChoice& token) {
  {
    std::lock_guard lock(m_mutex);
    m_tokens.push_back(token);
  }
  m_changed.notify_all();
}

void Generation::finish(const std::string& reason) {
  {
    std::lock_guard lock(m_mutex);
    if (m_finished) return;
    m_finished = true;
    m_finish_reason = reason;
  }
  m_changed.notify_all();
}

void Generation::set_cached_tokens(std::size_t count) {
  std::lock_guard lock(m_mutex);
  m_cached_tokens = count;
}

void Generation::cancel() {
  std::lock_guard lock(m_mutex);
  m_cancelled = true;
}

bool Generation::cancelled() const {
  std::lock_guard lock(m_mutex);
  return m_cancelled;
}

bool Generation::finished() const {
  std::lock_guard lock(m_mutex);
  return m_finished;
}

Generation::Snapshot Generation::wait_after(std::size_t seen) {
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] { return m_finished || m_tokens.size() > seen; });
  Snapshot snapshot;
  if (seen < m_tokens.size())
    snapshot.tokens.assign(m_tokens.begin() + static_cast<std::ptrdiff_t>(seen), m_tokens.end());
  snapshot.finished = m_finished && seen + snapshot.tokens.size() == m_tokens.size();
  snapshot.finish_reason = m_finish_reason;
  snapshot.cached_tokens = m_cached_tokens;
  return snapshot;
}

Generation::Snapshot Generation::wait_finished() {
  std::unique_lock lock(m_mutex);
  m_changed.wait(lock, [&] { return m_finished; });
  return Snapshot{m_tokens, true, m_finish_reason, m_cached_tokens};
}

} // namespace llmrepro::engine
