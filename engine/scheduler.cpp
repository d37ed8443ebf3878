#include "engine/scheduler.hpp"

namespace llmrepro::engine {

Scheduler::Scheduler(const Model& model, const EngineOptions& options, std::size_t max_queue)
    : m_model(model), m_options(options), m_engine(std::make_unique<BatchEngine>(model, options)),
      m_max_queue(max_queue), m_thread([this] { run(); }) {}

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

bool Scheduler::flush_prefix_cache() {
  std::future<bool> answer;
  {
    std::lock_guard lock(m_mutex);
    if (m_stopping) return false;
    m_flush_requests.emplace_back();
    answer = m_flush_requests.back().get_future();
  }
  m_wake.notify_one();
  return answer.get();
}

std::size_t Scheduler::flushes() const {
  std::lock_guard lock(m_mutex);
  return m_flushes;
}

void Scheduler::answer_flushes() {
  if (m_flush_requests.empty()) return;
  const bool idle = !m_stopping && m_engine->active() + m_engine->waiting() == 0;
  if (idle) {
    if (m_options.prefix_cache) m_engine = std::make_unique<BatchEngine>(m_model, m_options);
    m_flushes += m_flush_requests.size();
  }
  for (auto& request : m_flush_requests) request.set_value(idle);
  m_flush_requests.clear();
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
        return m_stopping || !m_incoming.empty() || !m_flush_requests.empty() ||
               m_engine->active() + m_engine->waiting() > 0;
      });
      answer_flushes();
      if (m_stopping) {
        for (auto& generation : m_incoming) generation->finish("abort");
        m_incoming.clear();
        m_engine->abort_all("abort");
        m_outstanding = 0;
        return;
      }
      m_outstanding += m_incoming.size();
      for (auto& generation : m_incoming) m_engine->add(std::move(generation));
      m_incoming.clear();
      if (m_engine->active() + m_engine->waiting() == 0) continue;
    }
    m_engine->step();
    std::lock_guard lock(m_mutex);
    ++m_steps;
    m_outstanding = m_engine->active() + m_engine->waiting();
  }
}

} // namespace llmrepro::engine
