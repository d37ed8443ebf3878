#include "core/prompt_ranking.hpp"

#include <algorithm>
#include <limits>

namespace llmrepro::core {

std::vector<const PromptAnalysis*> worst_prompts(const AuditAnalysis& analysis, std::size_t limit) {
  std::vector<const PromptAnalysis*> problems;
  for (const PromptAnalysis& prompt : analysis.prompts) {
    if (prompt.unstable || prompt.fragile == true || prompt.status == PromptStatus::inconclusive)
      problems.push_back(&prompt);
  }
  // A prompt without a divergence or a gap sorts after every prompt with one.
  const auto divergence = [](const PromptAnalysis* p) {
    return p->first_divergence.value_or(std::numeric_limits<int>::max());
  };
  const auto gap = [](const PromptAnalysis* p) {
    return p->min_gap.value_or(std::numeric_limits<double>::infinity());
  };
  std::stable_sort(problems.begin(), problems.end(),
                   [&](const PromptAnalysis* a, const PromptAnalysis* b) {
                     if (a->unique_completions != b->unique_completions)
                       return a->unique_completions > b->unique_completions;
                     if (divergence(a) != divergence(b)) return divergence(a) < divergence(b);
                     return gap(a) < gap(b);
                   });
  if (problems.size() > limit) problems.resize(limit);
  return problems;
}

} // namespace llmrepro::core
