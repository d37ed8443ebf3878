#include "engine/connection_queue.hpp"

namespace llmrepro::engine {

namespace {

thread_local bool t_refusing = false;

} // namespace

ConnectionQueue::ConnectionQueue(std::size_t handlers, std::size_t max_waiting,
                                 std::size_t refusers)
    : m_max_waiting(max_waiting) {
  for (std::size_t i = 0; i < handlers; ++i)
    m_threads.emplace_back([this] { work(m_waiting, m_wake_handlers, false); });
  for (std::size_t i = 0; i < refusers; ++i)
    m_threads.emplace_back([this] { work(m_refused, m_wake_refusers, true); });
}

ConnectionQueue::~ConnectionQueue() { shutdown(); }

void ConnectionQueue::enqueue(std::function<void()> connection) {
  bool refused = false;
  {
    std::lock_guard lock(m_mutex);
    // The refused deque is unbounded, but each entry is only an accepted socket, answered in
    // the time it takes to read one request; the process's descriptor limit bounds it.
    refused = m_waiting.size() >= m_idle_handlers + m_max_waiting;
    (refused ? m_refused : m_waiting).push_back(std::move(connection));
  }
  (refused ? m_wake_refusers : m_wake_handlers).notify_one();
}

void ConnectionQueue::shutdown() {
  {
    std::lock_guard lock(m_mutex);
    if (m_shutdown && m_threads.empty()) return;
    m_shutdown = true;
  }
  m_wake_handlers.notify_all();
  m_wake_refusers.notify_all();
  for (std::thread& thread : m_threads)
    if (thread.joinable()) thread.join();
  std::lock_guard lock(m_mutex);
  m_threads.clear();
}

bool ConnectionQueue::refusing() { return t_refusing; }

void ConnectionQueue::work(std::deque<std::function<void()>>& jobs, std::condition_variable& wake,
                           bool refuse) {
  t_refusing = refuse;
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(m_mutex);
      if (!refuse) ++m_idle_handlers;
      wake.wait(lock, [&] { return !jobs.empty() || m_shutdown; });
      if (!refuse) --m_idle_handlers;
      if (jobs.empty()) return;
      job = std::move(jobs.front());
      jobs.pop_front();
    }
    job();
  }
}

} // namespace llmrepro::engine
