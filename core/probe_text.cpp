#include "core/probe_text.hpp"

#include <array>
#include <string_view>

#include "core/budget.hpp"
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

std::string long_context(int words) { return "Context: " + filler_words(words, k_long_seed); }

std::string prefix_text(int words) {
  return "Read the following notes. " + filler_words(words, k_prefix_seed);
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
  case ProbeKind::mixed:
  case ProbeKind::mixed_sampling:
  case ProbeKind::restart: return prompt;
  case ProbeKind::prefix: return prefix_probe_prompt(prompt, k_prefix_words);
  case ProbeKind::long_prompt: return with_preamble(prompt, long_context(k_long_context_words));
  }
  return prompt;
}

bool prefix_trial_is_warm(int repeat) { return repeat % 2 == 1; }

Prompt prefix_priming_prompt(int words) {
  Prompt prompt;
  prompt.id = "prefix-priming";
  prompt.text = prefix_text(words) + "\n\nSay ok.";
  return prompt;
}

Prompt prefix_probe_prompt(const Prompt& prompt, int words) {
  return with_preamble(prompt, prefix_text(words));
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

namespace {

// Whether `prompt` with `max_tokens` fits `context` by its bound.
bool fits_context(const Prompt& prompt, int max_tokens, int context) {
  return prompt_token_bound(prompt) + max_tokens <= context;
}

// The most of `words_total` words with which `fits(n)` holds, 0 where not even one does. Every
// bound grows with the words, so a binary search.
template <typename Fits> int most_words_fitting(int words_total, const Fits& fits) {
  int low = 0, high = words_total;
  while (low < high) {
    const int mid = low + (high - low + 1) / 2;
    if (fits(mid))
      low = mid;
    else
      high = mid - 1;
  }
  return low;
}

} // namespace

SizedPrompt sized_filler(std::uint64_t index, const FillerShape& shape, int max_tokens,
                         std::optional<int> context) {
  SizedPrompt sized;
  sized.prompt = filler_prompt(index, shape);
  sized.max_tokens = max_tokens;
  sized.words = filler_word_count(index, shape);
  if (!context || fits_context(sized.prompt, max_tokens, *context)) return sized;
  // The filler's words are a prefix of one seeded stream, so n words are its first n.
  SplitMix64 random = filler_random(index, shape);
  (void)words_of(random, index, shape);
  const std::uint64_t words_seed = random.next();
  const auto make = [&](int words) {
    Prompt prompt = sized.prompt;
    prompt.text = filler_words(words, words_seed);
    return prompt;
  };
  sized.shortened = true;
  sized.words = most_words_fitting(
      sized.words, [&](int words) { return fits_context(make(words), max_tokens, *context); });
  if (sized.words > 0) {
    sized.prompt = make(sized.words);
    return sized;
  }
  sized.words = 1;
  sized.prompt = make(1);
  sized.max_tokens = *context - static_cast<int>(prompt_token_bound(sized.prompt));
  sized.fits = sized.max_tokens >= 1;
  return sized;
}

int prefix_words_fitting(const std::vector<Prompt>& prompts, int max_tokens,
                         std::optional<int> context) {
  if (!context) return k_prefix_words;
  const auto fits_all = [&](int words) {
    if (!fits_context(prefix_priming_prompt(words), 1, *context)) return false;
    for (const Prompt& prompt : prompts)
      if (!fits_context(prefix_probe_prompt(prompt, words), prompt.max_tokens.value_or(max_tokens),
                        *context))
        return false;
    return true;
  };
  return most_words_fitting(k_prefix_words, fits_all);
}

SizedPrompt sized_long_prompt(const Prompt& prompt, int max_tokens, std::optional<int> context) {
  SizedPrompt sized;
  sized.prompt = probe_prompt(prompt, ProbeKind::long_prompt);
  sized.max_tokens = max_tokens;
  sized.words = k_long_context_words;
  if (!context || fits_context(sized.prompt, max_tokens, *context)) return sized;
  const auto make = [&](int words) { return with_preamble(prompt, long_context(words)); };
  sized.shortened = true;
  sized.words = most_words_fitting(k_long_context_words, [&](int words) {
    return fits_context(make(words), max_tokens, *context);
  });
  sized.prompt = make(sized.words);
  sized.fits = fits_context(sized.prompt, max_tokens, *context);
  return sized;
}

} // namespace llmrepro::core
