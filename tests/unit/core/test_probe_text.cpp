#include <doctest/doctest.h>

#include <set>

#include "core/budget.hpp"
#include "core/probe_text.hpp"

using namespace llmrepro::core;

namespace {
int count_words(const std::string& text) {
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}
} // namespace

TEST_CASE("probe_prompt") {
  Prompt text_prompt{.id = "t", .text = "What is two plus two?"};
  Prompt chat_prompt{.id = "c", .messages = {{"user", "Hello there"}, {"assistant", "Hi"}}};

  SUBCASE("sweep and mixed send the prompt unchanged") {
    CHECK(*probe_prompt(text_prompt, ProbeKind::sweep).text == "What is two plus two?");
    CHECK(*probe_prompt(text_prompt, ProbeKind::mixed).text == "What is two plus two?");
  }
  SUBCASE("prefix: the same shared prefix before every prompt") {
    const std::string a = *probe_prompt(text_prompt, ProbeKind::prefix).text;
    const Prompt chat = probe_prompt(chat_prompt, ProbeKind::prefix);
    const std::string suffix = "\n\nWhat is two plus two?";
    REQUIRE(a.size() > suffix.size());
    CHECK(a.substr(a.size() - suffix.size()) == suffix);
    const std::string prefix = a.substr(0, a.size() - suffix.size());
    CHECK(count_words(prefix) == k_prefix_words + 4); // "Read the following notes." + words
    CHECK(chat.messages[0].content == prefix + "\n\nHello there");
    CHECK(chat.messages[1].content == "Hi");
    // The priming request starts with the same prefix and ends differently.
    const std::string priming = *prefix_priming_prompt().text;
    CHECK(priming == prefix + "\n\nSay ok.");
  }
  SUBCASE("long: a long context before the prompt") {
    const std::string text = *probe_prompt(text_prompt, ProbeKind::long_prompt).text;
    CHECK(count_words(text) == 1 + k_long_context_words + 5);
    CHECK(text.rfind("Context: ", 0) == 0);
  }
  SUBCASE("deterministic") {
    CHECK(filler_words(20, 5) == filler_words(20, 5));
    CHECK(filler_words(20, 5) != filler_words(20, 6));
    CHECK(count_words(filler_words(20, 5)) == 20);
  }
}

TEST_CASE("prefix_trial_is_warm") {
  CHECK_FALSE(prefix_trial_is_warm(0));
  CHECK(prefix_trial_is_warm(1));
  CHECK_FALSE(prefix_trial_is_warm(4));
  CHECK(prefix_trial_is_warm(7));
}

TEST_CASE("filler_prompt") {
  std::set<int> lengths;
  std::set<int> max_tokens;
  for (std::uint64_t i = 0; i < 50; ++i) {
    const int words = count_words(*filler_prompt(i).text);
    CHECK(words >= 8);
    CHECK(words <= 200);
    CHECK(filler_max_tokens(i) >= 4);
    CHECK(filler_max_tokens(i) <= 64);
    lengths.insert(words);
    max_tokens.insert(filler_max_tokens(i));
  }
  // Varied: batches must change shape, so the filler must not be one size.
  CHECK(lengths.size() > 20);
  CHECK(max_tokens.size() > 15);
  CHECK(*filler_prompt(3).text == *filler_prompt(3).text);
}

TEST_CASE("sized_filler") {
  const FillerShape across{true, 7};
  SUBCASE("no context, or a context it fits: the filler as it is") {
    for (std::uint64_t i = 0; i < 8; ++i) {
      const SizedPrompt plain = sized_filler(i, across, 32, std::nullopt);
      CHECK(*plain.prompt.text == *filler_prompt(i, across).text);
      CHECK(plain.max_tokens == 32);
      CHECK_FALSE(plain.shortened);
      CHECK(plain.fits);
      CHECK(plain.words == filler_word_count(i, across));
      const SizedPrompt roomy = sized_filler(i, across, 32, 8192);
      CHECK(*roomy.prompt.text == *filler_prompt(i, across).text);
      CHECK_FALSE(roomy.shortened);
    }
  }
  SUBCASE("a 256-token slot: cut to the most leading words whose bound fits") {
    // Filler 1 (odd) has 300 to 480 words: far above 256 tokens by its bound.
    const std::string whole = *filler_prompt(1, across).text;
    const SizedPrompt sized = sized_filler(1, across, 32, 256);
    CHECK(sized.shortened);
    CHECK(sized.fits);
    CHECK(sized.max_tokens == 32);
    // 64 + (bytes + 64) + 32 <= 256: at most 96 bytes of text, and one more word would not fit.
    const std::string& text = *sized.prompt.text;
    CHECK(prompt_token_bound(sized.prompt) + 32 <= 256);
    CHECK(text.size() <= 96);
    CHECK(whole.compare(0, text.size(), text) == 0);
    CHECK(whole[text.size()] == ' ');
    const std::size_t next_end = whole.find(' ', text.size() + 1);
    CHECK(128 + static_cast<long>(next_end) + 32 > 256);
    CHECK(count_words(text) == sized.words);
  }
  SUBCASE("no word fits with its max_tokens: the first word with fewer tokens, or nothing") {
    const SizedPrompt tight = sized_filler(1, across, 64, 140);
    CHECK(tight.shortened);
    CHECK(tight.words == 1);
    CHECK(tight.fits);
    CHECK(tight.max_tokens == 140 - prompt_token_bound(tight.prompt));
    CHECK(tight.max_tokens >= 1);
    CHECK_FALSE(sized_filler(1, across, 64, 128).fits);
  }
}

