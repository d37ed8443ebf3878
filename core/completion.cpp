#include "core/completion.hpp"

#include <algorithm>
#include <string_view>

namespace llmrepro::core {

std::optional<bool> TokenLogprob::greedy() const {
  if (top.empty() || !is_known_logprob(logprob)) return std::nullopt;
  const auto sampled = std::find_if(top.begin(), top.end(),
                                    [&](const TokenCandidate& c) { return c.token == token; });
  if (sampled == top.end()) return false;
  // Compared by value, not by rank: a tie listed in either order is still greedy.
  for (const auto& candidate : top)
    if (is_known_logprob(candidate.logprob) && candidate.logprob > sampled->logprob) return false;
  return true;
}

const char* to_string(ReasoningSplit split) {
  switch (split) {
  case ReasoningSplit::none: return "none";
  case ReasoningSplit::separate: return "separate";
  case ReasoningSplit::joined: return "joined";
  }
  return "none";
}

ReasoningSplit parse_reasoning_split(const std::string& text) {
  if (text == "separate") return ReasoningSplit::separate;
  if (text == "joined") return ReasoningSplit::joined;
  return ReasoningSplit::none;
}

namespace {

void sort_candidates(std::vector<TokenLogprob>& tokens) {
  // Unknown values (NaN) sort last, which keeps the ordering strict and weak.
  const auto before = [](const TokenCandidate& a, const TokenCandidate& b) {
    const bool a_known = is_known_logprob(a.logprob);
    const bool b_known = is_known_logprob(b.logprob);
    if (a_known != b_known) return a_known;
    return a_known && a.logprob > b.logprob;
  };
  for (auto& token : tokens) {
    // Stable, so equal logprobs keep the endpoint's order and the result is deterministic.
    // Most endpoints send them sorted already: a stable sort would leave them as they are, and
    // allocate its buffer for nothing.
    if (!std::is_sorted(token.top.begin(), token.top.end(), before))
      std::stable_sort(token.top.begin(), token.top.end(), before);
  }
}

} // namespace

void sort_candidates(Completion& completion) {
  sort_candidates(completion.tokens);
  sort_candidates(completion.reasoning_tokens);
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

} // namespace

std::string token_bytes(std::string_view token) {
  constexpr std::string_view prefix = "bytes:";
  if (token.size() <= prefix.size() || !token.starts_with(prefix)) return std::string(token);
  std::string bytes;
  std::size_t i = prefix.size();
  while (i < token.size()) {
    if (i + 3 < token.size() && token[i] == '\\' && token[i + 1] == 'x') {
      const int high = hex_digit(token[i + 2]);
      const int low = hex_digit(token[i + 3]);
      if (high >= 0 && low >= 0) {
        bytes += static_cast<char>(high * 16 + low);
        i += 4;
        continue;
      }
    }
    return std::string(token); // not the escaped form: an ordinary token that starts with "bytes:"
  }
  return bytes;
}

bool tokens_match_text(const Completion& completion) {
  // Compared in place, token after token: only a "bytes:" spelling differs from its bytes.
  const std::string_view text = completion.text;
  std::size_t at = 0;
  const auto next_is = [&](std::string_view bytes) {
    if (text.size() - at < bytes.size() || text.compare(at, bytes.size(), bytes) != 0) return false;
    at += bytes.size();
    return true;
  };
  for (const auto& token : completion.tokens) {
    const std::string_view spelled = token.token;
    if (!(spelled.starts_with("bytes:") ? next_is(token_bytes(spelled)) : next_is(spelled)))
      return false;
  }
  return at == text.size();
}

} // namespace llmrepro::core
