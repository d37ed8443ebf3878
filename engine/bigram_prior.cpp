#include "engine/bigram_prior.hpp"

#include <map>

#include "engine/corpus.hpp"

namespace llmrepro::engine {

BigramPrior BigramPrior::from_corpus(const Vocabulary& vocabulary) {
  std::vector<std::map<int, int>> counts(vocabulary.size());
  const int full_stop = vocabulary.id_of(".");
  for (auto paragraph : corpus_paragraphs()) {
    int previous = full_stop;
    for (int id : vocabulary.encode(paragraph)) {
      ++counts[static_cast<std::size_t>(previous)][id];
      previous = id;
    }
  }
  BigramPrior prior;
  prior.m_successors.resize(vocabulary.size());
  for (std::size_t i = 0; i < counts.size(); ++i)
    for (const auto& [next, count] : counts[i]) prior.m_successors[i].push_back({next, count});
  return prior;
}

} // namespace llmrepro::engine
