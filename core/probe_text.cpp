#include "core/probe_text.hpp"

#include <array>
#include <string_view>

#include "core/random.hpp"

namespace llmrepro::core {

namespace {

// Plain English words: every tokenizer knows them, so lengths in tokens stay predictable.
constexpr std::array<std::string_view, 32> k_words{
    "the",   "river",    "stone",  "light",   "north",  "garden", "window", "paper",
    "quiet", "table",    "green",  "music",   "early",  "winter", "bridge", "market",
    "cloud", "house",    "storm",  "field",   "letter", "silver", "forest", "harbor",
    "clock", "mountain", "yellow", "station", "summer", "valley", "story",  "road"};

constexpr std::uint64_t k_prefix_seed = 0x70726566697831ULL;
constexpr std::uint64_t k_long_seed = 0x6C6F6E67637478ULL;
constexpr std::uint64_t k_filler_seed = 0x66696C6C6572ULL;

Prompt with_preamble(const Prompt& prompt, const std::string& preamble) {
  Prompt out = prompt;
  if (out.text) {
    out.text = preamble + "\n\n" + *out.text;
  } else if (!out.messages.empty()) {
    out.messages.front().content = preamble + "\n\n" + out.messages.front().content;
  }
  return out;
}

std::string prefix_text() {
  return "Read the following notes. " + filler_words(k_prefix_words, k_prefix_seed);
}

} // namespace

std::string filler_words(int words, std::uint64_t seed) {
  SplitMix64 random(seed);
  std::string out;
  for (int i = 0; i < words; ++i) {
    if (i > 0) out += ' ';
    out += k_words[static_cast<std::size_t>(random.below(k_words.size()))];
  }
  return out;
}

Prompt probe_prompt(const Prompt& prompt, ProbeKind probe) {
  switch (probe) {
  case ProbeKind::sweep:
  case ProbeKind::mixed: return prompt;
  case ProbeKind::prefix: return with_preamble(prompt, prefix_text());
  case ProbeKind::long_prompt:
    return with_preamble(prompt, "Context: " + filler_words(k_long_context_words, k_long_seed));
  }
  return prompt;
}

bool prefix_trial_is_warm(int repeat) { return repeat % 2 == 1; }

Prompt prefix_priming_prompt() {
  Prompt prompt;
  prompt.id = "prefix-priming";
  prompt.text = prefix_text() + "\n\nSay ok.";
  return prompt;
}

namespace {

// The generator of filler `index`: the standard shape keeps the stream it always had, so that
// audits stored before the profile existed send the same fillers when resumed.
SplitMix64 filler_random(std::uint64_t index, const FillerShape& shape) {
  std::uint64_t seed = k_filler_seed ^ (index * 0x9E3779B97F4A7C15ULL);
  if (shape.across_256) seed ^= 0x323536ULL ^ (shape.seed * 0xD6E8FEB86659FD93ULL);
  return SplitMix64(seed);
}

int words_of(SplitMix64& random, std::uint64_t index, const FillerShape& shape) {
  if (!shape.across_256) return 8 + static_cast<int>(random.below(193));
  // Plain English words are one token each in common tokenizers (and in the reference engine):
  // 200 words plus a chat template stays below 256 tokens, 300 words is well above it.
  return index % 2 == 0 ? 16 + static_cast<int>(random.below(185))
                        : 300 + static_cast<int>(random.below(181));
}

} // namespace

int filler_word_count(std::uint64_t index, const FillerShape& shape) {
  SplitMix64 random = filler_random(index, shape);
  return words_of(random, index, shape);
}

Prompt filler_prompt(std::uint64_t index, const FillerShape& shape) {
  Prompt prompt;
  prompt.id = "filler-" + std::to_string(index);
  SplitMix64 random = filler_random(index, shape);
  const int words = words_of(random, index, shape);
  prompt.text = filler_words(words, random.next());
  return prompt;
}

int filler_max_tokens(std::uint64_t index) {
  SplitMix64 random(k_filler_seed ^ 0x5A5A ^ (index * 0xBF58476D1CE4E5B9ULL));
  return 4 + static_cast<int>(random.below(61));
}

} // namespace llmrepro::core
