#include "engine/engine_server.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <httplib.h>
#include <sys/socket.h>

#include "engine/api_request.hpp"
#include "engine/connection_queue.hpp"
#include "engine/model.hpp"
#include "engine/openai_format.hpp"
#include "engine/scheduler.hpp"

namespace llmrepro::engine {

namespace {

constexpr const char* k_engine_version = "0.1";
constexpr const char* k_model_name = "llmrepro-tiny";
constexpr const char* k_json = "application/json";
// The listening socket's backlog: room for a burst of simultaneous connections (the kernel caps
// it at net.core.somaxconn, 4096 by default).
constexpr int k_listen_backlog = 4096;
// Threads answering the connections that find the queue full: each only reads one request and
// answers 503, so a few keep up with any burst.
constexpr std::size_t k_refusers = 2;
// How much of a body past the limit is read and dropped to keep the connection in step for its
// next request; a body longer than that has the connection closed on it.
constexpr std::uint64_t k_max_drain_bytes = std::uint64_t{1} << 30;
// The most of a body reserved from its Content-Length before it arrives.
constexpr std::uint64_t k_reserve_max = std::uint64_t{8} << 20;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status();
  // A 503 is a full queue or a stopping engine: the client may try again shortly.
  if (error.status() == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(error), k_json);
}

ApiError body_too_large(std::uint64_t limit) {
  return ApiError(413,
                  "the request body is larger than the limit of " + std::to_string(limit) +
                      " bytes (llmrepro serve --max-body-bytes)",
                  "", "invalid_request_error", "request_too_large");
}

// The library's server with the listening socket's backlog widened. The library is a shared
// object built with a backlog of 5, so a burst of connections overflowed the accept queue and
// clients hung or were reset; listen() again on the bound socket sets the backlog.
class HttpServer : public httplib::Server {
public:
  bool widen_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

// The library's task queue interface over ConnectionQueue.
class BoundedTaskQueue : public httplib::TaskQueue {
public:
  BoundedTaskQueue(std::size_t handlers, std::size_t max_waiting)
      : m_queue(handlers, max_waiting, k_refusers) {}
  void enqueue(std::function<void()> connection) override {
    m_queue.enqueue(std::move(connection));
  }
  void shutdown() override { m_queue.shutdown(); }

private:
  ConnectionQueue m_queue;
};

} // namespace

struct EngineServer::Impl {
  ServeConfig config;
  Model model;
  Scheduler scheduler;
  HttpServer server;
  std::thread listener;
  int port = 0;
  std::string fingerprint;
  std::atomic<std::uint64_t> next_id{1};
  std::mutex mutex;
  std::condition_variable stopped_changed;
  bool stopped = false;

  Impl(const ServeConfig& serve_config, const ModelConfig& model_config,
       const EngineOptions& options)
      : config(serve_config), model(model_config),
        scheduler(model, options, static_cast<std::size_t>(serve_config.max_queue)) {
    fingerprint = std::string("llmrepro-engine-") + k_engine_version + "-bi" +
                  (config.batch_invariant ? "1" : "0") + "-pc" + (config.prefix_cache ? "1" : "0") +
                  "-cp" + std::to_string(config.chunked_prefill) + "-s" +
                  std::to_string(config.seed);
  }

