#include "core/semantic_agreement.hpp"

#include <algorithm>
#include <cmath>

namespace llmrepro::core {

Result<double> cosine_similarity(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || a.size() != b.size())
    return make_error(ErrorCode::input, "embeddings of " + std::to_string(a.size()) + " and " +
                                            std::to_string(b.size()) +
                                            " dimensions cannot be compared");
  double dot = 0.0;
  double norm_a = 0.0;
  double norm_b = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    norm_a += a[i] * a[i];
    norm_b += b[i] * b[i];
  }
  if (norm_a == 0.0 || norm_b == 0.0)
    return make_error(ErrorCode::input, "an embedding of zero norm has no direction to compare");
  // Rounding can carry a parallel pair a hair past 1; similarity is bounded by definition.
  return std::clamp(dot / (std::sqrt(norm_a) * std::sqrt(norm_b)), -1.0, 1.0);
}

Result<PromptSemantics> prompt_semantics(int prompt_index,
                                         const std::vector<std::vector<double>>& embeddings,
                                         double threshold) {
  if (embeddings.empty())
    return make_error(ErrorCode::input,
                      "prompt " + std::to_string(prompt_index + 1) + " has no completion to embed");
  PromptSemantics result;
  result.prompt_index = prompt_index;
  result.distinct = static_cast<int>(embeddings.size());
  std::vector<double> similarities;
  for (std::size_t i = 0; i < embeddings.size(); ++i)
    for (std::size_t j = i + 1; j < embeddings.size(); ++j) {
      auto similarity = cosine_similarity(embeddings[i], embeddings[j]);
      if (!similarity) return similarity.error();
      similarities.push_back(*similarity);
    }
  result.pairs = static_cast<int>(similarities.size());
  if (!similarities.empty()) {
    double sum = 0.0;
    for (double s : similarities) sum += s;
    const double n = static_cast<double>(similarities.size());
    result.mean = sum / n;
    double squares = 0.0;
    for (double s : similarities) squares += (s - result.mean) * (s - result.mean);
    result.std = std::sqrt(squares / n);
    result.min = *std::min_element(similarities.begin(), similarities.end());
  }
  result.agrees = result.min >= threshold;
  return result;
}

void summarize(SemanticAgreement& agreement) {
  if (agreement.prompts.empty()) {
    agreement.agreeing_share.reset();
    return;
  }
  const auto agreeing = std::count_if(agreement.prompts.begin(), agreement.prompts.end(),
                                      [](const PromptSemantics& p) { return p.agrees; });
  agreement.agreeing_share =
      static_cast<double>(agreeing) / static_cast<double>(agreement.prompts.size());
}

} // namespace llmrepro::core
