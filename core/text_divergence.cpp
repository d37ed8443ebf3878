#include "core/text_divergence.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "core/analysis.hpp"

namespace llmrepro::core {

namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// The distinct non-empty fingerprints over every occurrence of `completions`.
int fingerprints_of(const std::vector<DistinctCompletion>& completions) {
  std::set<std::string> distinct;
  for (const DistinctCompletion& completion : completions)
    for (const auto& [fingerprint, count] : completion.fingerprints)
      if (!fingerprint.empty() && count > 0) distinct.insert(fingerprint);
  return static_cast<int>(distinct.size());
}

template <typename Seen>
std::optional<TextDivergence> divergence_of(const std::vector<DistinctCompletion>& completions,
                                            Seen seen) {
  std::vector<std::string_view> texts;
  for (const DistinctCompletion& completion : completions)
    if (seen(completion)) texts.emplace_back(completion.text);
  return first_text_divergence(texts);
}

} // namespace

std::optional<TextDivergence> first_text_divergence(const std::vector<std::string_view>& texts) {
  if (texts.size() < 2) return std::nullopt;
  const std::string_view first = texts.front();
  std::size_t shared = first.size();
  bool differ = false;
  for (const std::string_view text : texts) {
    const auto parted =
        std::mismatch(first.begin(), first.begin() + std::min(shared, text.size()), text.begin());
    const auto common = static_cast<std::size_t>(parted.first - first.begin());
    if (common < shared || text.size() != first.size()) differ = true;
    shared = std::min(shared, common);
  }
  if (!differ) return std::nullopt;
  // A character counts only where all of its bytes are shared: step back to the start of the
  // character that the first differing byte continues in any text.
  std::size_t whole = shared;
  const auto continues_at = [&](std::size_t at) {
    return std::any_of(texts.begin(), texts.end(), [&](std::string_view text) {
      return at < text.size() && is_continuation(static_cast<unsigned char>(text[at]));
    });
  };
  while (whole > 0 && continues_at(whole)) --whole;
  TextDivergence divergence;
  divergence.bytes = static_cast<int>(shared);
  divergence.characters = static_cast<int>(
      std::count_if(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(whole),
                    [](char byte) { return !is_continuation(static_cast<unsigned char>(byte)); }));
  return divergence;
}

void judge_text_divergence(PromptAnalysis& prompt) {
  prompt.text_divergence =
      divergence_of(prompt.completions, [](const DistinctCompletion&) { return true; });
  prompt.fingerprints = fingerprints_of(prompt.completions);
  for (LevelAnalysis& level : prompt.by_concurrency)
    level.text_divergence =
        divergence_of(prompt.completions, [&](const DistinctCompletion& completion) {
          const auto found = completion.count_by_concurrency.find(level.concurrency);
          return found != completion.count_by_concurrency.end() && found->second > 0;
        });
}

} // namespace llmrepro::core