  // Every route goes through here: the one place where an error becomes an HTTP response.
  // POST bodies are read by read_body, within the limit, before any handler sees them.
  using PostHandler = void (Impl::*)(const std::string& body, httplib::Response& res);
  void route_post(const char* path, PostHandler handler) {
    server.Post(path, [this, handler](const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
      guarded(res, [&] {
        const std::string body = read_body(req, res, reader);
        refuse_if_full();
        (this->*handler)(body, res);
      });
    });
  }
  template <typename Handler> void route_get(const char* path, Handler handler) {
    server.Get(path, [this, handler](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        refuse_if_full();
        (this->*handler)(req, res);
      });
    });
  }

  // A request with a body on no route: read within the limit too (the library would buffer a
  // chunked one whole), then answered 404 in the API's error shape.
  void route_unknown_with_body() {
    const auto no_route = [this](const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& reader) {
      guarded(res, [&] {
        (void)read_body(req, res, reader);
        throw ApiError(404, "no route for " + req.method + " " + req.path);
      });
    };
    server.Post(".*", no_route);
    server.Put(".*", no_route);
    server.Patch(".*", no_route);
    server.Delete(".*", no_route);
  }

  // Reads the body within config.max_body_bytes. A Content-Length over the limit is refused
  // by the library (set_payload_max_length: it drops the body, status 413); a chunked body is
  // counted here as it streams in. Past the limit the rest is read and dropped (up to
  // k_max_drain_bytes) so that the connection stays in step, memory holds at most the limit,
  // and the answer is a 413 without the body ever being parsed.
  std::string read_body(const httplib::Request& req, httplib::Response& res,
                        const httplib::ContentReader& reader) const {
    const std::uint64_t limit = config.max_body_bytes;
    std::string body;
    // Reserved from the header only up to the default limit: the client states the length, and
    // a higher --max-body-bytes must not let it claim the memory before sending anything.
    if (req.has_header("Content-Length")) {
      const std::uint64_t length = req.get_header_value<std::uint64_t>("Content-Length");
      if (length <= limit) body.reserve(static_cast<std::size_t>(std::min(length, k_reserve_max)));
    }
    std::uint64_t received = 0;
    bool over = false;
    const bool complete = reader([&](const char* data, std::size_t size) {
      received += size;
      if (received <= limit) {
        body.append(data, size);
        return true;
      }
      if (!over) std::string().swap(body);
      over = true;
      return received - limit <= k_max_drain_bytes;
    });
    if (over || res.status == 413) throw body_too_large(limit);
    if (!complete)
      throw ApiError(400, "the request body could not be read (malformed chunked encoding or a "
                          "connection closed early)");
    return body;
  }

  // On a thread of the connection queue's refusers, every request is answered 503.
  void refuse_if_full() const {
    if (ConnectionQueue::refusing())
      throw ApiError(503,
                     "the server's connection queue is full (every handler is busy and " +
                         std::to_string(config.max_queue) +
                         " connections are waiting); retry later",
                     "", "server_error", "queue_full");
  }

  template <typename Body> static void guarded(httplib::Response& res, Body&& body) {
    try {
      body();
    } catch (const ApiError& error) {
      write_error(res, error);
      // A refused connection is closed after its answer, so that the few refusing threads are
      // not held by clients that keep it alive.
      if (ConnectionQueue::refusing()) res.set_header("Connection", "close");
    } catch (const std::exception& error) {
      write_error(
          res, ApiError(500, std::string("internal error: ") + error.what(), "", "server_error"));
    }
  }

  void check_model(const std::optional<std::string>& requested) const {
    if (requested && *requested != k_model_name)
      throw ApiError(404,
                     "The model '" + *requested + "' does not exist; this engine serves '" +
                         k_model_name + "'",
                     "model", "invalid_request_error", "model_not_found");
  }

  void handle_completions(const std::string& body, httplib::Response& res) {
    handle_generation(body, res, ApiKind::completions);
  }
  void handle_chat(const std::string& body, httplib::Response& res) {
    handle_generation(body, res, ApiKind::chat_completions);
  }

  void handle_generation(const std::string& body, httplib::Response& res, ApiKind kind) {
    const ApiRequest request = parse_api_request(body, kind);
    check_model(request.model);
    const char* prompt_field = kind == ApiKind::chat_completions ? "messages" : "prompt";
    std::vector<int> prompt = model.vocabulary().encode(request.prompt);
    if (prompt.empty())
      throw ApiError(400, std::string("'") + prompt_field + "' must contain at least one word",
                     prompt_field);
    const std::size_t context = model.config().max_context;
    if (request.max_tokens > context || prompt.size() > context - request.max_tokens)
      throw ApiError(400,
                     "the prompt (" + std::to_string(prompt.size()) + " tokens) plus " +
                         "'max_tokens' (" + std::to_string(request.max_tokens) +
                         ") exceed the context of " + std::to_string(context) + " tokens",
                     "max_tokens");

    ResponseContext response;
    const std::uint64_t id = next_id.fetch_add(1);
    char hex[32];
    std::snprintf(hex, sizeof hex, "%012llx", static_cast<unsigned long long>(id));
    response.id = std::string(kind == ApiKind::chat_completions ? "chatcmpl-" : "cmpl-") + hex;
    response.created = unix_now();
    response.model = k_model_name;
    response.fingerprint = fingerprint;
    response.prompt_tokens = prompt.size();
    response.prompt_chars = request.prompt.size();

    auto submitted = scheduler.submit({std::move(prompt), request.max_tokens, request.temperature,
                                       static_cast<std::uint64_t>(request.seed.value_or(0))});
    if (!submitted)
      throw ApiError(503, submitted.error().message, "", "server_error", "queue_full");
    std::shared_ptr<Generation> generation = std::move(submitted.value());

    if (!request.stream) {
      const Generation::Snapshot snapshot = generation->wait_finished();
      if (snapshot.finish_reason == "abort")
        throw ApiError(503, "the engine stopped before the request finished", "", "server_error");
      res.set_content(completion_body(request, response, model.vocabulary(), snapshot), k_json);
      return;
    }

    // Streaming: the provider runs after this handler returns, once per burst of tokens.
    struct StreamState {
      std::size_t sent = 0;
      std::size_t chars = 0;
      bool opened = false;
    };
    auto state = std::make_shared<StreamState>();
    const Vocabulary& vocabulary = model.vocabulary();
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [request, response, generation, state, &vocabulary](std::size_t, httplib::DataSink& sink) {
          const Generation::Snapshot snapshot = generation->wait_after(state->sent);
          const std::string events = stream_events(
              request, response, vocabulary, snapshot.tokens, state->sent, state->chars,
              !state->opened, snapshot.finished, snapshot.finish_reason, snapshot.cached_tokens);
          state->opened = true;
          for (const TokenChoice& token : snapshot.tokens)
            state->chars += vocabulary.token_text(token.token).size();
          state->sent += snapshot.tokens.size();
          if (!sink.write(events.data(), events.size())) return false;
          if (snapshot.finished) sink.done();
          return true;
        },
        [generation](bool success) {
          if (!success) generation->cancel();
        });
  }

  void handle_embeddings(const std::string& body, httplib::Response& res) {
    const EmbeddingRequest request = parse_embedding_request(body);
    check_model(request.model);
    std::vector<std::vector<float>> embeddings;
    std::size_t tokens = 0;
    for (std::size_t i = 0; i < request.inputs.size(); ++i) {
      const std::vector<int> ids = model.vocabulary().encode(request.inputs[i]);
      if (ids.empty())
        throw ApiError(400, "'input[" + std::to_string(i) + "]' must contain at least one word",
                       "input");
      tokens += ids.size();
      embeddings.push_back(model.embed(ids));
    }
    res.set_content(embeddings_body(embeddings, k_model_name, tokens), k_json);
  }

  // SGLang's /flush_cache: 200 and a plain-text line once the prefix cache is empty; 400 when
  // generations are running, since flushing under them would change what they reuse.
  void handle_flush_cache(const std::string&, httplib::Response& res) {
    if (!scheduler.flush_prefix_cache())
      throw ApiError(400, "cache not flushed: requests are running or waiting; retry when idle");
    res.set_content("Cache flushed.\n", "text/plain");
  }

  void handle_models(const httplib::Request&, httplib::Response& res) {
    res.set_content(models_body(k_model_name, fingerprint), k_json);
  }

  void handle_health(const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", k_json);
  }

  void install_routes() {
    route_post("/v1/completions", &Impl::handle_completions);
    route_post("/v1/chat/completions", &Impl::handle_chat);
    route_post("/v1/embeddings", &Impl::handle_embeddings);
    route_post("/flush_cache", &Impl::handle_flush_cache);
    route_get("/v1/models", &Impl::handle_models);
    route_get("/health", &Impl::handle_health);
    route_unknown_with_body();
    // Unknown paths and methods answer in the same error shape as everything else; so does a
    // body the library refused for its Content-Length.
    const std::uint64_t limit = config.max_body_bytes;
    server.set_error_handler(httplib::Server::HandlerWithResponse(
        [limit](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          write_error(res, res.status == 413 ? body_too_large(limit)
                                             : ApiError(res.status, "no route for " + req.method +
                                                                        " " + req.path));
          return httplib::Server::HandlerResponse::Handled;
        }));
    server.set_payload_max_length(static_cast<std::size_t>(limit));
    // Without it, a keep-alive response's second write waits for the client's delayed ACK
    // (about 40 ms on Linux). Set on the listening socket; accepted sockets inherit it.
    server.set_tcp_nodelay(true);
    // Each request holds a thread while its generation runs, so there are as many threads as
    // the scheduler's queue (bounded); at most max_queue connections wait for one, and the rest
    // are answered 503 at once (ConnectionQueue) rather than waiting unseen.
    const std::size_t threads =
        std::clamp<std::size_t>(static_cast<std::size_t>(config.max_queue) + 8, 16, 512);
    const auto waiting = static_cast<std::size_t>(config.max_queue);
    server.new_task_queue = [threads, waiting] { return new BoundedTaskQueue(threads, waiting); };
  }
};

