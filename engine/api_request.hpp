// Requests of the OpenAI-compatible API, parsed and validated into typed structs at the edge.
// A field that is unknown, missing or of the wrong type is an ApiError naming it; nothing is
// silently defaulted except what the OpenAI API itself documents as optional.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmrepro::engine {

// An error to answer over HTTP in the OpenAI shape
// {"error": {"message", "type", "param", "code"}}. Thrown by the parsers below and caught in
// the one place where the server turns errors into responses; it never leaves the engine.
class ApiError : public std::runtime_error {
public:
  ApiError(int status, const std::string& message, std::string param = {},
           std::string type = "invalid_request_error", std::string code = {})
      : std::runtime_error(message), m_status(status), m_param(std::move(param)),
        m_type(std::move(type)), m_code(std::move(code)) {}

  int status() const { return m_status; }
  const std::string& param() const { return m_param; }
  const std::string& type() const { return m_type; }
  const std::string& code() const { return m_code; }

private:
  int m_status;
  std::string m_param;
  std::string m_type;
  std::string m_code;
};

enum class ApiKind { completions, chat_completions };

// A validated generation request for either endpoint.
struct ApiRequest {
  ApiKind kind = ApiKind::completions;
  std::optional<std::string> model;
  // The prompt (completions) or the messages' contents joined by newlines (chat).
  std::string prompt;
  std::size_t max_tokens = 16;
  // Chat: `logprobs: true`; completions: `logprobs` given (0..20).
  bool logprobs = false;
  // Chat: `top_logprobs`; completions: the integer value of `logprobs`.
  std::size_t top_logprobs = 0;
  bool stream = false;
  bool include_usage = false;
  std::optional<long long> seed;
  // 0: greedy decoding. Above 0 (at most 2, OpenAI's range) each token is drawn from the
  // distribution at this temperature with a generator seeded by `seed` (0 without one).
  double temperature = 0.0;
};

// Parses a POST /v1/completions or /v1/chat/completions body. Throws ApiError (400).
ApiRequest parse_api_request(const std::string& body, ApiKind kind);

// A validated POST /v1/embeddings body: one or more input texts.
struct EmbeddingRequest {
  std::optional<std::string> model;
  std::vector<std::string> inputs;
};

// Parses a POST /v1/embeddings body. Throws ApiError (400).
EmbeddingRequest parse_embedding_request(const std::string& body);

} // namespace llmrepro::engine
