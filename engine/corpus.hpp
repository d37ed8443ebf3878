// The small English text the reference engine learns its vocabulary and bigram prior from.
// Written for this project: short plain paragraphs about weather, cooking, cities, science,
// the sea, gardens, travel and daily life, so that completions read as words.
#pragma once

#include <string_view>
#include <vector>

namespace llmrepro::engine {

// The corpus as paragraphs, in a fixed order (the vocabulary's ids follow first appearance).
const std::vector<std::string_view>& corpus_paragraphs();

} // namespace llmrepro::engine
