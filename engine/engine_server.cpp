#include "engine/engine_server.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "engine/api_request.hpp"
#include "engine/model.hpp"
#include "engine/openai_format.hpp"
#include "engine/scheduler.hpp"

namespace llmrepro::engine {

namespace {

constexpr const char* k_engine_version = "0.1";
constexpr const char* k_model_name = "llmrepro-tiny";
constexpr const char* k_json = "application/json";

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void write_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status();
  res.set_content(error_body(error), k_json);
}

} // namespace

struct EngineServer::Impl {
  ServeConfig config;
  Model model;
  Scheduler scheduler;
  httplib::Server server;
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
  template <typename Handler> void route_post(const char* path, Handler handler) {
    server.Post(path, [this, handler](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { (this->*handler)(req, res); });
    });
  }
  template <typename Handler> void route_get(const char* path, Handler handler) {
    server.Get(path, [this, handler](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] { (this->*handler)(req, res); });
    });
  }

  template <typename Body> static void guarded(httplib::Response& res, Body&& body) {
    try {
      body();
    } catch (const ApiError& error) {
      write_error(res, error);
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

  void handle_completions(const httplib::Request& req, httplib::Response& res) {
    handle_generation(req, res, ApiKind::completions);
  }
  void handle_chat(const httplib::Request& req, httplib::Response& res) {
    handle_generation(req, res, ApiKind::chat_completions);
  }

  void handle_generation(const httplib::Request& req, httplib::Response& res, ApiKind kind) {
    const ApiRequest request = parse_api_request(req.body, kind);
    check_model(request.model);
    const char* prompt_field = kind == ApiKind::chat_completions ? "messages" : "prompt";
    std::vector<int> prompt = model.vocabulary().encode(request.prompt);
    if (prompt.empty())
      throw ApiError(400, std::string("'") + prompt_field + "' must contain at least one word",
                     prompt_field);
    const std::size_t context = model.config().max_context;
    if (prompt.size() + request.max_tokens > context)
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

    auto submitted = scheduler.submit({std::move(prompt), request.max_tokens});
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

  void handle_embeddings(const httplib::Request& req, httplib::Response& res) {
    const EmbeddingRequest request = parse_embedding_request(req.body);
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
  void handle_flush_cache(const httplib::Request&, httplib::Response& res) {
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
    // Unknown paths and methods answer in the same error shape as everything else.
    server.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          write_error(res, ApiError(res.status, "no route for " + req.method + " " + req.path));
          return httplib::Server::HandlerResponse::Handled;
        }));
    // Each request holds a thread while its generation runs, so the pool must be as large as
    // the queue (bounded) or requests would wait unseen behind the HTTP library's own queue.
    const std::size_t threads =
        std::clamp<std::size_t>(static_cast<std::size_t>(config.max_queue) + 8, 16, 512);
    server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  }
};

core::Result<std::unique_ptr<EngineServer>> EngineServer::start(const ServeConfig& config) {
  auto invalid = [](const std::string& message) {
    return core::make_error(core::ErrorCode::usage, message);
  };
  if (config.max_num_seqs < 1) return invalid("--max-num-seqs must be at least 1");
  if (config.chunked_prefill < 0) return invalid("--chunked-prefill must be 0 (off) or positive");
  if (config.threads < 1 || config.threads > 256) return invalid("--threads must be 1..256");
  if (config.max_queue < 1) return invalid("the queue bound must be at least 1");
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
