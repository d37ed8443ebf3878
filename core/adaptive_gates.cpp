// The gate rule of an adaptive audit, and the gates a re-judged one was not sampled for. Each
// rule rests on the gate's figure moving one way only as runs are added: drift and the distinct
// completions only grow, and so does a flip probability over more runs under the same noise.
#include "core/adaptive_gates.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/budget.hpp"
#include "core/cost.hpp"

namespace llmrepro::core {
namespace {

// The drift a judged prompt's runs show, where any logprob was compared.
std::optional<double> judged_drift(const PromptAnalysis& prompt) {
  if (prompt.status == PromptStatus::inconclusive || prompt.logprob_drift.positions_compared == 0)
    return std::nullopt;
  return prompt.logprob_drift.max_abs;
}

bool drifts_beyond(const PromptAnalysis& prompt, double limit) {
  const auto drift = judged_drift(prompt);
  return drift && *drift > limit;
}

bool fragility_decided(const PromptAnalysis& prompt, double fragile_p, int max_runs) {
  if (!prompt.p_flip) return false;
  if (*prompt.p_flip >= fragile_p) return true;
  const auto at_max = flip_probability_at(prompt, max_runs);
  return at_max && *at_max < fragile_p;
}

// The ids of the prompts that stopped before --runs at every level.
std::vector<std::string> stopped_early(const AdaptiveOutcome& outcome) {
  std::vector<std::string> ids;
  for (const auto& prompt : outcome.prompts) {
    if (prompt.stop == AdaptiveStop::undecided) continue;
    const bool short_somewhere =
        std::any_of(prompt.planned.begin(), prompt.planned.end(),
                    [&](const auto& level) { return level.second < outcome.config.max_runs; });
    if (short_somewhere) ids.push_back(prompt.id);
  }
  return ids;
}

std::string unsampled_line(const std::string& flag, const std::string& sampled,
                           const std::vector<std::string>& early) {
  return flag + " was not sampled for (the adaptive audit's stops waited for " + sampled +
         "): " + std::to_string(early.size()) + " prompt" + (early.size() == 1 ? "" : "s") +
         " stopped before --runs carry no evidence for it" + named_prompts(early) +
         " (audit again with the gate, or without --adaptive)";
}

} // namespace

bool drift_gate_already_failed(const AdaptiveOutcome& outcome, const AuditAnalysis& analysis) {
  const auto limit = outcome.config.max_logprob_drift;
  if (!limit) return false;
  std::map<int, const AdaptivePrompt*> stopped;
  for (const auto& prompt : outcome.prompts)
    if (prompt.stop != AdaptiveStop::undecided) stopped[prompt.prompt_index] = &prompt;
  return std::any_of(analysis.prompts.begin(), analysis.prompts.end(), [&](const auto& prompt) {
    return stopped.count(prompt.prompt_index) > 0 && drifts_beyond(prompt, *limit);
  });
}

std::optional<double> flip_probability_at(const PromptAnalysis& prompt, int runs) {
  if (!prompt.p_flip) return std::nullopt;
  // As the analysis counts the chances (judge_flip_probability): every run but the reference's
  // own, which is the first run of the lowest level that has one.
  double stays = 1.0;
  bool reference_level = true;
  for (const LevelAnalysis& level : prompt.by_concurrency) {
    if (level.runs == 0) continue;
    if (!level.p_flip) return std::nullopt;
    const int chances = runs - (reference_level ? 1 : 0);
    reference_level = false;
    stays *= std::pow(1.0 - *level.p_flip, chances);
  }
  return 1.0 - stays;
}

bool gates_allow_stop(const AdaptiveConfig& config, const PromptAnalysis& prompt,
                      bool drift_failed) {
  if (prompt.status == PromptStatus::unstable && config.max_unique &&
      prompt.unique_completions <= *config.max_unique)
    return false;
  if (config.max_logprob_drift && !drift_failed &&
      !drifts_beyond(prompt, *config.max_logprob_drift))
    return false;
  if (prompt.status == PromptStatus::unstable && config.min_tara && prompt.answers_agree)
    return false;
  if (config.fragile_p && !fragility_decided(prompt, *config.fragile_p, config.max_runs))
    return false;
  return true;
}

std::vector<UnsampledGate> unsampled_gates(const AdaptiveOutcome& outcome,
                                           const AuditConfig& judged) {
  std::vector<UnsampledGate> gates;
  const std::vector<std::string> early = stopped_early(outcome);
  if (early.empty()) return gates;
  const AdaptiveConfig& sampled = outcome.config;
  const GateConfig& wanted = judged.gates;
  if (wanted.max_logprob_drift &&
      (!sampled.max_logprob_drift || *wanted.max_logprob_drift > *sampled.max_logprob_drift))
    gates.push_back(
        {"max_logprob_drift",
         unsampled_line("--max-logprob-drift " + shortest_decimal(*wanted.max_logprob_drift),
                        sampled.max_logprob_drift
                            ? "--max-logprob-drift " + shortest_decimal(*sampled.max_logprob_drift)
                            : "no drift gate",
                        early)});
  // Unstable prompts stopped at their first difference where no --max-unique was set: as if 1.
  if (wanted.max_unique && *wanted.max_unique > sampled.max_unique.value_or(1))
    gates.push_back(
        {"max_unique",
         unsampled_line("--max-unique " + std::to_string(*wanted.max_unique),
                        sampled.max_unique ? "--max-unique " + std::to_string(*sampled.max_unique)
                                           : "no --max-unique",
                        early)});
  if (wanted.min_tara && !sampled.min_tara)
    gates.push_back({"min_tara", unsampled_line("--min-tara " + shortest_decimal(*wanted.min_tara),
                                                "no --min-tara", early)});
  if (wanted.fail_on.fragile && judged.analysis.fragile_p &&
      (sampled.fragile_p != judged.analysis.fragile_p ||
       sampled.fragile_window != judged.analysis.fragile_window))
    gates.push_back(
        {"fail_on_fragile",
         unsampled_line(
             "--fail-on fragile with --fragile-p " + shortest_decimal(*judged.analysis.fragile_p) +
                 " --fragile-window " + std::to_string(judged.analysis.fragile_window),
             sampled.fragile_p ? "--fragile-p " + shortest_decimal(*sampled.fragile_p) +
                                     " --fragile-window " + std::to_string(sampled.fragile_window)
                               : "no --fragile-p",
             early)});
  return gates;
}

} // namespace llmrepro::core
