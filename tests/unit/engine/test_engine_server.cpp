#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "engine/engine_server.hpp"

using namespace llmrepro::engine;
using nlohmann::json;

namespace {

std::unique_ptr<EngineServer> start_server(ServeConfig config = {}) {
  config.port = 0;
  auto server = EngineServer::start(config);
  REQUIRE_MESSAGE(server.has_value(), (server ? "" : server.error().message));
  return std::move(server.value());
}

// httplib's default 5 s read timeout is shorter than a first generation takes in the TSan build
// on a loaded machine; a hung server still fails the test, only later.
std::unique_ptr<httplib::Client> make_client(int port) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port);
  client->set_read_timeout(120, 0);
  client->set_write_timeout(120, 0);
  return client;
}

json post_json(httplib::Client& client, const std::string& path, const std::string& body,
               int expected_status) {
  const auto res = client.Post(path.c_str(), body, "application/json");
  REQUIRE(res);
  CHECK_MESSAGE(res->status == expected_status, res->body);
  return json::parse(res->body);
}

// The OpenAI error shape, with the message naming `word`.
void check_error(const json& body, const std::string& word) {
  REQUIRE(body.contains("error"));
  const json& error = body["error"];
  CHECK(error["type"] == "invalid_request_error");
  CHECK(error.contains("param"));
  CHECK(error.contains("code"));
  CHECK_MESSAGE(error["message"].get<std::string>().find(word) != std::string::npos,
                error["message"].get<std::string>());
}

} // namespace

TEST_CASE("EngineServer validation") {
  auto server = start_server();
  auto client_owner = make_client(server->port());
  httplib::Client& client = *client_owner;
  SUBCASE("bad JSON") {
    check_error(post_json(client, "/v1/chat/completions", "{\"messages\": [", 400), "JSON");
  }
  SUBCASE("unknown field") {
    const json body =
        post_json(client, "/v1/completions", R"({"prompt": "The rain", "tempreature": 0})", 400);
    check_error(body, "tempreature");
    CHECK(body["error"]["param"] == "tempreature");
  }
  SUBCASE("top_logprobs above 20") {
    const json body = post_json(
        client, "/v1/chat/completions",
        R"({"messages": [{"role": "user", "content": "The rain"}], "logprobs": true, "top_logprobs": 21})",
        400);
    check_error(body, "top_logprobs");
  }
  SUBCASE("missing prompt and messages") {
    check_error(post_json(client, "/v1/completions", R"({"max_tokens": 4})", 400), "prompt");
    check_error(post_json(client, "/v1/chat/completions", R"({"max_tokens": 4})", 400), "messages");
  }
  SUBCASE("wrong types and values") {
    check_error(post_json(client, "/v1/completions", R"({"prompt": 5})", 400), "prompt");
    check_error(post_json(client, "/v1/completions", R"({"prompt": "a", "max_tokens": "4"})", 400),
                "max_tokens");
    check_error(post_json(client, "/v1/completions", R"({"prompt": "a", "temperature": 2.5})", 400),
                "temperature");
    check_error(post_json(client, "/v1/completions", R"({"prompt": "a", "n": 2})", 400), "n");
    check_error(post_json(client, "/v1/chat/completions",
                          R"({"messages": [{"role": "user", "content": "a"}], "logprobs": 1})",
                          400),
                "logprobs");
  }
  SUBCASE("unknown route") {
    const auto res = client.Get("/v1/nothing");
    REQUIRE(res);
    CHECK(res->status == 404);
    CHECK(json::parse(res->body)["error"]["message"].get<std::string>().find("/v1/nothing") !=
          std::string::npos);
  }
}