TEST_CASE("sized_long_prompt") {
  Prompt prompt;
  prompt.id = "q";
  prompt.text = "What is two plus two?";
  const Prompt whole = probe_prompt(prompt, ProbeKind::long_prompt);
  SUBCASE("no context or room enough: the long prompt as probe_prompt sends it") {
    CHECK(*sized_long_prompt(prompt, 16, std::nullopt).prompt.text == *whole.text);
    const SizedPrompt roomy = sized_long_prompt(prompt, 16, 8192);
    CHECK(*roomy.prompt.text == *whole.text);
    CHECK_FALSE(roomy.shortened);
    CHECK(roomy.words == k_long_context_words);
  }
  SUBCASE("a 512-token slot: the context loses words from its end, the question stays") {
    const SizedPrompt sized = sized_long_prompt(prompt, 16, 512);
    CHECK(sized.shortened);
    CHECK(sized.fits);
    CHECK(sized.words > 0);
    CHECK(sized.words < k_long_context_words);
    CHECK(prompt_token_bound(sized.prompt) + 16 <= 512);
    const std::string& text = *sized.prompt.text;
    CHECK(text.rfind("Context: ", 0) == 0);
    CHECK(text.size() > std::string("\n\nWhat is two plus two?").size());
    CHECK(text.substr(text.size() - 23) == "\n\nWhat is two plus two?");
    // Its context is the first words of the full one.
    const std::string context = text.substr(0, text.size() - 23);
    CHECK(whole.text->compare(0, context.size(), context) == 0);
    CHECK(count_words(context) == sized.words + 1); // "Context:" and the words kept
  }
  SUBCASE("not even the question fits: no context, and it does not fit") {
    const SizedPrompt sized = sized_long_prompt(prompt, 16, 150);
    CHECK(sized.words == 0);
    CHECK_FALSE(sized.fits);
  }
}

TEST_CASE("prefix_words_fitting") {
  Prompt short_prompt;
  short_prompt.id = "s";
  short_prompt.text = "What is two plus two?";
  Prompt long_prompt;
  long_prompt.id = "l";
  long_prompt.text = filler_words(20, 7);
  long_prompt.max_tokens = 64;
  const std::vector<Prompt> prompts{short_prompt, long_prompt};
  SUBCASE("no context or room enough: the whole prefix") {
    CHECK(prefix_words_fitting(prompts, 16, std::nullopt) == k_prefix_words);
    CHECK(prefix_words_fitting(prompts, 16, 8192) == k_prefix_words);
  }
  SUBCASE("a 1024-token slot: one count that fits the longest prompt with its own max_tokens") {
    const int words = prefix_words_fitting(prompts, 16, 1024);
    CHECK(words > 0);
    CHECK(words < k_prefix_words);
    // The long prompt (its 64 tokens, not the default 16) decides, and one word more does not fit.
    CHECK(prompt_token_bound(prefix_probe_prompt(long_prompt, words)) + 64 <= 1024);
    CHECK(prompt_token_bound(prefix_probe_prompt(long_prompt, words + 1)) + 64 > 1024);
    CHECK(prompt_token_bound(prefix_probe_prompt(short_prompt, words + 1)) + 16 <= 1024);
    CHECK(prefix_words_fitting({short_prompt}, 16, 1024) > words);
    // The cut prefix is the full one's first words, before the prompt, in the priming request too.
    const std::string cut = *prefix_probe_prompt(short_prompt, words).text;
    const std::string whole = *probe_prompt(short_prompt, ProbeKind::prefix).text;
    const std::string shared = cut.substr(0, cut.size() - 23);
    CHECK(whole.compare(0, shared.size(), shared) == 0);
    CHECK(prefix_priming_prompt(words).text->rfind(shared + "\n\n", 0) == 0);
  }
  SUBCASE("not even one word fits beside the longest prompt: 0") {
    const int one_word = static_cast<int>(prompt_token_bound(prefix_probe_prompt(long_prompt, 1)));
    CHECK(prefix_words_fitting(prompts, 16, one_word + 64) == 1);
    CHECK(prefix_words_fitting(prompts, 16, one_word + 63) == 0);
  }
}
