#include "probes/dialect.hpp"

#include <algorithm>
#include <iterator>
#include <new>
#include <optional>

#include "core/reasoning.hpp"
#include "core/text_utf8.hpp"
#include "probes/detail/dialect_adapters.hpp"

namespace llmrepro::probes {

namespace {

// Bounds on what describe_error_body() returns: a reason, not a dump of the body.
constexpr std::size_t k_fallback_prefix_bytes = 200;
constexpr std::size_t k_max_reason_bytes = 1000;

// Control characters (newlines included) become spaces so the reason stays on one line; the
// cut never splits a UTF-8 sequence.
std::string one_line(std::string_view text, std::size_t max_bytes) {
  bool cut = text.size() > max_bytes;
  if (cut) {
    std::size_t end = max_bytes;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) --end;
    text = text.substr(0, end);
  }
  std::string line;
  line.reserve(text.size() + 3);
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    line.push_back(byte < 0x20U || byte == 0x7FU ? ' ' : c);
  }
  if (cut) line += "...";
  return line;
}

// The message of an error envelope, or nullopt when `body` is not one.
std::optional<std::string> envelope_message(std::string_view body) {
  detail::Json root;
  try {
    root = detail::parse_json(body);
  } catch (const detail::ParseFailure&) {
    return std::nullopt;
  }
  if (!root.is_object()) return std::nullopt;
  auto error = root.find("error");
  if (error != root.end()) {
    // OpenAI, llama.cpp, vLLM >= 0.10.1, Ollama's OpenAI routes: {"error": {"message": ...}}.
    if (error->is_object()) {
      auto message = error->find("message");
      if (message != error->end() && message->is_string()) return message->get<std::string>();
    }
    // TGI {"error": "...", "error_type": ...} and Ollama native {"error": "..."}.
    if (error->is_string()) return error->get<std::string>();
  }
  // vLLM before 0.10.1 and SGLang's OpenAI routes: {"object": "error", "message": ...}.
  auto object = root.find("object");
  auto message = root.find("message");
  if (object != root.end() && *object == "error" && message != root.end() && message->is_string())
    return message->get<std::string>();
  return std::nullopt;
}

template <typename Parse> core::Result<core::Completion> guarded(Dialect dialect, Parse&& parse) {
  std::string prefix = std::string(to_string(dialect)) + ": ";
  try {
    detail::lone_surrogates_on_thread() = 0;
    core::Completion completion = parse();
    completion.lone_surrogates = static_cast<int>(detail::lone_surrogates_on_thread());
    // Adapters keep every token in the order sent and fill reasoning_text where their API
    // parses the reasoning out; the one cut between the two parts is made here, for all.
    core::separate_reasoning(completion);
    core::sort_candidates(completion);
    return completion;
  } catch (const detail::EndpointErrorEvent& event) {
    return core::make_error(core::ErrorCode::endpoint,
                            prefix + std::string(k_endpoint_error) + event.what());
  } catch (const detail::ParseFailure& failure) {
    return core::make_error(core::ErrorCode::endpoint, prefix + failure.what());
  } catch (const std::bad_alloc&) {
    return core::make_error(core::ErrorCode::endpoint, prefix + "response too large to parse");
  } catch (const std::exception& error) {
    // A JSON library error the typed getters did not anticipate: still data, not a crash.
    return core::make_error(core::ErrorCode::endpoint,
                            prefix + "unreadable response: " + one_line(error.what(), 200));
  }
}

} // namespace

DialectRequest build_request(Dialect dialect, const core::Prompt& prompt,
                             const GenerationParams& params) {
  switch (dialect) {
  case Dialect::openai_chat: return detail::build_openai_chat_request(prompt, params);
  case Dialect::openai_completions: return detail::build_openai_completions_request(prompt, params);
  case Dialect::llamacpp: return detail::build_llamacpp_request(prompt, params);
  case Dialect::sglang: return detail::build_sglang_request(prompt, params);
  case Dialect::ollama: return detail::build_ollama_request(prompt, params);
  case Dialect::tgi: return detail::build_tgi_request(prompt, params);
  case Dialect::openai_responses: return detail::build_openai_responses_request(prompt, params);
  case Dialect::gemini: return detail::build_gemini_request(prompt, params);
  case Dialect::anthropic: return detail::build_anthropic_request(prompt, params);
  }
  return detail::build_openai_chat_request(prompt, params);
}

core::Result<core::Completion> parse_response(Dialect dialect, std::string_view body, bool stream) {
  return guarded(dialect, [&]() -> core::Completion {
    switch (dialect) {
    case Dialect::openai_chat: return detail::parse_openai_chat(body, stream);
    case Dialect::openai_completions: return detail::parse_openai_completions(body, stream);
    case Dialect::llamacpp: return detail::parse_llamacpp(body, stream);
    case Dialect::sglang: return detail::parse_sglang(body, stream);
    case Dialect::ollama: return detail::parse_ollama(body, stream);
    case Dialect::tgi: return detail::parse_tgi(body, stream);
    case Dialect::openai_responses: return detail::parse_openai_responses(body, stream);
    case Dialect::gemini: return detail::parse_gemini(body, stream);
    case Dialect::anthropic: return detail::parse_anthropic(body, stream);
    }
    detail::fail("unknown dialect");
  });
}

std::optional<std::string> endpoint_error_of(Dialect dialect, const core::Error& error) {
  const std::string marker = std::string(to_string(dialect)) + ": " + k_endpoint_error;
  if (error.message.rfind(marker, 0) != 0) return std::nullopt;
  return error.message.substr(marker.size());
}

bool names_request_refusal(std::string_view text) {
  // Wordings of a server refusing this one request, which it will refuse again: llama.cpp's
  // check of the model's output against the chat format ("The model produced output that does
  // not match the expected ... format", a 500 server_error), parse and validation failures, and
  // the OpenAI error type of a bad request that some servers send with a 5xx.
  static constexpr std::string_view k_wordings[] = {"does not match the expected",
                                                    "failed to parse", "validation error",
                                                    "validationerror", "invalid_request_error"};
  const std::string lowered = core::ascii_lowercase(text);
  return std::any_of(std::begin(k_wordings), std::end(k_wordings), [&](std::string_view wording) {
    return lowered.find(wording) != std::string::npos;
  });
}

std::string describe_error_body(std::string_view body) {
  if (auto message = envelope_message(body)) return one_line(*message, k_max_reason_bytes);
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return "empty body";
  return one_line(body, k_fallback_prefix_bytes);
}

} // namespace llmrepro::probes
