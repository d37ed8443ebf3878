// The whole-audit entry points of the analysis (records grouped by prompt and fed to an
// AnalysisBuilder in suite order) and lookups into its results (core/analysis.hpp).
#include "core/analysis.hpp"

namespace llmrepro::core {

const LevelAnalysis* level_of(const PromptAnalysis& prompt, int concurrency) {
  for (const LevelAnalysis& level : prompt.by_concurrency)
    if (level.concurrency == concurrency) return &level;
  return nullptr;
}

std::vector<std::vector<const RequestRecord*>>
records_by_prompt(const Suite& suite, const std::vector<RequestRecord>& records) {
  std::vector<std::vector<const RequestRecord*>> by_prompt(suite.prompts.size());
  for (const auto& record : records) {
    const auto index = static_cast<std::size_t>(record.planned.prompt_index);
    if (record.planned.prompt_index < 0 || index >= by_prompt.size()) continue;
    by_prompt[index].push_back(&record);
  }
  return by_prompt;
}

AuditAnalysis analyse(const Suite& suite, const std::vector<RequestRecord>& records,
                      const AnalysisConfig& config, int endpoint_index,
                      std::optional<ProbeKind> probe) {
  AnalysisBuilder builder(suite, config, endpoint_index, probe);
  const auto by_prompt = records_by_prompt(suite, records);
  for (std::size_t p = 0; p < by_prompt.size(); ++p)
    builder.add_prompt(static_cast<int>(p), by_prompt[p]);
  return builder.finish();
}

} // namespace llmrepro::core
