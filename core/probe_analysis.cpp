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

} // namespace

ProbeKind primary_probe(const std::vector<ProbeKind>& probes) {
  if (probes.empty() || std::find(probes.begin(), probes.end(), ProbeKind::sweep) != probes.end())
    return ProbeKind::sweep;
  return probes.front();
}

bool probe_has_sides(ProbeKind probe) {
  return probe == ProbeKind::prefix || probe == ProbeKind::restart;
}

// The two sides of one prompt, analysed as its records come, and every trial of the endpoint
// against its first cold trial: what the determinism check asks of the prefix probe. Cold trials
// after a flush must equal one another, and warm trials, which reuse cached KV, must equal them
// too.
struct PrefixDriftRuns::Sides {
  Sides(const Suite& of, const AnalysisConfig& config, int prompt, int endpoint_index,
        ProbeKind kind)
      : suite(&of), cold(of, config, endpoint_index, kind), warm(of, config, endpoint_index, kind),
        prompt_index(prompt), endpoint(endpoint_index), probe(kind) {
    cold.begin_prompt(prompt);
    warm.begin_prompt(prompt);
  }

  // The restart probe's later requests, the prefix probe's warm trials.
  bool later(const RequestRecord& record) const {
    const int repeat = record.planned.repeat;
    return probe == ProbeKind::restart ? restart_request_is_later(repeat)
                                       : prefix_trial_is_warm(repeat);
  }

  const Suite* suite;
  AnalysisBuilder cold;
  AnalysisBuilder warm;
  int prompt_index;
  int endpoint;
  ProbeKind probe;
  std::optional<Completion> reference; // the first cold trial's completion
  PrefixPromptDrift compared;          // the *_from_reference fields, as the trials come
};

PrefixDriftRuns::PrefixDriftRuns(const Suite& suite, const AnalysisConfig& config, int prompt_index,
                                 int endpoint_index, ProbeKind probe)
    : m_sides(std::make_unique<Sides>(suite, config, prompt_index, endpoint_index, probe)) {}
PrefixDriftRuns::PrefixDriftRuns(PrefixDriftRuns&&) noexcept = default;
PrefixDriftRuns& PrefixDriftRuns::operator=(PrefixDriftRuns&&) noexcept = default;
PrefixDriftRuns::~PrefixDriftRuns() = default;

std::optional<std::size_t>
PrefixDriftRuns::reference_of(const std::vector<const RequestRecord*>& records) const {
  const Sides& sides = *m_sides;
  std::optional<std::size_t> reference;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const RequestRecord& record = *records[i];
    if (record.planned.probe != sides.probe || sides.later(record) ||
        record.planned.endpoint_index != sides.endpoint || !record.outcome.ok)
      continue;
    if (!reference || record.planned.repeat < records[*reference]->planned.repeat) reference = i;
  }
  return reference;
}

void PrefixDriftRuns::set_reference(const Completion& reference) { m_sides->reference = reference; }

void PrefixDriftRuns::add_run(const RequestRecord& record, std::size_t position) {
  Sides& sides = *m_sides;
  if (record.planned.probe != sides.probe) return;
  const bool later = sides.later(record);
  (later ? sides.warm : sides.cold).add_run(record, position);
  if (!sides.reference || record.planned.endpoint_index != sides.endpoint || !record.outcome.ok)
    return;
  PrefixPromptDrift& compared = sides.compared;
  const Completion& base = *sides.reference;
  const Completion& run = record.outcome.completion;
  add_logprob_drift(later ? compared.warm_drift_from_reference : compared.cold_drift_from_reference,
                    base, run);
  if (same_run(base, run)) return;
  std::optional<int>& divergence =
      later ? compared.warm_divergence_from_reference : compared.cold_divergence_from_reference;
  const int shared = shared_prefix_length(base, run);
  if (!divergence || shared < *divergence) divergence = shared;
}

std::optional<PrefixPromptDrift>
PrefixDriftRuns::end_prompt(const std::vector<const RequestRecord*>& records) {
  Sides& sides = *m_sides;
  std::vector<const RequestRecord*> cold;
  std::vector<const RequestRecord*> warm;
  for (const auto* record : records)
    if (record->planned.probe == sides.probe)
      (sides.later(*record) ? warm : cold).push_back(record);
  sides.cold.end_prompt(cold);
  sides.warm.end_prompt(warm);
  const AuditAnalysis cold_analysis = sides.cold.finish();
  const AuditAnalysis warm_analysis = sides.warm.finish();
  if (cold_analysis.prompts.empty() && warm_analysis.prompts.empty()) return std::nullopt;

  PrefixPromptDrift drift = std::move(sides.compared);
  drift.id = sides.suite->prompts[static_cast<std::size_t>(sides.prompt_index)].id;
  drift.prompt_index = sides.prompt_index;
  const DistinctCompletion* cold_reference = nullptr;
  const DistinctCompletion* warm_reference = nullptr;
  if (!cold_analysis.prompts.empty()) {
    drift.cold_runs = cold_analysis.prompts.front().runs;
    drift.cold_unique = cold_analysis.prompts.front().unique_completions;
    cold_reference = core::reference_of(cold_analysis.prompts.front());
  }
  if (!warm_analysis.prompts.empty()) {
    drift.warm_runs = warm_analysis.prompts.front().runs;
    drift.warm_unique = warm_analysis.prompts.front().unique_completions;
    warm_reference = core::reference_of(warm_analysis.prompts.front());
  }
  if (cold_reference && warm_reference && !same_completion(*cold_reference, *warm_reference)) {
    drift.drift = true;
    drift.divergence =
        shared_prefix_length(as_completion(*cold_reference), as_completion(*warm_reference));
  }
  // Where the server counts the prompt tokens its cache served, a cold trial that says it
  // served some was not cold, whatever was asked of it. (A restart's first request may find a
  // cache the server kept across its restart: that is what the restart probe measures.)
  if (sides.probe != ProbeKind::prefix) return drift;
  for (const RequestRecord* record : cold) {
    if (record->planned.endpoint_index != sides.endpoint || !record->outcome.ok) continue;
    const std::optional<long>& cached = record->outcome.completion.usage.cached_prompt;
    if (cached && *cached > 0) ++drift.cold_cache_reused;
  }
  return drift;
}

std::optional<PrefixPromptDrift>
prefix_drift_of_prompt(const Suite& suite, int prompt_index,
                       const std::vector<const RequestRecord*>& records,
                       const AnalysisConfig& config, int endpoint_index, ProbeKind probe) {
  PrefixDriftRuns runs(suite, config, prompt_index, endpoint_index, probe);
  if (const auto reference = runs.reference_of(records))
    runs.set_reference(records[*reference]->outcome.completion);
  for (std::size_t position : analysis_order(records)) runs.add_run(*records[position], position);
  return runs.end_prompt(records);
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
