// The scheduler thread behind the HTTP server: takes submitted generations, and while any is
// queued or active runs BatchEngine steps back to back, so requests join and leave the batch
// between steps (continuous batching). The batch engine is touched by the scheduler thread only,
// so a cache flush asked for by an HTTP handler is queued to that thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <future>
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

  // Empties the prefix cache, as SGLang's /flush_cache does: the scheduler thread does it at its
  // next scheduling point, and only when no generation is running or waiting in the batch (a
  // generation submitted at the same time is admitted after the flush). Blocks until then.
  // Returns true when flushed (also when the engine keeps no prefix cache, so there is nothing
  // to flush), false when generations were running or the scheduler has stopped.
  bool flush_prefix_cache();

  // Flushes done so far (for tests and statistics).
  std::size_t flushes() const;

  // Stops the thread; unfinished generations finish with reason "abort". Idempotent.
  void stop();

  // Steps run so far (for tests and statistics).
  std::size_t steps() const;

private:
  void run();
  // On the scheduler thread with m_mutex held: answers every queued flush.
  void answer_flushes();

  const Model& m_model;
  EngineOptions m_options;
  // Rebuilt on a flush: a fresh engine has an empty prefix cache and no other state to keep.
  std::unique_ptr<BatchEngine> m_engine;
  std::size_t m_max_queue;
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  std::vector<std::shared_ptr<Generation>> m_incoming;
  std::size_t m_outstanding = 0;
  std::size_t m_steps = 0;
  std::vector<std::promise<bool>> m_flush_requests;
  std::size_t m_flushes = 0;
  bool m_stopping = false;
  std::thread m_thread;
};

} // namespace llmrepro::engine
