#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/completion.hpp"
#include "core/inline_vector.hpp"
#include "core/random.hpp"

using namespace llmrepro::core;

namespace {

// Counts the values alive, so that every construction is seen to meet its destruction.
struct Counted {
  static inline int alive = 0;
  std::string text;
  Counted() { ++alive; }
  explicit Counted(std::string t) : text(std::move(t)) { ++alive; }
  Counted(const Counted& other) : text(other.text) { ++alive; }
  Counted(Counted&& other) noexcept : text(std::move(other.text)) { ++alive; }
  Counted& operator=(const Counted&) = default;
  Counted& operator=(Counted&&) noexcept = default;
  ~Counted() { --alive; }
  friend bool operator==(const Counted& a, const Counted& b) { return a.text == b.text; }
};

using Small = InlineVector<Counted, 2>;

// Texts past the small-string buffer, so that a value copied or freed twice shows under the
// sanitizers, and short ones.
std::string text_for(SplitMix64& random) {
  const auto n = random.below(3) == 0 ? 40 : random.below(6);
  return std::string(n, static_cast<char>('a' + random.below(26)));
}

void check_same(const Small& small, const std::vector<Counted>& reference) {
  REQUIRE(small.size() == reference.size());
  CHECK(small.empty() == reference.empty());
  CHECK(small.is_inline() == (small.capacity() == 2));
  for (std::size_t i = 0; i < reference.size(); ++i) CHECK(small[i].text == reference[i].text);
  CHECK(static_cast<std::size_t>(small.end() - small.begin()) == reference.size());
}

} // namespace

TEST_CASE("InlineVector: two elements stay inline, the third moves them all to the heap") {
  TokenCandidates top;
  CHECK(top.is_inline());
  top.push_back({"a", -0.1});
  top.push_back({"b", -0.2});
  CHECK(top.is_inline());
  CHECK(sizeof(TokenCandidates) == 2 * sizeof(TokenCandidate) + 8);
  top.push_back({"c", -0.3});
  CHECK_FALSE(top.is_inline());
  CHECK(top.size() == 3);
  CHECK(top[0].token == "a");
  CHECK(top[2].logprob == -0.3);
  top.clear();
  CHECK(top.empty());
  CHECK_FALSE(top.is_inline()); // clear keeps the capacity, as std::vector's does
}

TEST_CASE("InlineVector: push_back of its own element while growing") {
  Small small{Counted("first element, longer than a short string"), Counted("b")};
  small.push_back(small[0]);
  small.push_back(std::move(small[1]));
  REQUIRE(small.size() == 4);
  CHECK(small[2].text == "first element, longer than a short string");
  CHECK(small[3].text == "b");
}

TEST_CASE("InlineVector: behaves as std::vector over 20,000 random operations") {
  SplitMix64 random(20261207);
  {
    Small small;
    std::vector<Counted> reference;
    Small other;
    std::vector<Counted> other_reference;
    for (int step = 0; step < 20000; ++step) {
      switch (random.below(12)) {
      case 0:
      case 1:
      case 2: {
        const std::string text = text_for(random);
        small.push_back(Counted(text));
        reference.emplace_back(text);
        break;
      }
      case 3:
        if (!reference.empty()) {
          small.pop_back();
          reference.pop_back();
        }
        break;
      case 4: {
        const auto n = random.below(6);
        small.resize(n);
        reference.resize(n);
        break;
      }
      case 5:
        small.clear();
        reference.clear();
        break;
      case 6: // copy both ways
        other = small;
        other_reference = reference;
        break;
      case 7: { // move out and back
        Small moved(std::move(small));
        CHECK(small.empty());
        CHECK(small.is_inline());
        small = std::move(moved);
        break;
      }
      case 8:
        std::swap(small, other);
        std::swap(reference, other_reference);
        break;
      case 9:
        if (!reference.empty()) {
          const auto at = random.below(reference.size());
          small.erase(small.begin() + at);
          reference.erase(reference.begin() + static_cast<std::ptrdiff_t>(at));
        }
        break;
      case 10: small.reserve(random.below(8)); break;
      case 11: {
        Small copy(small);
        CHECK(copy == small);
        small = copy; // a copy assigned back: the same elements
        break;
      }
      }
      check_same(small, reference);
      check_same(other, other_reference);
    }
  }
  CHECK(Counted::alive == 0);
}

TEST_CASE("InlineVector: a token's candidates sort in place, inline or not") {
  for (const std::size_t n : {2U, 5U}) {
    TokenLogprob token;
    token.token = "x";
    token.logprob = -1.0;
    for (std::size_t i = 0; i < n; ++i)
      token.top.push_back(
          {i == 0 ? std::string("x") : "y" + std::to_string(i), -1.0 - static_cast<double>(n - i)});
    Completion completion;
    completion.tokens.push_back(token);
    sort_candidates(completion);
    const auto& sorted = completion.tokens[0].top;
    REQUIRE(sorted.size() == n);
    for (std::size_t i = 1; i < n; ++i) CHECK(sorted[i - 1].logprob >= sorted[i].logprob);
    CHECK(sorted[n - 1].token == "x");
  }
}