core::Result<std::unique_ptr<EngineServer>> EngineServer::start(const ServeConfig& config) {
  auto invalid = [](const std::string& message) {
    return core::make_error(core::ErrorCode::usage, message);
  };
  if (config.max_num_seqs < 1) return invalid("--max-num-seqs must be at least 1");
  if (config.chunked_prefill < 0) return invalid("--chunked-prefill must be 0 (off) or positive");
  if (config.threads < 1 || config.threads > 256) return invalid("--threads must be 1..256");
  if (config.max_queue < 1) return invalid("--max-queue must be at least 1");
  if (config.max_body_bytes < 1) return invalid("--max-body-bytes must be at least 1");
  if (config.port < 0 || config.port > 65535) return invalid("--port must be 0..65535");

  ModelConfig model_config;
  model_config.seed = config.seed;
  EngineOptions options;
  options.max_num_seqs = config.max_num_seqs;
  options.batch_invariant = config.batch_invariant;
  options.prefix_cache = config.prefix_cache;
  options.chunked_prefill = config.chunked_prefill;
  options.threads = config.threads;
  auto impl = std::make_unique<Impl>(config, model_config, options);
  impl->install_routes();

  if (config.port == 0) {
    impl->port = impl->server.bind_to_any_port(config.host);
    if (impl->port < 0)
      return core::make_error(core::ErrorCode::environment,
                              "cannot listen on " + config.host + " (any port)");
  } else {
    if (!impl->server.bind_to_port(config.host, config.port))
      return core::make_error(core::ErrorCode::environment, "cannot listen on " + config.host +
                                                                ":" + std::to_string(config.port) +
                                                                " (in use or not allowed)");
    impl->port = config.port;
  }
  if (!impl->server.widen_backlog(k_listen_backlog))
    return core::make_error(core::ErrorCode::environment, "cannot listen on " + config.host +
                                                              " with a backlog of " +
                                                              std::to_string(k_listen_backlog));
  Impl* raw = impl.get();
  impl->listener = std::thread([raw] { raw->server.listen_after_bind(); });
  for (int i = 0; i < 500 && !impl->server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return std::unique_ptr<EngineServer>(new EngineServer(std::move(impl)));
}

EngineServer::EngineServer(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

EngineServer::~EngineServer() { stop(); }

int EngineServer::port() const { return m_impl->port; }

std::string EngineServer::base_url() const {
  return "http://" + m_impl->config.host + ":" + std::to_string(m_impl->port);
}

std::string EngineServer::fingerprint() const { return m_impl->fingerprint; }

std::string EngineServer::model_name() const { return k_model_name; }

void EngineServer::wait() {
  std::unique_lock lock(m_impl->mutex);
  m_impl->stopped_changed.wait(lock, [&] { return m_impl->stopped; });
}

void EngineServer::stop() {
  {
    std::lock_guard lock(m_impl->mutex);
    if (m_impl->stopped) return;
    m_impl->stopped = true;
  }
  // The scheduler first, so that handlers waiting on a generation return; then the listener.
  m_impl->scheduler.stop();
  m_impl->server.stop();
  if (m_impl->listener.joinable()) m_impl->listener.join();
  m_impl->stopped_changed.notify_all();
}

} // namespace llmrepro::engine
