// How two completions compare (core/completion_identity.hpp).
#include "core/completion_identity.hpp"

#include <algorithm>
#include <functional>
#include <string_view>

namespace llmrepro::core::detail {
namespace {

bool is_utf8_continuation(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// Leading bytes the two texts share.
std::size_t shared_bytes(const std::string& a, const std::string& b) {
  const auto limit = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < limit && a[i] == b[i]) ++i;
  return i;
}

} // namespace

std::uint64_t identity_hash(const Completion& completion, IdentityMode mode) {
  std::uint64_t hash = std::hash<std::string_view>{}(completion.text);
  if (mode == IdentityMode::text) return hash;
  // The tokens' sizes stand for the tokens: nearly always they spell the text, which is hashed
  // already, and where they do not same_identity tells the completions apart.
  for (const auto& token : completion.tokens) hash = (hash ^ token.token.size()) * 0x100000001b3;
  return hash ^ completion.tokens.size();
}

bool same_identity(const Completion& a, const Completion& b, IdentityMode mode) {
  if (a.text != b.text) return false;
  if (mode == IdentityMode::text) return true;
  return std::equal(a.tokens.begin(), a.tokens.end(), b.tokens.begin(), b.tokens.end(),
                    [](const auto& x, const auto& y) { return x.token == y.token; });
}

std::size_t code_points_in(std::string_view text) {
  std::size_t characters = 0;
  for (char byte : text)
    if (!is_utf8_continuation(byte)) ++characters;
  return characters;
}

int shared_prefix(const Completion& a, const Completion& b, IdentityMode mode) {
  if (mode == IdentityMode::text) {
    // In characters: the first differing byte, moved back to the start of its character.
    std::size_t i = shared_bytes(a.text, b.text);
    while (i > 0 && i < a.text.size() && is_utf8_continuation(a.text[i])) --i;
    return static_cast<int>(code_points_in(std::string_view(a.text).substr(0, i)));
  }
  const auto limit = std::min(a.tokens.size(), b.tokens.size());
  std::size_t i = 0;
  while (i < limit && a.tokens[i].token == b.tokens[i].token) ++i;
  if (i == a.tokens.size() && i == b.tokens.size() && a.text != b.text) {
    // Equal tokens, different texts: the tokens do not describe the text. Place the divergence
    // at the reference token whose bytes cover the first byte where the texts part.
    const std::size_t byte = shared_bytes(a.text, b.text);
    std::size_t covered = 0;
    for (std::size_t t = 0; t < a.tokens.size(); ++t) {
      covered += token_bytes(a.tokens[t].token).size();
      if (covered > byte) return static_cast<int>(t);
    }
  }
  return static_cast<int>(i);
}

} // namespace llmrepro::core::detail
