#include "core/probe_analysis.hpp"

#include <algorithm>
#include <map>

#include "core/probe_text.hpp"

namespace llmrepro::core {

namespace {

const DistinctCompletion* reference_of(const PromptAnalysis& prompt) {
  for (const auto& completion : prompt.completions)
    if (completion.is_reference) return &completion;
  return nullptr;
}

Completion as_completion(const DistinctCompletion& distinct) {
  Completion completion;
  completion.text = distinct.text;
  completion.tokens = distinct.tokens;
  return completion;
}

// Equal by token strings when both carry tokens, by text otherwise (as the analysis counts them).
bool same_completion(const DistinctCompletion& a, const DistinctCompletion& b) {
  if (a.tokens.empty() || b.tokens.empty()) return a.text == b.text;
  if (a.tokens.size() != b.tokens.size()) return false;
  for (std::size_t i = 0; i < a.tokens.size(); ++i)
    if (a.tokens[i].token != b.tokens[i].token) return false;
  return true;
}

std::map<int, const PromptAnalysis*> by_index(const AuditAnalysis& analysis) {
  std::map<int, const PromptAnalysis*> out;
  for (const auto& prompt : analysis.prompts) out[prompt.prompt_index] = &prompt;
  return out;
}

// Two completions are the same when their texts and token strings are equal.
bool same_run(const Completion& a, const Completion& b) {
  if (a.text != b.text || a.tokens.size() != b.tokens.size()) return false;
  for (std::size_t i = 0; i < a.tokens.size(); ++i)
    if (a.tokens[i].token != b.tokens[i].token) return false;
  return true;
}

// Every trial of `endpoint` against its first cold trial (lowest repeat, successful): what the
// determinism check asks of the prefix probe. Cold trials after a flush must equal one another,
// and warm trials, which reuse cached KV, must equal them too.
void compare_with_first_cold(const std::vector<const RequestRecord*>& cold,
                             const std::vector<const RequestRecord*>& warm, int endpoint,
                             PrefixPromptDrift& drift) {
  const RequestRecord* reference = nullptr;
  for (const auto* record : cold)
    if (record->planned.endpoint_index == endpoint && record->outcome.ok &&
        (!reference || record->planned.repeat < reference->planned.repeat))
      reference = record;
  if (!reference) return;
  const Completion& base = reference->outcome.completion;
  const auto compare = [&](const std::vector<const RequestRecord*>& side, LogprobDrift& side_drift,
                           std::optional<int>& divergence) {
    for (const auto* record : side) {
      if (record->planned.endpoint_index != endpoint || !record->outcome.ok) continue;
      const Completion& run = record->outcome.completion;
      add_logprob_drift(side_drift, base, run);
      if (same_run(base, run)) continue;
      const int shared = shared_prefix_length(base, run);
      if (!divergence || shared < *divergence) divergence = shared;
    }
  };
  compare(cold, drift.cold_drift_from_reference, drift.cold_divergence_from_reference);
  compare(warm, drift.warm_drift_from_reference, drift.warm_divergence_from_reference);
}

} // namespace

ProbeKind primary_probe(const std::vector<ProbeKind>& probes) {
  if (probes.empty() || std::find(probes.begin(), probes.end(), ProbeKind::sweep) != probes.end())
    return ProbeKind::sweep;
  return probes.front();
}

bool probe_has_sides(ProbeKind probe) {
  return probe == ProbeKind::prefix || probe == ProbeKind::restart;
}

std::optional<PrefixPromptDrift>
prefix_drift_of_prompt(const Suite& suite, int prompt_index,
                       const std::vector<const RequestRecord*>& records,
                       const AnalysisConfig& config, int endpoint_index, ProbeKind probe) {
  std::vector<const RequestRecord*> cold;
  std::vector<const RequestRecord*> warm;
  for (const auto* record : records) {
    if (record->planned.probe != probe) continue;
    const int repeat = record->planned.repeat;
    const bool later = probe == ProbeKind::restart ? restart_request_is_later(repeat)
                                                   : prefix_trial_is_warm(repeat);
    (later ? warm : cold).push_back(record);
  }
  AnalysisBuilder cold_builder(suite, config, endpoint_index, probe);
  AnalysisBuilder warm_builder(suite, config, endpoint_index, probe);
  cold_builder.add_prompt(prompt_index, cold);
  warm_builder.add_prompt(prompt_index, warm);
  const AuditAnalysis cold_analysis = cold_builder.finish();
  const AuditAnalysis warm_analysis = warm_builder.finish();
  if (cold_analysis.prompts.empty() && warm_analysis.prompts.empty()) return std::nullopt;

  PrefixPromptDrift drift;
  drift.id = suite.prompts[static_cast<std::size_t>(prompt_index)].id;
  drift.prompt_index = prompt_index;
  const DistinctCompletion* cold_reference = nullptr;
  const DistinctCompletion* warm_reference = nullptr;
  if (!cold_analysis.prompts.empty()) {
    drift.cold_runs = cold_analysis.prompts.front().runs;
    drift.cold_unique = cold_analysis.prompts.front().unique_completions;
    cold_reference = reference_of(cold_analysis.prompts.front());
  }
  if (!warm_analysis.prompts.empty()) {
    drift.warm_runs = warm_analysis.prompts.front().runs;
    drift.warm_unique = warm_analysis.prompts.front().unique_completions;
    warm_reference = reference_of(warm_analysis.prompts.front());
  }
  if (cold_reference && warm_reference && !same_completion(*cold_reference, *warm_reference)) {
    drift.drift = true;
    drift.divergence =
        shared_prefix_length(as_completion(*cold_reference), as_completion(*warm_reference));
  }
  compare_with_first_cold(cold, warm, endpoint_index, drift);
  // Where the server counts the prompt tokens its cache served, a cold trial that says it
  // served some was not cold, whatever was asked of it. (A restart's first request may find a
  // cache the server kept across its restart: that is what the restart probe measures.)
  if (probe != ProbeKind::prefix) return drift;
  for (const RequestRecord* record : cold) {
    if (record->planned.endpoint_index != endpoint_index || !record->outcome.ok) continue;
    const std::optional<long>& cached = record->outcome.completion.usage.cached_prompt;
    if (cached && *cached > 0) ++drift.cold_cache_reused;
  }
  return drift;
}

PromptComparison compare_prompt(const PromptAnalysis& prompt,
                                const std::vector<const PromptAnalysis*>& others) {
  PromptComparison row;
  row.id = prompt.id;
  row.prompt_index = prompt.prompt_index;
  const DistinctCompletion* base = reference_of(prompt);
  row.all_agree = base != nullptr;
  for (std::size_t i = 0; i < others.size(); ++i) {
    EndpointDivergence divergence;
    divergence.endpoint_index = static_cast<int>(i + 1);
    const PromptAnalysis* found = others[i];
    const DistinctCompletion* other = found == nullptr ? nullptr : reference_of(*found);
    divergence.has_reference = other != nullptr;
    if (found != nullptr) {
      const auto base_answers = answer_counts(prompt);
      const auto other_answers = answer_counts(*found);
      ShiftTest shift = shift_test(base_answers, other_answers);
      if (shift.a_answers > 0 && shift.b_answers > 0) {
        divergence.shift = std::move(shift);
        divergence.answer_distance = answer_distance(base_answers, other_answers);
      }
    }
    if (base && other) {
      divergence.agrees = same_completion(*base, *other);
      if (!divergence.agrees)
        divergence.first_difference =
            shared_prefix_length(as_completion(*base), as_completion(*other));
    }
    if (!divergence.agrees) row.all_agree = false;
    row.endpoints.push_back(divergence);
  }
  return row;
}

EndpointComparison compare_endpoints(const std::vector<AuditAnalysis>& per_endpoint) {
  EndpointComparison comparison;
  if (per_endpoint.empty()) return comparison;
  std::vector<std::map<int, const PromptAnalysis*>> indexed;
  for (const auto& analysis : per_endpoint) indexed.push_back(by_index(analysis));

  for (const auto& prompt : per_endpoint.front().prompts) {
    std::vector<const PromptAnalysis*> others;
    for (std::size_t e = 1; e < per_endpoint.size(); ++e) {
      const auto found = indexed[e].find(prompt.prompt_index);
      others.push_back(found == indexed[e].end() ? nullptr : found->second);
    }
    PromptComparison row = compare_prompt(prompt, others);
    if (row.all_agree) ++comparison.agreeing_prompts;
    comparison.prompts.push_back(std::move(row));
  }
  return comparison;
}

} // namespace llmrepro::core
