// A fixed pool of threads that splits independent work items (rows, heads, output columns)
// between them. It never splits a reduction, so the thread count never changes a result.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llmrepro::engine {

class ThreadPool {
public:
  // threads <= 1 runs everything on the calling thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Calls work(begin, end) over contiguous ranges covering [0, count), one range per thread,
  // and returns when all are done. Not reentrant: one caller at a time.
  void parallel_for(std::size_t count, const std::function<void(std::size_t, std::size_t)>& work);

  int size() const { return static_cast<int>(m_parts); }

private:
  void run_worker(std::size_t index);

  // Threads in all, the caller included; fixed before any worker starts.
  const std::size_t m_parts;
  std::vector<std::thread> m_workers;
  std::mutex m_mutex;
  std::condition_variable m_start;
  std::condition_variable m_done;
  const std::function<void(std::size_t, std::size_t)>* m_work = nullptr;
  std::size_t m_count = 0;
  std::size_t m_generation = 0;
  std::size_t m_pending = 0;
  bool m_stopping = false;
};

} // namespace llmrepro::engine
