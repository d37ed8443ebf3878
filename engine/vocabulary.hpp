// The engine's word-level vocabulary and tokenizer: words and punctuation marks from the corpus,
// so that every token reads as a word. Words are case-sensitive with a lower-case fallback;
// anything else maps to <unk>.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmrepro::engine {

class Vocabulary {
public:
  // Id of the unknown-word token; always 0.
  static constexpr int k_unk = 0;

  // Builds the vocabulary from the corpus: <unk>, then every word and punctuation mark in
  // order of first appearance (deterministic ids).
  static Vocabulary from_corpus();

  // Splits text into words ([A-Za-z]+, digits and apostrophes inside words kept) and single
  // punctuation marks; whitespace separates and is dropped.
  static std::vector<std::string> split(std::string_view text);

  // Token ids of the text; unknown words become k_unk.
  std::vector<int> encode(std::string_view text) const;

  // The text a token adds to a completion: a word with its leading space, a punctuation mark
  // without one (", " follows from the next word's space).
  const std::string& token_text(int id) const { return m_text[static_cast<std::size_t>(id)]; }

  // The bare word or mark, without the leading space.
  const std::string& word(int id) const { return m_words[static_cast<std::size_t>(id)]; }

  bool is_punctuation(int id) const { return m_punct[static_cast<std::size_t>(id)]; }

  std::size_t size() const { return m_words.size(); }

  // Id of an exact word or mark, or k_unk.
  int id_of(std::string_view word) const;

private:
  void add(const std::string& word);

  std::vector<std::string> m_words;
  std::vector<std::string> m_text;
  std::vector<bool> m_punct;
  std::unordered_map<std::string, int> m_ids;
};

} // namespace llmrepro::engine
