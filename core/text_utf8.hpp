// UTF-8 hygiene for model text on its way into reports: completions and BPE tokens may hold
// invalid or partial sequences, and every output format needs well-formed text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace llmrepro::core {

// The length of the well-formed UTF-8 sequence starting at text[i] (1 for ASCII; i within
// `text`), or 0 where none does: the Unicode standard's table of well-formed byte sequences
// (chapter 3, table 3-7), so no overlong form, surrogate or code point above U+10FFFF.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

// Returns `text` with every invalid UTF-8 sequence (stray continuation bytes, truncated or
// overlong sequences, surrogates, code points above U+10FFFF) replaced by U+FFFD.
std::string sanitize_utf8(std::string_view text);

// Splits well-formed UTF-8 into code points, one string each (invalid bytes become U+FFFD).
std::vector<std::string> utf8_code_points(std::string_view text);

// `text` with the ASCII letters lowercased and every other byte as it is: for the parts of
// protocol text that compare case-insensitively (header names, URL schemes and hosts).
std::string ascii_lowercase(std::string_view text);

// At most `max_code_points` code points of `text` (sanitized), with "…" appended when cut.
std::string truncate_utf8(std::string_view text, std::size_t max_code_points);

} // namespace llmrepro::core
