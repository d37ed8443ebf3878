// The client of an OpenAI-compatible POST /v1/embeddings, and semantic agreement measured with it:
// each prompt's distinct completions embedded and compared pairwise (`--embeddings URL`).
#pragma once

#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/result.hpp"
#include "core/semantic_agreement.hpp"

namespace llmrepro::probes {

struct EmbeddingsTarget {
  // Base URL of the server (".../v1/embeddings", ".../v1" and the bare host are all accepted).
  std::string url;
  std::string model; // empty: the field is omitted and the server uses its default
  std::vector<std::string> headers;
  std::string api_key;
  bool insecure = false;
  double timeout_s = 120.0;
  std::size_t max_response_bytes = 16u << 20;
};

// The URL embeddings are POSTed to for `url`.
std::string embeddings_url(const std::string& url);

// Embeds `inputs` in one request; the vectors come back in input order (by each item's "index").
// ErrorCode::endpoint when the server cannot be reached, answers with an error status, or answers
// with anything but one vector of numbers per input (the message names the field at fault).
core::Result<std::vector<std::vector<double>>> embed(const EmbeddingsTarget& target,
                                                     const std::vector<std::string>& inputs);

// Embeds the distinct completions of every analysed prompt that has any (a batch per prompt) and
// compares them pairwise against `threshold`. Errors as embed(), naming the prompt.
core::Result<core::SemanticAgreement>
measure_semantic_agreement(const EmbeddingsTarget& target, const core::AuditAnalysis& analysis,
                           double threshold);

} // namespace llmrepro::probes
