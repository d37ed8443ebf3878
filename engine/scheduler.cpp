#include "engine/scheduler.hpp"

namespace llmrepro::engine {

Scheduler::Scheduler(const Model& model, const EngineOptions& options, std::size_t max_queue)
    : m_engine(model, options), m_max_queue(max_queue), m_thread([this] { run(); }) {}

Scheduler::~Scheduler() { stop(); }

core::Result<std::shared_ptr<Generation>> Scheduler::submit(GenerationRequest request) {
  auto generation = std::make_shared<Generation>(std::move(request));
  {
    std::lock_guard lock(m_mutex);
    if (m_stopping)
      return core::make_error(core::ErrorCode::environment, "the engine is shutting down");
    if (m_outstanding + m_incoming.size() >= m_max_queue)
      return core::make_error(core::ErrorCode::environment,
                              "the engine's queue is full (" + std::to_string(m_max_queue) +
                                  " requests queued or running); retry later");
    m_incoming.push_back(generation);
  }
  m_wake.notify_one();
  return generation;
}

void Scheduler::stop() {
  {
    std::lock_guard lock(m_mutex);
    if (m_stopping && !m_thread.joinable()) return;
    m_stopping = true;
  }
  m_wake.notify_one();
  if (m_thread.joinable()) m_thread.join();
}

std::size_t Scheduler::steps() const {
  std::lock_guard lock(m_mutex);
  return m_steps;
}

void Scheduler::run() {
  for (;;) {
    {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, [&] {
        return m_stopping || !m_incoming.empty() || m_engine.active() + m_engine.waiting() > 0;
      });
      if (m_stopping) {
        for (auto& generation : m_incoming) generation->finish("abort");
        m_incoming.clear();
        m_engine.abort_all("abort");
        m_outstanding = 0;
        return;
      }
      m_outstanding += m_incoming.size();
      for (auto& generation : m_incoming) m_engine.add(std::move(generation));
      m_incoming.clear();
    }
    m_engine.step();
    std::lock_guard lock(m_mutex);
    ++m_steps;
    m_outstanding = m_engine.active() + m_engine.waiting();
  }
}

} // namespace llmrepro::engine
