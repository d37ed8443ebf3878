#include "probes/api_key_rule.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

namespace llmrepro::probes {
namespace {

bool has_scheme(std::string_view url, std::string_view scheme) {
  return url.size() >= scheme.size() &&
         std::equal(scheme.begin(), scheme.end(), url.begin(), [](char a, char b) {
           return a == std::tolower(static_cast<unsigned char>(b));
         });
}

} // namespace

const std::vector<ConventionalKey>& conventional_keys() {
  // Each provider's documented variable and the API host it names in its own documentation.
  static const std::vector<ConventionalKey> k_table{
      {"OPENAI_API_KEY", "api.openai.com"},
      {"ANTHROPIC_API_KEY", "api.anthropic.com"},
      {"GEMINI_API_KEY", "generativelanguage.googleapis.com"},
      {"GOOGLE_API_KEY", "generativelanguage.googleapis.com"},
      {"MISTRAL_API_KEY", "api.mistral.ai"},
      {"GROQ_API_KEY", "api.groq.com"},
      {"DEEPSEEK_API_KEY", "api.deepseek.com"},
      {"TOGETHER_API_KEY", "api.together.xyz"},
      {"FIREWORKS_API_KEY", "api.fireworks.ai"},
      {"OPENROUTER_API_KEY", "openrouter.ai"},
  };
  return k_table;
}

bool key_in_clear_text(std::string_view url) {
  return has_scheme(url, "http://") && !is_loopback_host(url_host(url));
}

core::Result<std::string> choose_api_key(std::string_view url, const std::string& named,
                                         std::string_view flag, const EnvLookup& env) {
  if (!named.empty()) {
    const char* value = env(named.c_str());
    if (value == nullptr || *value == '\0')
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("{} {}: the environment variable is {}; set it to the API key, or drop "
                      "{} for an endpoint that needs none",
                      flag, named, value == nullptr ? "not set" : "empty", flag));
    return std::string(value);
  }
  if (!has_scheme(url, "https://")) return std::string();
  const std::string host = url_host(url);
  for (const ConventionalKey& row : conventional_keys()) {
    if (row.host != host) continue;
    const std::string variable(row.variable);
    if (const char* value = env(variable.c_str()); value != nullptr && *value != '\0')
      return std::string(value);
  }
  return std::string();
}

} // namespace llmrepro::probes
