// `llmrepro serve`: the reference engine behind an OpenAI-compatible HTTP API on loopback or any
// address, with SGLang's POST /flush_cache to empty its prefix cache between cold trials. The CLI
// and the embedded audit target start it through this header only; the HTTP library stays inside
// the implementation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.hpp"

namespace llmrepro::engine {

struct ServeConfig {
  std::string host = "127.0.0.1";
  int port = 8000; // 0 = any free port
  int max_num_seqs = 16;
  bool batch_invariant = false;
  bool prefix_cache = false;
  int chunked_prefill = 0;
  std::uint64_t seed = 0;
  int threads = 1;
  // The most requests queued or running at once; beyond it a request is answered 503
  // (queue_full, Retry-After: 1). Also the most connections waiting for a handler thread.
  int max_queue = 1024;
  // The largest request body read; a larger one is answered 413 before it is parsed.
  std::uint64_t max_body_bytes = std::uint64_t{8} << 20;
};

class EngineServer {
public:
  // Builds the model, starts the scheduler and listens. Fails (ErrorCode::usage) on a bad
  // setting and (ErrorCode::environment) when the address cannot be bound.
  static core::Result<std::unique_ptr<EngineServer>> start(const ServeConfig& config);

  // The port actually bound (the chosen one when config.port was 0).
  int port() const;
  // "http://HOST:PORT".
  std::string base_url() const;
  // The system_fingerprint of every response: engine build and mode, e.g.
  // "llmrepro-engine-0.1-bi0-pc0-cp0-s0".
  std::string fingerprint() const;
  // The one model id served (GET /v1/models).
  std::string model_name() const;

  // Blocks until stop() is called (from another thread).
  void wait();
  // Stops listening and the scheduler; requests in flight end with an error. Idempotent.
  void stop();

  ~EngineServer();
  EngineServer(const EngineServer&) = delete;
  EngineServer& operator=(const EngineServer&) = delete;

private:
  struct Impl;
  explicit EngineServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

} // namespace llmrepro::engine
