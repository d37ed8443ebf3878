#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/random.hpp"
#include "core/token_text.hpp"

using namespace llmrepro::core;

namespace {

// Sizes around the inline limit and past it, with any byte (NUL, 0xFF: the heap's tag value).
// Half of them are prefixes of one text, so that equal texts reached by different histories
// (a long text shortened, a moved-from one refilled) are compared often.
std::string random_text(SplitMix64& random) {
  static const std::size_t sizes[] = {0, 1, 7, 14, 15, 16, 17, 31, 100};
  static const std::string shared = [] {
    SplitMix64 bytes(99);
    std::string text(100, '\0');
    for (char& c : text) c = static_cast<char>(bytes.below(256));
    return text;
  }();
  const std::size_t size = sizes[random.below(std::size(sizes))];
  if (random.below(2) == 0) return shared.substr(0, size);
  std::string text(size, '\0');
  for (char& c : text) c = static_cast<char>(random.below(256));
  return text;
}

} // namespace

TEST_CASE("TokenText: up to 15 bytes inline, 16 and more on the heap, any bytes") {
  CHECK(sizeof(TokenText) == 16);
  CHECK(TokenText().empty());
  CHECK(TokenText().is_inline());
  const std::string fifteen(15, '\xFF'); // the heap's tag value in every byte
  const TokenText inline_text(fifteen);
  CHECK(inline_text.is_inline());
  CHECK(inline_text.size() == 15);
  CHECK(inline_text == fifteen);
  const TokenText heap_text(std::string(16, 'x'));
  CHECK_FALSE(heap_text.is_inline());
  CHECK(heap_text.view() == std::string(16, 'x'));
  const std::string with_nul("a\0b", 3);
  CHECK(TokenText(with_nul).size() == 3);
  CHECK(TokenText(with_nul) == with_nul);
  CHECK(TokenText("ab") < TokenText("b"));
  CHECK(TokenText("") == "");
  std::string joined = "x";
  joined += TokenText("yz");
  CHECK(joined == "xyz");
}

TEST_CASE("TokenText: assigned its own bytes, inline and on the heap") {
  for (const std::size_t size : {3U, 15U, 40U}) {
    TokenText text(std::string(size, 'q'));
    text = text.view().substr(1); // a view into the text itself
    CHECK(text == std::string(size - 1, 'q'));
    const TokenText& same = text;
    text = same;
    CHECK(text.size() == size - 1);
  }
}

TEST_CASE("TokenText: equal texts compare equal whatever their bytes held before") {
  TokenText shortened(std::string(15, 'z'));
  shortened = "ab"; // the 13 bytes after "ab" held 'z'
  CHECK(shortened == TokenText("ab"));
  TokenText from_heap(std::string(40, 'z'));
  from_heap = "ab";
  CHECK(from_heap == shortened);
  TokenText moved_from("abcdefghijklmno");
  const TokenText taken(std::move(moved_from));
  CHECK(moved_from == TokenText());
  moved_from = "a";
  CHECK(moved_from == TokenText("a"));
  TokenText cleared("abcdefgh");
  cleared.clear();
  CHECK(cleared == TokenText(""));
  TokenText self("abcdefghijk");
  self = self.view().substr(9); // its own last two bytes, "jk"
  CHECK(self == TokenText("jk"));
  CHECK_FALSE(TokenText(std::string(15, 'a')) == TokenText(std::string(16, 'a')));
  CHECK(TokenText(std::string(16, 'a')) == TokenText(std::string(16, 'a')));
  CHECK_FALSE(TokenText(std::string(16, 'a')) == TokenText(std::string(17, 'a')));
  CHECK_FALSE(TokenText(std::string("a\0", 2)) == TokenText("a"));
}

TEST_CASE("TokenText: behaves as std::string over 20,000 random operations") {
  SplitMix64 random(7);
  std::vector<TokenText> texts(8);
  std::vector<std::string> reference(8);
  for (int step = 0; step < 20000; ++step) {
    const auto i = random.below(texts.size());
    const auto j = random.below(texts.size());
    switch (random.below(6)) {
    case 0: {
      const std::string text = random_text(random);
      texts[i] = text;
      reference[i] = text;
      break;
    }
    case 1:
      texts[i] = texts[j];
      reference[i] = reference[j];
      break;
    case 2:
      if (i == j) break;
      texts[i] = std::move(texts[j]);
      reference[i] = std::move(reference[j]);
      reference[j].clear(); // a moved-from text is empty
      break;
    case 3: {
      TokenText moved(std::move(texts[i]));
      CHECK(texts[i].empty());
      texts[i] = std::move(moved);
      break;
    }
    case 4:
      std::swap(texts[i], texts[j]);
      std::swap(reference[i], reference[j]);
      break;
    case 5:
      texts[i].clear();
      reference[i].clear();
      break;
    }
    for (std::size_t k = 0; k < texts.size(); ++k) {
      REQUIRE(texts[k].view() == reference[k]);
      CHECK(texts[k].is_inline() == (reference[k].size() <= TokenText::k_inline));
      CHECK((texts[k] == texts[j]) == (reference[k] == reference[j]));
      CHECK((texts[k] < texts[j]) == (reference[k] < reference[j]));
    }
  }
}
