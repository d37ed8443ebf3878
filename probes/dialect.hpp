// API dialects: how each kind of endpoint is asked for a completion, and how its answer maps to
// the canonical core::Completion. Everything dialect-specific stays behind this header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/completion.hpp"
#include "core/result.hpp"
#include "core/suite.hpp"

namespace llmrepro::probes {

enum class Dialect {
  openai_chat,        // POST /v1/chat/completions (OpenAI, vLLM, SGLang, llama.cpp, Ollama, TGI)
  openai_completions, // POST /v1/completions (legacy shape; llama.cpp answers in the chat shape)
  llamacpp,           // POST /completion (llama.cpp native, old and new probability shapes)
  sglang,             // POST /generate (SGLang native, meta_info triples)
  ollama,             // POST /api/chat or /api/generate (Ollama native)
  tgi,                // POST /generate (TGI native, details.top_tokens)
  openai_responses,   // POST /v1/responses (OpenAI's Responses API, vLLM, llama.cpp)
  gemini,             // POST .../models/{model}:generateContent (Gemini API, Vertex AI)
  anthropic,          // POST /v1/messages (Anthropic's Messages API; no logprobs)
};

// "openai-chat", "openai-completions", "llamacpp", "sglang", "ollama", "tgi",
// "openai-responses", "gemini", "anthropic".
const char* to_string(Dialect dialect);
core::Result<Dialect> parse_dialect(const std::string& text);
std::vector<Dialect> all_dialects();

// Whether the dialect sends a prompt's `tools` and reads its answers' tool calls, so that agent
// chains run through it: openai-chat, ollama, openai-responses, gemini and anthropic.
bool takes_tools(Dialect dialect);

// How a chat request names its token limit and its logprobs. OpenAI's current chat spec marks
// `max_tokens` deprecated and incompatible with its reasoning models, while vLLM, SGLang,
// llama.cpp, Ollama and TGI read `max_tokens`; Together takes `logprobs` as an integer count
// of candidates and has no `top_logprobs` parameter.
enum class ChatRequestForm {
  common,         // max_tokens, logprobs: true, top_logprobs: k
  openai_current, // max_completion_tokens, logprobs: true, top_logprobs: k (api.openai.com)
  together,       // max_tokens, logprobs: k (api.together.xyz, api.together.ai)
};

// --logprobs-form: how a chat request asks for logprobs. by_host: Together's integer count on
// its own hosts, OpenAI's `logprobs: true, top_logprobs: k` elsewhere; openai or together: that
// form on any host (a proxy or a self-hosted gateway serving Together's API shape).
enum class LogprobsForm { by_host, openai, together };

// "auto" (by_host), "openai", "together".
const char* to_string(LogprobsForm form);
core::Result<LogprobsForm> parse_logprobs_form(const std::string& text);

// The chat request form for a base URL, decided by its host: OpenAI's own API
// (api.openai.com) takes the current spec, Together's (api.together.xyz, api.together.ai)
// its integer logprobs; every other host, self-hosted servers included, the common form.
// `logprobs` other than by_host overrides the host's logprobs form: together sends the
// integer count (with max_tokens) anywhere, openai sends the common form to Together's hosts.
ChatRequestForm chat_request_form_of(const std::string& base_url,
                                     LogprobsForm logprobs = LogprobsForm::by_host);

struct GenerationParams {
  std::string model; // may be empty where the API allows
  int max_tokens = 128;
  int top_logprobs = 2;   // 0..20
  std::uint64_t seed = 0; // sent where the API takes one
  bool stream = false;
  // llamacpp only: /completion also names `model` (a router, or a --model given).
  bool native_model = false;
  ChatRequestForm chat_form = ChatRequestForm::common; // openai-chat requests only
  // openai-chat, openai-responses and gemini: false leaves the logprobs parameters out, for a
  // model that refuses them (capability_preflight.hpp); its completions are then compared by
  // text alone.
  bool logprobs = true;
  // No temperature at all: the provider's default sampling (--temperature default, or a model
  // that refuses temperature 0). Sampled requests still send theirs.
  bool provider_temperature = false;
  // False leaves the seed out, for an endpoint that refuses it.
  bool send_seed = true;
  // llamacpp only: `"cache_prompt": false`, the prompt cache left out of this request (the
  // prefix probe's cold trials: llama.cpp has no cache flush route).
  bool bypass_prompt_cache = false;
  // Sampling on (the mixed-sampling probe's fillers): temperature 1 and top_p 1 instead of
  // greedy decoding, with `seed` where the API takes one. Never set for an audited request.
  bool sampled = false;
};

// The HTTP request to send: POST `path` (appended to the base URL) with a JSON `body`.
struct DialectRequest {
  std::string path;
  std::string body;
};

// Builds the request for one prompt: temperature 0 (1, with top_p 1, where params.sampled; none
// where params.provider_temperature),
// logprobs with top_logprobs candidates where the API has them, the seed where accepted, max_tokens
// (from the prompt when it sets one, else params).
DialectRequest build_request(Dialect dialect, const core::Prompt& prompt,
                             const GenerationParams& params);

// The header that carries the API key to `dialect`: "x-goog-api-key" for gemini (Google's
// APIs take the key there, never in the URL), "x-api-key" for anthropic, "" for the others,
// which send "Authorization: Bearer <key>".
std::string api_key_header(Dialect dialect);

// The "Name: value" lines every request to `dialect` carries besides the key: anthropic's
// "anthropic-version: 2023-06-01" (the API refuses a request without a version); none for the
// others. A --header naming the same header replaces it (with_dialect_headers).
std::vector<std::string> dialect_headers(Dialect dialect);

// `headers` (the user's --header lines) followed by the dialect's own headers that `headers`
// does not already name (header names compared without regard to case).
std::vector<std::string> with_dialect_headers(Dialect dialect,
                                              const std::vector<std::string>& headers);

// Parses a 2xx response body (an SSE stream when `stream`) into a Completion with candidates
// sorted. Malformed or truncated bodies are an ErrorCode::endpoint error naming what was wrong
// ("<dialect>: stream event 3: missing field ..."). An error the endpoint sent in place of a
// completion (an error envelope, a `data: {"error": ...}` event mid-stream, a failed Responses
// status, a blocked Gemini prompt) is the error "<dialect>: endpoint error: <reason>", never
// prefixed with the event that carried it; endpoint_error_of() tells it apart.
core::Result<core::Completion> parse_response(Dialect dialect, std::string_view body, bool stream);

inline constexpr const char* k_endpoint_error = "endpoint error: ";

// The endpoint's reason when `error` (from parse_response for `dialect`) is an error the
// endpoint sent rather than a body that failed to parse; nullopt otherwise.
std::optional<std::string> endpoint_error_of(Dialect dialect, const core::Error& error);

// Whether an error body or reason names a refusal of this very request, which the server will
// repeat on every retry: llama.cpp's output failing its own chat-format check, a parse or
// validation failure, the invalid_request_error type (case-insensitive wordings). The
// scheduler does not retry a 5xx or a mid-stream error that says so.
bool names_request_refusal(std::string_view text);

// A one-line reason from an error body of any dialect (OpenAI envelope, vLLM flat, TGI, Ollama),
// falling back to a bounded, sanitised prefix of the body.
std::string describe_error_body(std::string_view body);

} // namespace llmrepro::probes
