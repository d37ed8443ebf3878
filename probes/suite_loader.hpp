// Reads a suite file into core::Suite before anything is sent: JSON Lines (one prompt object a
// line) or plain text (one prompt a line), validated in full with errors naming file, line and
// field.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/suite.hpp"

namespace llmrepro::probes {

// Loads the suite at `path`. JSON Lines when the first line that is neither blank nor a `#`
// comment starts with '{'; otherwise plain text, one prompt per line with ids "line-<n>".
// In both, blank lines and lines starting with '#' are skipped and n counts every line.
// A JSON line holds "id" (non-empty string) and exactly one of "prompt" (string) and
// "messages" (non-empty array of {"role", "content"} strings), optionally "max_tokens"
// (positive integer), "tags" (array of strings), "expect" ({"type": "regex" | "contains" |
// "equals" | "json_path" | "choice" | "number", "value", "path" (json_path only),
// "tolerance" (number only)}), "extract" ({"type": "regex" | "json_path" | "choice" |
// "number" | "last_line", "pattern" (regex and json_path only)}) and "response_format" (an
// object, kept as compact JSON). Unknown fields, duplicate ids and an empty suite are errors.
// Every error is ErrorCode::input, e.g. "suite.jsonl:3: field 'prompt' must be a string".
core::Result<core::Suite> load_suite(const std::string& path);

// The same, from text already in memory; `source` names it in messages and in Suite::source.
core::Result<core::Suite> parse_suite(std::string_view text, const std::string& source);

} // namespace llmrepro::probes
