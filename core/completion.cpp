#include "core/completion.hpp"

#include <algorithm>

namespace llmrepro::core {

void sort_candidates(Completion& completion) {
  for (auto& token : completion.tokens) {
    // Stable, so equal logprobs keep the endpoint's order and the result is deterministic.
    std::stable_sort(token.top.begin(), token.top.end(),
                     [](const TokenCandidate& a, const TokenCandidate& b) {
                       return a.logprob > b.logprob;
                     });
  }
}

} // namespace llmrepro::core