TEST_CASE("EngineServer responses") {
  ServeConfig config;
  config.seed = 3;
  auto server = start_server(config);
  CHECK(server->fingerprint() == "llmrepro-engine-0.1-bi0-pc0-cp0-s3");
  auto client_owner = make_client(server->port());
  httplib::Client& client = *client_owner;
  SUBCASE("chat completion with logprobs") {
    const json body = post_json(client, "/v1/chat/completions",
                                R"({"model": "llmrepro-tiny", "messages": [{"role": "user",
                                "content": "The weather in the valley"}], "max_tokens": 5,
                                "temperature": 0, "logprobs": true, "top_logprobs": 2, "seed": 1,
                                "response_format": {"type": "text"}})",
                                200);
    CHECK(body["object"] == "chat.completion");
    CHECK(body["system_fingerprint"] == server->fingerprint());
    CHECK(body["model"] == "llmrepro-tiny");
    const json& choice = body["choices"][0];
    CHECK(choice["finish_reason"] == "length");
    CHECK(choice["message"]["role"] == "assistant");
    const json& content = choice["logprobs"]["content"];
    REQUIRE(content.size() == 5);
    std::string text;
    for (const json& entry : content) {
      text += entry["token"].get<std::string>();
      CHECK(entry["top_logprobs"].size() == 2);
      CHECK(entry["top_logprobs"][0]["token"] == entry["token"]);
      CHECK(entry["top_logprobs"][0]["logprob"] == entry["logprob"]);
      CHECK(entry["bytes"].size() == entry["token"].get<std::string>().size());
    }
    CHECK(choice["message"]["content"] == text);
    CHECK(body["usage"]["prompt_tokens"] == 5);
    CHECK(body["usage"]["completion_tokens"] == 5);
    CHECK(body["usage"]["total_tokens"] == 10);
  }
  SUBCASE("legacy completion with logprobs, and repeatability") {
    const std::string request = R"({"prompt": "The weather in the valley", "max_tokens": 6,
                                    "temperature": 0, "logprobs": 2})";
    const json body = post_json(client, "/v1/completions", request, 200);
    CHECK(body["object"] == "text_completion");
    const json& logprobs = body["choices"][0]["logprobs"];
    REQUIRE(logprobs["tokens"].size() == 6);
    CHECK(logprobs["token_logprobs"].size() == 6);
    CHECK(logprobs["top_logprobs"][0].size() == 2);
    CHECK(logprobs["text_offset"][0] == std::string("The weather in the valley").size());
    CHECK(post_json(client, "/v1/completions", request, 200)["choices"] == body["choices"]);
  }
  SUBCASE("streamed chat completion") {
    std::string stream;
    const auto res = client.Post(
        "/v1/chat/completions",
        R"({"messages": [{"role": "user", "content": "Rice is"}], "max_tokens": 3, "stream": true,
            "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 1})",
        "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->get_header_value("Content-Type").find("text/event-stream") == 0);
    std::vector<json> chunks;
    std::size_t start = 0;
    bool done = false;
    while ((start = res->body.find("data: ", start)) != std::string::npos) {
      const std::size_t end = res->body.find("\n\n", start);
      REQUIRE(end != std::string::npos);
      const std::string payload = res->body.substr(start + 6, end - start - 6);
      if (payload == "[DONE]")
        done = true;
      else
        chunks.push_back(json::parse(payload));
      start = end;
    }
    CHECK(done);
    REQUIRE(chunks.size() == 6); // role, 3 tokens, finish, usage
    CHECK(chunks[0]["choices"][0]["delta"]["role"] == "assistant");
    for (std::size_t i = 1; i <= 3; ++i) {
      CHECK(chunks[i]["object"] == "chat.completion.chunk");
      CHECK(chunks[i]["choices"][0]["logprobs"]["content"].size() == 1);
    }
    CHECK(chunks[4]["choices"][0]["finish_reason"] == "length");
    CHECK(chunks[5]["choices"].empty());
    CHECK(chunks[5]["usage"]["completion_tokens"] == 3);
  }
  SUBCASE("models, health and embeddings") {
    auto models = client.Get("/v1/models");
    REQUIRE(models);
    CHECK(json::parse(models->body)["data"][0]["id"] == server->model_name());
    auto health = client.Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);
    const json body =
        post_json(client, "/v1/embeddings", R"({"input": ["The rain", "The rain falls"]})", 200);
    REQUIRE(body["data"].size() == 2);
    double norm = 0.0;
    for (const json& value : body["data"][0]["embedding"])
      norm += value.get<double>() * value.get<double>();
    CHECK(norm == doctest::Approx(1.0).epsilon(1e-3));
  }
}

TEST_CASE("EngineServer queue bound") {
  ServeConfig config;
  config.max_queue = 1;
  auto server = start_server(config);
  std::atomic<bool> long_done{false};
  std::thread long_request([&] {
    auto client_owner = make_client(server->port());
    httplib::Client& client = *client_owner;
    // Retried while a short request holds the only slot.
    for (;;) {
      const auto res =
          client.Post("/v1/completions", R"({"prompt": "The sun is a star", "max_tokens": 1000})",
                      "application/json");
      if (!res || res->status != 503 ||
          json::parse(res->body)["error"]["message"].get<std::string>().find("shutting") !=
              std::string::npos ||
          json::parse(res->body)["error"]["message"].get<std::string>().find("stopped") !=
              std::string::npos)
        break;
    }
    long_done = true;
  });
  auto client_owner = make_client(server->port());
  httplib::Client& client = *client_owner;
  bool saw_503 = false;
  while (!saw_503 && !long_done) {
    const auto res = client.Post("/v1/completions", R"({"prompt": "Rain", "max_tokens": 1})",
                                 "application/json");
    REQUIRE(res);
    if (res->status == 503) {
      saw_503 = true;
      CHECK(res->get_header_value("Retry-After") == "1");
      CHECK(json::parse(res->body)["error"]["message"].get<std::string>().find("queue") !=
            std::string::npos);
    }
  }
  CHECK(saw_503);
  server->stop();
  long_request.join();
}

