// A completion's "tokens" array as the JSON report writes it, without building a document tree
// for it: the tokens are most of a large report's bytes, and a tree of ordered maps for each
// token cost more than the analysis. Private to report/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/completion.hpp"

namespace llmrepro::report::detail {

// Appends `tokens` as nlohmann's dump(2) writes the array [{"token", "logprob", "top": [{"token",
// "logprob"}]}] whose member line is indented by `indent` spaces, byte for byte (the same number
// digits, escapes and U+FFFD for invalid UTF-8), so that the report does not change.
void append_tokens_json(std::string& out, const std::vector<core::TokenLogprob>& tokens,
                        int indent);

// Appends `dumped`, a value nlohmann dumped at indentation 0, as a value at `indent`: every line
// after the first indented by `indent` more spaces (JSON strings hold no raw newline).
void append_indented(std::string& out, std::string_view dumped, int indent);

// Appends a dumped object (dump(2), never "{}") at `indent`, its closing line left off, so that
// members written as text can follow; close_object writes that line.
void append_open_object(std::string& out, std::string_view dumped, int indent);
void close_object(std::string& out, int indent);

} // namespace llmrepro::report::detail
