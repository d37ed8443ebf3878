#include <doctest/doctest.h>

#include <string>

#include "core/completion_identity.hpp"
#include "core/random.hpp"

using namespace llmrepro::core;
using detail::IdentityMode;

namespace {

// Tokens from a small alphabet (so that equal sequences are common) whose texts sometimes spell
// them and sometimes do not.
Completion random_completion(SplitMix64& random) {
  const char* pieces[] = {"a", "b", "ab", ""};
  Completion completion;
  for (auto n = random.below(4); n > 0; --n) {
    TokenLogprob token;
    token.token = pieces[random.below(4)];
    completion.text += token.token;
    completion.tokens.push_back(token);
  }
  if (random.below(4) == 0) completion.text += "x";
  return completion;
}

// The identity docs/design.md defines, spelled as a key: by text, the text; by tokens, each
// token's size and text, then the text.
std::string reference_key(const Completion& completion, IdentityMode mode) {
  if (mode == IdentityMode::text) return completion.text;
  std::string key;
  for (const auto& token : completion.tokens)
    key += std::to_string(token.token.size()) + ":" + token.token.str();
  return key + "|" + completion.text;
}

} // namespace

TEST_CASE("same_identity: equal exactly where the identity keys are, in both modes") {
  SplitMix64 random(11);
  int same = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const Completion a = random_completion(random);
    const Completion b = random_completion(random);
    for (IdentityMode mode : {IdentityMode::tokens, IdentityMode::text}) {
      const bool keys_equal = reference_key(a, mode) == reference_key(b, mode);
      CHECK(detail::same_identity(a, b, mode) == keys_equal);
      // The hash finds a completion among those seen: equal wherever the identity is.
      if (keys_equal) CHECK(detail::identity_hash(a, mode) == detail::identity_hash(b, mode));
      same += keys_equal;
    }
  }
  CHECK(same > 1000); // the pairs exercise equality, not only its absence
}

TEST_CASE("identity by tokens: the same text split differently is another completion") {
  Completion split;
  split.text = "ab";
  split.tokens = {TokenLogprob{"a", 0, {}}, TokenLogprob{"b", 0, {}}};
  Completion whole;
  whole.text = "ab";
  whole.tokens = {TokenLogprob{"ab", 0, {}}};
  CHECK_FALSE(detail::same_identity(split, whole, IdentityMode::tokens));
  CHECK(detail::same_identity(split, whole, IdentityMode::text));
  CHECK(detail::shared_prefix(split, whole, IdentityMode::tokens) == 0);
  CHECK(detail::shared_prefix(split, whole, IdentityMode::text) == 2);
}
