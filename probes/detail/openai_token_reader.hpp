// Private to probes: the token list of an OpenAI-shaped response (`choices[0].logprobs.content`,
// whole or one stream chunk's) read straight from the text into core::TokenLogprob, one pass and
// no node per value: the bulk of every response's bytes. It takes only the shapes it knows
// (read_openai_token()'s, with nothing unusual); anything else it declines, and the adapter reads
// that list from the tape as before, with the same result or the same error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/completion.hpp"
#include "probes/detail/json_document.hpp"

namespace llmrepro::probes::detail {

class OpenAiTokenReader final : public JsonValueReader {
public:
  // Member `content` of `choices[0].logprobs` in the document's root object, once a parse.
  bool wants(const JsonDocument& document, std::uint32_t object, std::string_view key) override;
  bool read(JsonScanner& scanner, std::size_t depth_left) override;

  // Before each parse: forgets what the last one took.
  void reset() { m_used = false; }

  // Appends the tokens taken, as read_openai_token() reads each, to `completion`, and counts
  // their non-finite log probabilities in its `numbers`.
  void append_to(core::Completion& completion);

private:
  // A token's object with its candidates into `top`, or a candidate's (`top` null: no list of
  // its own).
  bool entry(JsonScanner& scanner, core::TokenText& token, double& logprob,
             core::TokenCandidates* top);
  // A log probability the plain path did not read: null, NaN and the like, an exponent.
  bool logprob(JsonScanner& scanner, double& value);
  bool candidates(JsonScanner& scanner, core::TokenCandidates& top);

  std::vector<core::TokenLogprob> m_tokens;
  core::NumberAnomalies m_numbers;
  std::size_t m_candidate_count = 1; // the last token's candidates
  std::string m_raw[2];              // the bytes of a token and of a candidate
  bool m_used = false;
};

// Whether the openai dialects read their tokens with OpenAiTokenReader (the default) or from the
// tape alone; the unit tests compare the two.
bool& openai_token_reader_on_thread();

} // namespace llmrepro::probes::detail
