// Private to probes: the per-dialect halves of dialect.hpp and the shapes they share.
// Parsers throw detail::ParseFailure (json_access.hpp); parse_response() catches it.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/completion.hpp"
#include "core/suite.hpp"
#include "probes/dialect.hpp"
#include "probes/detail/json_access.hpp"

namespace llmrepro::probes::detail {

DialectRequest build_openai_chat_request(const core::Prompt& prompt,
                                         const GenerationParams& params);
DialectRequest build_openai_completions_request(const core::Prompt& prompt,
                                                const GenerationParams& params);
DialectRequest build_gemini_request(const core::Prompt& prompt, const GenerationParams& params);
DialectRequest build_anthropic_request(const core::Prompt& prompt, const GenerationParams& params);
DialectRequest build_llamacpp_request(const core::Prompt& prompt, const GenerationParams& params);
DialectRequest build_sglang_request(const core::Prompt& prompt, const GenerationParams& params);
DialectRequest build_ollama_request(const core::Prompt& prompt, const GenerationParams& params);
DialectRequest build_tgi_request(const core::Prompt& prompt, const GenerationParams& params);
DialectRequest build_openai_responses_request(const core::Prompt& prompt,
                                              const GenerationParams& params);

// Each returns the completion with candidates not yet sorted; parse_response() sorts.
core::Completion parse_openai_chat(std::string_view body, bool stream);
core::Completion parse_openai_completions(std::string_view body, bool stream);
core::Completion parse_llamacpp(std::string_view body, bool stream);
core::Completion parse_sglang(std::string_view body, bool stream);
core::Completion parse_ollama(std::string_view body, bool stream);
core::Completion parse_tgi(std::string_view body, bool stream);
core::Completion parse_openai_responses(std::string_view body, bool stream);
core::Completion parse_gemini(std::string_view body, bool stream);
core::Completion parse_anthropic(std::string_view body, bool stream);

// max_tokens from the prompt when it sets one, else from the parameters.
int effective_max_tokens(const core::Prompt& prompt, const GenerationParams& params);

// The temperature every builder writes into `place` (the body, or its options object): 1, with
// top_p 1 under `top_p_key` (none where null), where params.sampled; 0 for greedy decoding;
// nothing at all where params.provider_temperature (the provider's default sampling).
void put_temperature(Json& place, const GenerationParams& params, const char* top_p_key = "top_p");

// params.seed under "seed" in `place`, unless params.send_seed is false (a refused seed).
void put_seed(Json& place, const GenerationParams& params);

// A tool call the endpoint made, its arguments (JSON text) canonical (core::canonical_json); text
// that is no JSON document (a model writes what it writes) is kept as one JSON string, so that
// two calls still compare by what they said.
core::ToolCall tool_call_of(std::string name, std::string_view arguments, std::string id);

// The prompt's `tools` (OpenAI's function shape, core::Prompt::tools_json) as parsed JSON; null
// where it has none.
Json prompt_tools(const core::Prompt& prompt);

// The prompt's tools as the functions themselves, {name, description?, parameters?} each (the
// `function` member of OpenAI's shape), in order: what the dialects with a flat tool shape
// (Anthropic's, the Responses API's, Gemini's functionDeclarations) build theirs from. Empty
// where it has none.
std::vector<Json> prompt_functions(const core::Prompt& prompt);

// A call's canonical arguments as JSON (core::ToolCall::arguments), for the dialects that send
// them back as an object rather than as text.
Json call_arguments(const core::ToolCall& call);

// The prompt's response_format as JSON. The suite loader only lets valid JSON through; text
// that does not parse is sent as a JSON string, so the endpoint rejects it visibly.
Json response_format(const core::Prompt& prompt);

// Serialises a request body; invalid UTF-8 in prompt text is replaced, never thrown on.
std::string dump_body(const Json& body);

// One token in the OpenAI chat shape, also used by llama.cpp and Ollama:
// {token, logprob, bytes?, top_logprobs?: [{token, logprob, bytes?}]}. Other keys (id) are
// ignored; an absent, null or empty top_logprobs means no candidates (Ollama omits it when
// empty). Tokens are read with read_token_text(), log probabilities with read_logprob().
core::TokenLogprob read_openai_token(const JsonView& entry, core::NumberAnomalies& numbers);

// Member `key` of a token or candidate object: the token string, or where the object's `bytes`
// are not the UTF-8 of that string (a byte fragment, which OpenAI and llama.cpp send as
// U+FFFD "\ufffd" with its real bytes beside it) OpenAI's own spelling of those bytes,
// "bytes:\xe2\x80" (two lowercase hex digits a byte), which core::token_bytes() reads back.
// Applied alike to a sampled token and its candidates, so the one is still found among the
// others. Absent, null or malformed bytes, or none, keep the string.
std::string read_token_text(const JsonView& entry, std::string_view key);

// OpenAI's spelling of a byte fragment's bytes, "bytes:\xe2\x80", which read_token_text()
// gives a token whose `bytes` are not the UTF-8 of its string.
std::string spelled_token_bytes(std::string_view raw);

// What read_logprob() makes of a number literal of `kind`, counted in `numbers`; nullopt for a
// finite one, whose value is its own.
std::optional<double> non_finite_logprob(JsonNumber kind, core::NumberAnomalies& numbers);

// A candidate or token logprob. Every -inf spelling maps to core::k_logprob_floor: -9999.0,
// float lowest, -Infinity and a negative literal past a double's range. NaN, Infinity, a
// positive overflowing literal and null (TGI's schema allows it) carry no usable number and
// map to core::k_unknown_logprob. Each of those literals is counted in `numbers` by its kind;
// none fails the request.
double read_logprob(const JsonView& value, core::NumberAnomalies& numbers);

// log(p) for probability shapes; p == 0 maps to the floor, a finite p outside [0, 1] is an
// error. The literals read_logprob() maps are mapped and counted the same way.
double read_probability_as_logprob(const JsonView& value, core::NumberAnomalies& numbers);

// Throws EndpointErrorEvent(<reason>) when `root` is an error envelope ({"error": ...} or
// vLLM's flat {"object": "error", ...}) instead of a completion.
void fail_on_error_envelope(const JsonView& root, std::string_view text);

// The data of every event of an SSE body, the unterminated last one included.
std::vector<std::string> sse_events(std::string_view body);

// Runs `step`, prefixing any ParseFailure it throws with `prefix` ("stream event 3: ").
template <typename Step> void with_prefix(const std::string& prefix, Step&& step) {
  try {
    step();
  } catch (const ParseFailure& failure) {
    fail(prefix + failure.what());
  }
}

// "stream event <n>: " for the 0-based event index `index`.
std::string event_prefix(std::size_t index);

// Runs `step`, prefixing any ParseFailure it throws with event_prefix(`index`), which is only
// written then.
template <typename Step> void with_event_prefix(std::size_t index, Step&& step) {
  try {
    step();
  } catch (const ParseFailure& failure) {
    fail(event_prefix(index) + failure.what());
  }
}

// The token count at `path` below `object` ({"usage", "prompt_tokens"}), or nullopt when a
// member on the way is absent or null: usage counts are optional in every dialect. A present
// count that is no integer fails as the getters do.
std::optional<long> optional_count(const JsonView& object,
                                   std::initializer_list<std::string_view> path);

} // namespace llmrepro::probes::detail
