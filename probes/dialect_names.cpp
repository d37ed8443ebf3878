#include "probes/dialect.hpp"

#include <algorithm>

#include "core/text_utf8.hpp"

namespace llmrepro::probes {
namespace {

// The lowercased name of a "Name: value" line, spaces around it dropped; "" without a colon.
std::string header_name(const std::string& line) {
  const std::size_t colon = line.find(':');
  if (colon == std::string::npos) return "";
  std::string_view name(line.data(), colon);
  while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
  return core::ascii_lowercase(name);
}

} // namespace

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
  case Dialect::anthropic: return "anthropic";
  }
  return "openai-chat";
}

std::vector<Dialect> all_dialects() {
  return {Dialect::openai_chat,      Dialect::openai_completions,
          Dialect::llamacpp,         Dialect::sglang,
          Dialect::ollama,           Dialect::tgi,
          Dialect::openai_responses, Dialect::gemini,
          Dialect::anthropic};
}

bool takes_tools(Dialect dialect) {
  switch (dialect) {
  case Dialect::openai_chat:
  case Dialect::ollama:
  case Dialect::openai_responses:
  case Dialect::gemini:
  case Dialect::anthropic: return true;
  case Dialect::openai_completions:
  case Dialect::llamacpp:
  case Dialect::sglang:
  case Dialect::tgi: return false;
  }
  return false;
}

std::string api_key_header(Dialect dialect) {
  if (dialect == Dialect::gemini) return "x-goog-api-key";
  if (dialect == Dialect::anthropic) return "x-api-key";
  return "";
}

std::vector<std::string> dialect_headers(Dialect dialect) {
  // The version every published example of the Messages API names; later features are opted
  // into with anthropic-beta, not a newer version.
  if (dialect == Dialect::anthropic) return {"anthropic-version: 2023-06-01"};
  return {};
}

std::vector<std::string> with_dialect_headers(Dialect dialect,
                                              const std::vector<std::string>& headers) {
  std::vector<std::string> lines = headers;
  for (const std::string& own : dialect_headers(dialect)) {
    const std::string name = header_name(own);
    const bool named = std::any_of(headers.begin(), headers.end(), [&](const std::string& line) {
      return header_name(line) == name;
    });
    if (!named) lines.push_back(own);
  }
  return lines;
}

core::Result<Dialect> parse_dialect(const std::string& text) {
  for (Dialect dialect : all_dialects())
    if (text == to_string(dialect)) return dialect;
  return core::make_error(
      core::ErrorCode::usage,
      "unknown --api '" + text +
          "' (expected auto, openai-chat, openai-completions, openai-responses, "
          "llamacpp, sglang, ollama, tgi, gemini or anthropic)");
}

} // namespace llmrepro::probes
