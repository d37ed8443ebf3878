// Word-pair counts from the corpus, turned into a prior that the model adds to its output
// logits: the transformer alone has random weights, the prior makes its text locally plausible.
// Successor counts are small integers, so two candidates often share the same prior and only
// the transformer's context-dependent part separates them: the near-ties that make greedy
// decoding fragile in real models.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/vocabulary.hpp"

namespace llmrepro::engine {

class BigramPrior {
public:
  struct Entry {
    int next;
    int count;
  };

  // Counts every adjacent pair of tokens inside each corpus paragraph; a paragraph's first word
  // counts as following ".".
  static BigramPrior from_corpus(const Vocabulary& vocabulary);

  // The successors of a token with their counts, in increasing id order.
  const std::vector<Entry>& successors(int previous) const {
    return m_successors[static_cast<std::size_t>(previous)];
  }

private:
  std::vector<std::vector<Entry>> m_successors;
};

} // namespace llmrepro::engine
