// Semantic agreement (`--embeddings`): how close in meaning a prompt's distinct completions are,
// as pairwise cosine similarities of their embeddings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace llmrepro::core {

// One prompt's distinct completions, compared pairwise.
struct PromptSemantics {
  int prompt_index = 0;
  int distinct = 0; // distinct completions embedded
  int pairs = 0;    // distinct * (distinct - 1) / 2
  // Over the pairs; a prompt with one distinct completion has no pairs and similarity 1 by
  // definition (mean 1, std 0, min 1).
  double mean = 1.0;
  double std = 0.0; // population standard deviation
  double min = 1.0;
  bool agrees = true; // min >= threshold
};

struct SemanticAgreement {
  std::string model;      // the embedding model asked for (empty: the endpoint's default)
  double threshold = 0.9; // a prompt agrees when its least similar pair reaches it
  std::vector<PromptSemantics> prompts; // by prompt index
  // Share of prompts that agree; empty when no prompt was embedded.
  std::optional<double> agreeing_share;
};

// Cosine similarity of two vectors of equal, non-zero length. ErrorCode::input when the lengths
// differ, a vector is empty, or one has zero norm (no direction to compare).
Result<double> cosine_similarity(const std::vector<double>& a, const std::vector<double>& b);

// The pairwise statistics of one prompt's distinct completions' embeddings (each once).
// ErrorCode::input when there is no embedding or a pair cannot be compared.
Result<PromptSemantics> prompt_semantics(int prompt_index,
                                         const std::vector<std::vector<double>>& embeddings,
                                         double threshold);

// Fills agreeing_share from the prompts.
void summarize(SemanticAgreement& agreement);

} // namespace llmrepro::core
