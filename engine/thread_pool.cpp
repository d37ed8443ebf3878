#include "engine/thread_pool.hpp"

namespace llmrepro::engine {

ThreadPool::ThreadPool(int threads) : m_parts(threads < 1 ? 1 : static_cast<std::size_t>(threads)) {
  for (int i = 1; i < threads; ++i)
    m_workers.emplace_back([this, i] { run_worker(static_cast<std::size_t>(i)); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_start.notify_all();
  for (auto& worker : m_workers) worker.join();
}

void ThreadPool::parallel_for(std::size_t count,
                              const std::function<void(std::size_t, std::size_t)>& work) {
  const std::size_t parts = m_parts;
  if (parts == 1 || count < 2) {
    work(0, count);
    return;
  }
  {
    std::lock_guard lock(m_mutex);
    m_work = &work;
    m_count = count;
    m_pending = m_parts - 1;
    ++m_generation;
  }
  m_start.notify_all();
  work(0, count / parts);
  std::unique_lock lock(m_mutex);
  m_done.wait(lock, [this] { return m_pending == 0; });
  m_work = nullptr;
}

void ThreadPool::run_worker(std::size_t index) {
  std::size_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t)>* work = nullptr;
    std::size_t count = 0;
    {
      std::unique_lock lock(m_mutex);
      m_start.wait(lock, [&] { return m_stopping || m_generation != seen; });
      if (m_stopping) return;
      seen = m_generation;
      work = m_work;
      count = m_count;
    }
    const std::size_t total = m_parts;
    (*work)(count * index / total, count * (index + 1) / total);
    {
      std::lock_guard lock(m_mutex);
      --m_pending;
    }
    m_done.notify_one();
  }
}

} // namespace llmrepro::engine
