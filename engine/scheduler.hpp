// The scheduler thread behind the HTTP server: takes submitted generations, and while any is
// queued or active runs BatchEngine steps back to back, so requests join and leave the batch
// between steps (continuous batching).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/result.hpp"
#include "engine/batch_engine.hpp"

namespace llmrepro::engine {

class Scheduler {
public:
  // Starts the thread. At most `max_queue` generations may be queued or active at once.
  Scheduler(const Model& model, const EngineOptions& options, std::size_t max_queue);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request; fails (ErrorCode::environment) when the queue is full or the scheduler
  // has stopped.
  core::Result<std::shared_ptr<Generation>> submit(GenerationRequest request);

  // Stops the thread; unfinished generations finish with reason "abort". Idempotent.
  void stop();

  // Steps run so far (for tests and statistics).
  std::size_t steps() const;

private:
  void run();

  BatchEngine m_engine;
  std::size_t m_max_queue;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  std::vector<std::shared_ptr<Generation>> m_incoming;
  std::size_t m_outstanding = 0;
  std::size_t m_steps = 0;
  bool m_stopping = false;
  std::thread m_thread;
};

} // namespace llmrepro::engine
