// The JSON columns of the audit database (config, prompt fields, candidates 3..k, errors):
// how they are written and read back, every missing or mistyped field an error naming it.
// Used by the record writer and reader only; kept apart so that the SQL stays readable.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/completion.hpp"
#include "core/result.hpp"
#include "core/suite.hpp"

namespace llmrepro::store::detail {

// Every AuditConfig field, gates included (absent optional gates as null).
std::string encode_config(const core::AuditConfig& config);
// `where` names the document in error messages (ErrorCode::input).
core::Result<core::AuditConfig> decode_config(const std::string& text, const std::string& where);

// The Prompt fields that are not plain columns.
struct PromptJsonColumns {
  std::string messages; // [{"role","content"}]
  std::string tags;     // ["..."]
  std::string expect;   // {"kind","value","path","number","tolerance"}
  std::string extract;  // {"kind","pattern"}
};
PromptJsonColumns encode_prompt_columns(const core::Prompt& prompt);
// Fills messages, tags, expect and extract of `prompt`.
core::Result<void> decode_prompt_columns(const PromptJsonColumns& columns, core::Prompt& prompt,
                                         const std::string& where);

// What the last run's probes did beside the audited requests, one object per endpoint.
std::string encode_probe_activity(const std::vector<core::ProbeActivity>& activity);
core::Result<std::vector<core::ProbeActivity>> decode_probe_activity(const std::string& text,
                                                                     const std::string& where);

std::string encode_strings(const std::vector<std::string>& strings);
core::Result<std::vector<std::string>> decode_strings(const std::string& text,
                                                      const std::string& where);

// Candidates from index `first` on, as [[token, logprob], ...], the `more` column of schema
// version 1's token rows (read by the upgrade; written now only by the tests' version 1
// fixture); an unknown logprob
// (core::k_unknown_logprob, NaN) is written as null, an infinite one as the string "-inf" or
// "inf" because JSON has no infinities. Null and the string "nan" (written before) read as NaN.
std::string encode_candidates(const core::TokenCandidates& top, std::size_t first);
// Appends the decoded candidates to `top`.
core::Result<void> decode_candidates(const std::string& text, core::TokenCandidates& top,
                                     const std::string& where);

} // namespace llmrepro::store::detail
