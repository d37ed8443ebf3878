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

std::vector<PrefixPromptDrift> prefix_drift(const Suite& suite,
                                            const std::vector<RequestRecord>& records,
                                            const AnalysisConfig& config, int endpoint_index) {
  std::vector<RequestRecord> cold;
  std::vector<RequestRecord> warm;
  for (const auto& record : records) {
    if (record.planned.probe != ProbeKind::prefix) continue;
    (prefix_trial_is_warm(record.planned.repeat) ? warm : cold).push_back(record);
  }
  const AuditAnalysis cold_analysis =
      analyse(suite, cold, config, endpoint_index, ProbeKind::prefix);
  const AuditAnalysis warm_analysis =
      analyse(suite, warm, config, endpoint_index, ProbeKind::prefix);
  const auto cold_prompts = by_index(cold_analysis);
  const auto warm_prompts = by_index(warm_analysis);

  std::vector<PrefixPromptDrift> out;
  for (std::size_t p = 0; p < suite.prompts.size(); ++p) {
    const int index = static_cast<int>(p);
    const auto c = cold_prompts.find(index);
    const auto w = warm_prompts.find(index);
    if (c == cold_prompts.end() && w == warm_prompts.end()) continue;
    PrefixPromptDrift drift;
    drift.id = suite.prompts[p].id;
    drift.prompt_index = index;
    const DistinctCompletion* cold_reference = nullptr;
    const DistinctCompletion* warm_reference = nullptr;
    if (c != cold_prompts.end()) {
      drift.cold_runs = c->second->runs;
      drift.cold_unique = c->second->unique_completions;
      cold_reference = reference_of(*c->second);
    }
    if (w != warm_prompts.end()) {
      drift.warm_runs = w->second->runs;
      drift.warm_unique = w->second->unique_completions;
      warm_reference = reference_of(*w->second);
    }
    if (cold_reference && warm_reference && !same_completion(*cold_reference, *warm_reference)) {
      drift.drift = true;
      drift.divergence =
          shared_prefix_length(as_completion(*cold_reference), as_completion(*warm_reference));
    }
    out.push_back(std::move(drift));
  }
  return out;
}

} // namespace

ProbeKind primary_probe(const std::vector<ProbeKind>& probes) {
  if (probes.empty() || std::find(probes.begin(), probes.end(), ProbeKind::sweep) != probes.end())
    return ProbeKind::sweep;
  return probes.front();
}

std::vector<ProbeAnalysis> analyse_probes(const Suite& suite,
                                          const std::vector<RequestRecord>& records,
                                          const AnalysisConfig& config, int endpoint_index,
                                          const std::vector<ProbeKind>& probes) {
  std::vector<ProbeAnalysis> out;
  for (ProbeKind probe : probes) {
    ProbeAnalysis analysis;
    analysis.probe = probe;
    analysis.analysis = analyse(suite, records, config, endpoint_index, probe);
    if (probe == ProbeKind::prefix) {
      std::vector<RequestRecord> mine;
      for (const auto& record : records)
        if (record.planned.endpoint_index == endpoint_index) mine.push_back(record);
      analysis.prefix = prefix_drift(suite, mine, config, endpoint_index);
      for (const auto& drift : analysis.prefix)
        if (drift.drift) ++analysis.prefix_drift_prompts;
    }
    out.push_back(std::move(analysis));
  }
  return out;
}

EndpointComparison compare_endpoints(const std::vector<AuditAnalysis>& per_endpoint) {
  EndpointComparison comparison;
  if (per_endpoint.empty()) return comparison;
  std::vector<std::map<int, const PromptAnalysis*>> indexed;
  for (const auto& analysis : per_endpoint) indexed.push_back(by_index(analysis));

  for (const auto& prompt : per_endpoint.front().prompts) {
    PromptComparison row;
    row.id = prompt.id;
    row.prompt_index = prompt.prompt_index;
    const DistinctCompletion* base = reference_of(prompt);
    row.all_agree = base != nullptr;
    for (std::size_t e = 1; e < per_endpoint.size(); ++e) {
      EndpointDivergence divergence;
      divergence.endpoint_index = static_cast<int>(e);
      const auto found = indexed[e].find(prompt.prompt_index);
      const DistinctCompletion* other =
          found == indexed[e].end() ? nullptr : reference_of(*found->second);
      divergence.has_reference = other != nullptr;
      if (base && other) {
        divergence.agrees = same_completion(*base, *other);
        if (!divergence.agrees)
          divergence.first_difference =
              shared_prefix_length(as_completion(*base), as_completion(*other));
      }
      if (!divergence.agrees) row.all_agree = false;
      row.endpoints.push_back(divergence);
    }
    if (row.all_agree) ++comparison.agreeing_prompts;
    comparison.prompts.push_back(std::move(row));
  }
  return comparison;
}

} // namespace llmrepro::core
