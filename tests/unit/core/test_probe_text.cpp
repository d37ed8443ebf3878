#include <doctest/doctest.h>

#include <set>

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