TEST_CASE("EngineServer body limit") {
  ServeConfig config;
  config.max_body_bytes = 64;
  auto server = start_server(config);
  auto client_owner = make_client(server->port());
  httplib::Client& client = *client_owner;
  const std::string message =
      "the request body is larger than the limit of 64 bytes (llmrepro serve --max-body-bytes)";
  const std::string over = R"({"prompt": "the cat sat on the mat and the dog", "max_tokens": 1})";
  REQUIRE(over.size() > 64);
  SUBCASE("a Content-Length over the limit") {
    const json body = post_json(client, "/v1/completions", over, 413);
    CHECK(body["error"]["message"] == message);
    CHECK(body["error"]["code"] == "request_too_large");
  }
  SUBCASE("a chunked body counted as it arrives, on a route or not") {
    for (const char* path : {"/v1/completions", "/v1/nowhere"}) {
      const auto res = client.Post(
          path,
          [&](std::size_t offset, httplib::DataSink& sink) {
            if (offset < over.size()) {
              sink.write(over.data() + offset, over.size() - offset);
            } else {
              sink.done();
            }
            return true;
          },
          "application/json");
      REQUIRE(res);
      CHECK(res->status == 413);
      CHECK(json::parse(res->body)["error"]["message"] == message);
    }
  }
  // Within the limit, the same connection serves it.
  const std::string within = R"({"prompt": "the cat", "max_tokens": 1})";
  CHECK(post_json(client, "/v1/completions", within, 200)["choices"].size() == 1);
}

TEST_CASE("EngineServer settings") {
  ServeConfig config;
  config.port = 0;
  config.max_body_bytes = 0;
  auto zero_body = EngineServer::start(config);
  REQUIRE_FALSE(zero_body.has_value());
  CHECK(zero_body.error().message == "--max-body-bytes must be at least 1");
  config.max_body_bytes = 1;
  config.max_queue = 0;
  auto zero_queue = EngineServer::start(config);
  REQUIRE_FALSE(zero_queue.has_value());
  CHECK(zero_queue.error().message == "--max-queue must be at least 1");
}

TEST_CASE("EngineServer /flush_cache") {
  ServeConfig config;
  config.prefix_cache = true;
  auto server = start_server(config);
  auto client_owner = make_client(server->port());
  httplib::Client& client = *client_owner;
  const std::string request =
      R"({"messages": [{"role": "user", "content": "The old city stands on a river, where a bridge of stone has crossed the water for six hundred years and more"}], "max_tokens": 3})";
  // Chat completions report the prompt tokens found in the prefix cache.
  const auto cached = [&] {
    return post_json(client, "/v1/chat/completions", request,
                     200)["usage"]["prompt_tokens_details"]["cached_tokens"]
        .get<int>();
  };
  CHECK(cached() == 0);
  CHECK(cached() == 16);
  const auto flushed = client.Post("/flush_cache", "", "application/json");
  REQUIRE(flushed);
  CHECK(flushed->status == 200);
  CHECK(flushed->body == "Cache flushed.\n");
  CHECK(cached() == 0);
  CHECK(cached() == 16);

  SUBCASE("refused with 400 while a generation runs") {
    std::atomic<bool> long_done{false};
    std::thread long_request([&] {
      httplib::Client other("127.0.0.1", server->port());
      other.set_read_timeout(120, 0);
      const auto res =
          other.Post("/v1/completions", R"({"prompt": "The sun is a star", "max_tokens": 1000})",
                     "application/json");
      CHECK(res);
      long_done = true;
    });
    bool saw_400 = false;
    while (!saw_400 && !long_done) {
      const auto res = client.Post("/flush_cache", "", "application/json");
      REQUIRE(res);
      if (res->status == 400) {
        saw_400 = true;
        check_error(json::parse(res->body), "running");
      } else {
        CHECK(res->status == 200);
      }
    }
    CHECK(saw_400);
    long_request.join();
  }
}
