#include "probes/dialect.hpp"

namespace llmrepro::probes {

const char* to_string(Dialect dialect) {
  switch (dialect) {
  case Dialect::openai_chat: return "openai-chat";
  case Dialect::openai_completions: return "openai-completions";
  case Dialect::llamacpp: return "llamacpp";
  case Dialect::sglang: return "sglang";
  case Dialect::ollama: return "ollama";
  case Dialect::tgi: return "tgi";
  case Dialect::openai_responses: return "openai-responses";
  case Dialect::gemini: return "gemini";
  }
  return "openai-chat";
}

std::vector<Dialect> all_dialects() {
  return {Dialect::openai_chat,      Dialect::openai_completions,
          Dialect::llamacpp,         Dialect::sglang,
          Dialect::ollama,           Dialect::tgi,
          Dialect::openai_responses, Dialect::gemini};
}

std::string api_key_header(Dialect dialect) {
  return dialect == Dialect::gemini ? "x-goog-api-key" : "";
}

core::Result<Dialect> parse_dialect(const std::string& text) {
  for (Dialect dialect : all_dialects())
    if (text == to_string(dialect)) return dialect;
  return core::make_error(
      core::ErrorCode::usage,
      "unknown --api '" + text +
          "' (expected auto, openai-chat, openai-completions, openai-responses, "
          "llamacpp, sglang, ollama, tgi or gemini)");
}

} // namespace llmrepro::probes
