#include "engine/vocabulary.hpp"

#include <cctype>

#include "engine/corpus.hpp"

namespace llmrepro::engine {

namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

} // namespace

Vocabulary Vocabulary::from_corpus() {
  Vocabulary vocabulary;
  vocabulary.add("<unk>");
  for (std::string_view paragraph : corpus_paragraphs())
    for (const std::string& word : split(paragraph))
      if (!vocabulary.m_ids.contains(word)) vocabulary.add(word);
  return vocabulary;
}

std::vector<std::string> Vocabulary::split(std::string_view text) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (is_word_char(c)) {
      std::size_t end = i + 1;
      // An apostrophe between letters stays inside the word ("don't").
      while (end < text.size() &&
             (is_word_char(text[end]) ||
              (text[end] == '\'' && end + 1 < text.size() && is_word_char(text[end + 1]))))
        ++end;
      words.emplace_back(text.substr(i, end - i));
      i = end;
    } else {
      // A multi-byte UTF-8 character is one mark, so that it is never cut in half.
      std::size_t end = i + 1;
      while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0u) == 0x80u) ++end;
      words.emplace_back(text.substr(i, end - i));
      i = end;
    }
  }
  return words;
}

std::vector<int> Vocabulary::encode(std::string_view text) const {
  std::vector<int> ids;
  for (const std::string& word : split(text)) {
    int id = id_of(word);
    if (id == k_unk) id = id_of(lower(word));
    ids.push_back(id);
  }
  return ids;
}

int Vocabulary::id_of(std::string_view word) const {
  const auto it = m_ids.find(std::string(word));
  return it == m_ids.end() ? k_unk : it->second;
}

void Vocabulary::add(const std::string& word) {
  const bool punct = !word.empty() && !is_word_char(word[0]) && word != "<unk>";
  m_ids.emplace(word, static_cast<int>(m_words.size()));
  m_words.push_back(word);
  m_text.push_back(punct ? word : " " + word);
  m_punct.push_back(punct);
}

} // namespace llmrepro::engine
