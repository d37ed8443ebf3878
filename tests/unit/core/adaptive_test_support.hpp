// Tokens and suites the adaptive tests build their scripted analyses from.
#pragma once

#include <string>

#include "core/completion.hpp"
#include "core/suite.hpp"

namespace llmrepro::core::test {

// A token whose top-1/top-2 gap is `gap` nats.
inline TokenLogprob token_with_gap(double gap) {
  TokenLogprob token;
  token.token = "t";
  token.logprob = -0.1;
  token.top = {{"t", -0.1}, {"u", -0.1 - gap}};
  return token;
}

// `prompts` text prompts, p0, p1, ...
inline Suite suite_of(int prompts) {
  Suite suite;
  for (int p = 0; p < prompts; ++p) {
    Prompt prompt;
    prompt.id = "p" + std::to_string(p);
    prompt.text = "prompt " + std::to_string(p);
    suite.prompts.push_back(prompt);
  }
  return suite;
}

} // namespace llmrepro::core::test
