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

} // namespace

TEST_CASE("same_identity: equal exactly where the identity keys are, in both modes") {
  SplitMix64 random(11);
  int same = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const Completion a = random_completion(random);
    const Completion b = random_completion(random);
    for (IdentityMode mode : {IdentityMode::tokens, IdentityMode::text}) {
      const bool keys_equal = detail::identity_key(a, mode) == detail::identity_key(b, mode);
      CHECK(detail::same_identity(a, b, mode) == keys_equal);
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
