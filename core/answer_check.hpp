// Judging answers rather than strings: answer extraction (for agreement) and checkers (for
// correctness), as the suite's `extract` and `expect` fields ask.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/suite.hpp"

namespace llmrepro::core {

// The answer a completion gives, in a canonical form so that equal answers compare equal:
// - none: the text with surrounding whitespace removed and inner runs of whitespace collapsed;
// - regex: the first capture group of the first match (the whole match without groups);
// - number: the last number in the text, normalised ("1,000.50" -> "1000.5");
// - choice: the multiple-choice letter A-J the text commits to ("B", "(B)", "Answer: B");
// - json_path: the value at the path of the JSON the text holds, as compact JSON;
// - last_line: the last non-empty line, trimmed.
// Empty when nothing can be extracted: a parse failure never agrees with anything.
std::optional<std::string> extract_answer(const Extraction& extraction, std::string_view text);

// Whether a completion satisfies the prompt's checker. A prompt without a checker has no verdict.
std::optional<bool> check_answer(const Expectation& expectation, std::string_view text);

// extract_answer and check_answer of one prompt's runs, each read once a text: the runs of a
// reproducible endpoint mostly repeat one text, and reading it (white space collapsed over the
// whole text, a regex searched) is most of what judging them costs. The texts are kept by view:
// they must outlive this object.
class TextAnswers {
public:
  TextAnswers(const Extraction& extraction, const Expectation& expectation)
      : m_extraction(&extraction), m_expectation(&expectation) {}

  const std::optional<std::string>& answer(std::string_view text);
  bool passes(std::string_view text); // false without a checker, as check_answer's empty

private:
  const Extraction* m_extraction;
  const Expectation* m_expectation;
  std::unordered_map<std::string_view, std::optional<std::string>> m_answers;
  std::unordered_map<std::string_view, bool> m_passes;
};

} // namespace llmrepro::core
