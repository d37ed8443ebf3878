// Where completions' texts first part, in bytes and in characters, and how many servers (by
// system_fingerprint) answered: the measures the public agent-determinism leaderboard reports,
// kept beside the token-level divergence of core/analysis.hpp. Definitions: docs/design.md
// "Text divergence and fingerprints".
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace llmrepro::core {

struct PromptAnalysis;

// The leading bytes every text shares, and the whole UTF-8 characters within them: a character
// whose bytes the texts do not all share is not counted (so a divergence inside a multi-byte
// character is at that character). Bytes that are not UTF-8 count one character each.
struct TextDivergence {
  int bytes = 0;
  int characters = 0;
  friend bool operator==(const TextDivergence&, const TextDivergence&) = default;
};

// Where `texts` first part; empty where fewer than two differ (one text, or all equal).
std::optional<TextDivergence> first_text_divergence(const std::vector<std::string_view>& texts);

// The prompt's text divergence and fingerprint count over its distinct completions, and each
// level's text divergence over the completions seen at that level
// (PromptAnalysis::text_divergence and fingerprints, LevelAnalysis::text_divergence).
void judge_text_divergence(PromptAnalysis& prompt);

} // namespace llmrepro::core
