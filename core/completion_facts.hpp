// What a run's analysis reads of the run alone, without the prompt's other runs: computed where
// its tokens are read. audit::ReadAhead computes them on its reading thread, so that the
// analysis's thread, the slower of the two, does only what compares runs.
#pragma once

#include <cstdint>
#include <optional>

#include "core/completion.hpp"

namespace llmrepro::core {

struct CompletionFacts {
  // A raw completion whose tokens do not spell its text (PromptAnalysis::token_text_mismatch).
  bool token_text_mismatch = false;
  // chose_below_runner_up.
  bool below_runner_up = false;
  // The fewest candidates at a position; empty without logprobs or tokens.
  std::optional<int> min_candidates;
  // detail::identity_hash by tokens.
  std::uint64_t identity = 0;
};

CompletionFacts completion_facts(const Completion& completion);

} // namespace llmrepro::core
