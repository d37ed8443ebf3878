// The queue between the HTTP library's accept loop and its handler threads. The library's own
// pool queues accepted connections without bound, so a burst larger than the threads waits
// unseen until clients give up; this one holds a bounded number waiting and hands the rest to a
// few refusing threads, which answer each of their requests 503 (see refusing()). The server
// adapts it to the library's task queue interface, so that this header stays free of it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llmrepro::engine {

class ConnectionQueue {
public:
  // `handlers` threads serve connections; at most `max_waiting` wait for one; `refusers`
  // threads answer the connections beyond that.
  ConnectionQueue(std::size_t handlers, std::size_t max_waiting, std::size_t refusers);
  ~ConnectionQueue();
  ConnectionQueue(const ConnectionQueue&) = delete;
  ConnectionQueue& operator=(const ConnectionQueue&) = delete;

  void enqueue(std::function<void()> connection);
  // Serves what was accepted, then joins every thread. Idempotent.
  void shutdown();

  // True on a refusing thread: the request being handled arrived while the queue was full.
  static bool refusing();

private:
  void work(std::deque<std::function<void()>>& jobs, std::condition_variable& wake, bool refuse);

  std::size_t m_max_waiting;
  std::mutex m_mutex;
  std::deque<std::function<void()>> m_waiting;
  std::condition_variable m_wake_handlers;
  std::deque<std::function<void()>> m_refused;
  std::condition_variable m_wake_refusers;
  // Handler threads waiting for a connection: those in m_waiting beyond them are the ones that
  // actually wait.
  std::size_t m_idle_handlers = 0;
  bool m_shutdown = false;
  std::vector<std::thread> m_threads;
};

} // namespace llmrepro::engine
