#include "core/audit_report.hpp"

#include "core/adi_protocol.hpp"

#include <algorithm>

#include "core/adaptive.hpp"
#include "core/adaptive_gates.hpp"
#include "core/prompt_form.hpp"

namespace llmrepro::core {

namespace {

std::string counts_list(const std::map<std::string, int>& counts) {
  std::string out;
  for (const auto& [name, count] : counts) {
    if (!out.empty()) out += ", ";
    out += (name.empty() ? std::string("(none)") : name) + ": " + std::to_string(count);
  }
  return out;
}

// What a reader must know before trusting the figures, one line each.
std::vector<std::string> audit_warnings(const AuditReport& report, int top_logprobs) {
  std::vector<std::string> warnings;
  if (report.data != nullptr)
    for (std::size_t e = 0; e < report.data->endpoints.size(); ++e) {
      const std::string who = report.data->endpoints.size() > 1 ? "endpoint " + std::to_string(e)
                                                                : std::string("the endpoint");
      if (auto flattened =
              flattened_prompts_warning(report.data->suite, report.data->endpoints[e].dialect, who))
        warnings.push_back(*flattened);
    }
  for (std::size_t e = 0; e < report.observed.size(); ++e) {
    const auto& seen = report.observed[e];
    const std::string who =
        report.observed.size() > 1 ? "endpoint " + std::to_string(e) : "the endpoint";
    if (seen.models.size() > 1)
      warnings.push_back(who + " answered as " + std::to_string(seen.models.size()) + " models (" +
                         counts_list(seen.models) +
                         "): completions that differ may come from different models, not from "
                         "batch drift");
    if (seen.fingerprints.size() > 1)
      warnings.push_back(who + " answered with " + std::to_string(seen.fingerprints.size()) +
                         " system fingerprints (" + counts_list(seen.fingerprints) +
                         "): completions that differ may come from different builds, not from "
                         "batch drift");
  }
  const AuditSummary& s = report.analysis.summary;
  if (s.min_candidates && *s.min_candidates < top_logprobs)
    warnings.push_back("the endpoint returned as few as " + std::to_string(*s.min_candidates) +
                       " candidates at a position where --top-logprobs asked for " +
                       std::to_string(top_logprobs) + ": gaps there are unknown");
  if (s.non_greedy_prompts > 0)
    warnings.push_back(std::to_string(s.non_greedy_prompts) +
                       " prompts have tokens that are not the top candidate: the endpoint did not "
                       "decode greedily on the logprobs it returned, so their gaps are not the "
                       "margins that chose the tokens");
  if (s.token_text_mismatch_prompts > 0)
    warnings.push_back(std::to_string(s.token_text_mismatch_prompts) +
                       " prompts have completions whose tokens do not concatenate to their text: "
                       "they are compared by tokens and text together");
  if (s.numbers.total() > 0)
    warnings.push_back(
        "the endpoint sent " + std::to_string(s.numbers.total()) +
        " log probabilities that were not finite numbers (NaN " + std::to_string(s.numbers.nan) +
        ", Infinity " + std::to_string(s.numbers.infinity) + ", -Infinity " +
        std::to_string(s.numbers.negative_infinity) + ", overflow " +
        std::to_string(s.numbers.overflow) + ", null " + std::to_string(s.numbers.null) +
        "): -Infinity is read as the floor -9999, the others leave the gap unknown");
  if (s.lone_surrogates > 0)
    warnings.push_back("the endpoint sent " + std::to_string(s.lone_surrogates) +
                       " lone surrogate escapes (U+D800..U+DFFF escaped without their pair) in "
                       "its JSON strings: each was read as U+FFFD");
  return warnings;
}

} // namespace

AuditReportBuilder::AuditReportBuilder(const AuditData& data)
    : m_suite(std::make_unique<Suite>(data.suite)), m_config(data.config.analysis),
      m_primary_probe(primary_probe(data.config.plan.probes)) {
  // Endpoint 0's primary probe is analysed once and reused as probes[k] and endpoints[0].
  for (std::size_t e = 0; e < std::max<std::size_t>(data.endpoints.size(), 1); ++e)
    m_endpoints.emplace_back(*m_suite, m_config, static_cast<int>(e), m_primary_probe);
  for (ProbeKind probe : data.config.plan.probes) {
    ProbeBuilder builder{probe, std::nullopt, {}, 0};
    if (probe != m_primary_probe) builder.analysis.emplace(*m_suite, m_config, 0, probe);
    m_probes.push_back(std::move(builder));
  }
  for (std::size_t e = 1; e < data.endpoints.size(); ++e)
    for (ProbeKind probe : data.config.plan.probes) {
      if (probe == m_primary_probe) continue;
      ProbeBuilder builder{probe, std::nullopt, {}, 0};
      builder.analysis.emplace(*m_suite, m_config, static_cast<int>(e), probe);
      m_other_probes.emplace_back(static_cast<int>(e), std::move(builder));
    }
  m_observed.resize(m_endpoints.size());
  m_top_logprobs = data.config.plan.top_logprobs;
  m_determinism = data.config.plan.profile == AuditProfile::deterministic;
  if (data.config.plan.profile == AuditProfile::adi)
    m_adi.assign(m_endpoints.size(), AdiTally(data.config));
}

void AuditReportBuilder::keep_details(std::shared_ptr<PromptDetails> details) {
  m_details = std::move(details);
}

void AuditReportBuilder::add_prompt(int prompt_index, const std::vector<RequestRecord>& records) {
  std::vector<const RequestRecord*> pointers;
  pointers.reserve(records.size());
  for (const auto& record : records) pointers.push_back(&record);
  add_prompt(prompt_index, pointers);
}

std::vector<AnalysisBuilder*> AuditReportBuilder::analyses() {
  std::vector<AnalysisBuilder*> out;
  for (auto& endpoint : m_endpoints) out.push_back(&endpoint);
  for (auto& [endpoint, probe] : m_other_probes) out.push_back(&*probe.analysis);
  for (auto& probe : m_probes)
    if (probe.analysis) out.push_back(&*probe.analysis);
  return out;
}

std::vector<AuditReportBuilder::SidedProbe> AuditReportBuilder::sided_probes() {
  std::vector<SidedProbe> out;
  // Only the determinism check reads the other endpoints' prefix and restart sides.
  if (m_determinism)
    for (auto& [endpoint, probe] : m_other_probes)
      if (probe_has_sides(probe.probe)) out.push_back({endpoint, &probe, false});
  for (auto& probe : m_probes)
    if (probe_has_sides(probe.probe)) out.push_back({0, &probe, true});
  return out;
}

void AuditReportBuilder::keep_prefix_drift(const SidedProbe& sided,
                                           std::optional<PrefixPromptDrift> drift) {
  if (!drift) return;
  if (sided.counts_drift && drift->drift) ++sided.probe->prefix_drift_prompts;
  sided.probe->prefix.push_back(std::move(*drift));
}

void AuditReportBuilder::add_prompt(int prompt_index,
                                    const std::vector<const RequestRecord*>& records) {
  std::vector<PromptAnalysis*> added;
  for (AnalysisBuilder* analysis : analyses())
    added.push_back(analysis->add_prompt(prompt_index, records));
  for (const SidedProbe& sided : sided_probes())
    keep_prefix_drift(sided, prefix_drift_of_prompt(*m_suite, prompt_index, records, m_config,
                                                    sided.endpoint, sided.probe->probe));
  prompt_added(records, added);
}

Result<void> AuditReportBuilder::add_streamed_prompt(int prompt_index,
                                                     const std::vector<RequestRecord>& records,
                                                     const std::vector<std::size_t>& use,
                                                     RecordTokens& tokens) {
  std::vector<const RequestRecord*> used;
  used.reserve(use.size());
  for (std::size_t index : use) used.push_back(&records[index]);
  const std::vector<AnalysisBuilder*> builders = analyses();
  for (AnalysisBuilder* analysis : builders) analysis->begin_prompt(prompt_index);
  // A probe's sides are compared with its first cold trial, read first (and again in turn).
  const std::vector<SidedProbe> sided = sided_probes();
  std::vector<PrefixDriftRuns> sides;
  std::vector<std::optional<std::size_t>> references; // by side: its reference's record
  for (const SidedProbe& probe : sided) {
    PrefixDriftRuns& runs =
        sides.emplace_back(*m_suite, m_config, prompt_index, probe.endpoint, probe.probe->probe);
    const auto reference = runs.reference_of(used);
    references.push_back(reference ? std::optional(use[*reference]) : std::nullopt);
  }
  const std::vector<std::size_t> order = analysis_order(used);
  std::vector<std::size_t> reads;
  for (const auto& reference : references)
    if (reference) reads.push_back(*reference);
  for (std::size_t position : order) reads.push_back(use[position]);
  tokens.will_read(reads);
  for (std::size_t side = 0; side < sides.size(); ++side) {
    if (!references[side]) continue;
    const std::size_t index = *references[side];
    LLMREPRO_TRY(tokens.read(index));
    sides[side].set_reference(records[index].outcome.completion);
    tokens.drop(index);
  }
  for (std::size_t position : order) {
    const std::size_t index = use[position];
    LLMREPRO_TRY(tokens.read(index));
    const CompletionFacts* facts = tokens.facts(index);
    for (AnalysisBuilder* analysis : builders) analysis->add_run(records[index], position, facts);
    for (PrefixDriftRuns& runs : sides) runs.add_run(records[index], position);
    tokens.drop(index);
  }
  tokens.settle(); // every record without its tokens again, as the prompt is judged
  std::vector<PromptAnalysis*> added;
  for (AnalysisBuilder* analysis : builders) added.push_back(analysis->end_prompt(used));
  for (std::size_t i = 0; i < sided.size(); ++i)
    keep_prefix_drift(sided[i], sides[i].end_prompt(used));
  prompt_added(used, added);
  return {};
}

void AuditReportBuilder::prompt_added(const std::vector<const RequestRecord*>& records,
                                      const std::vector<PromptAnalysis*>& added) {
  if (m_endpoints.size() > 1 && added.front() != nullptr) {
    const std::vector<const PromptAnalysis*> others(
        added.begin() + 1, added.begin() + static_cast<std::ptrdiff_t>(m_endpoints.size()));
    PromptComparison row = compare_prompt(*added.front(), others);
    if (row.all_agree) ++m_comparison.agreeing_prompts;
    m_comparison.prompts.push_back(std::move(row));
  }
  for (std::size_t e = 0; e < m_adi.size(); ++e)
    if (added[e] != nullptr) m_adi[e].add(*added[e]);
  for (const auto* record : records) {
    const auto e = static_cast<std::size_t>(record->planned.endpoint_index);
    if (!record->outcome.ok || record->planned.endpoint_index < 0 || e >= m_observed.size())
      continue;
    ++m_observed[e].models[record->outcome.completion.model];
    ++m_observed[e].fingerprints[record->outcome.completion.system_fingerprint];
  }
  if (m_details)
    for (PromptAnalysis* prompt : added)
      if (prompt != nullptr) m_details->keep(*prompt);
}

AuditReport AuditReportBuilder::finish(const ToolInfo& tool, const AuditData& data) {
  AuditReport report = finish_unjudged(tool, data);
  rejudge(report, data.config.gates, stored_run_facts(report));
  return report;
}

AuditReport AuditReportBuilder::finish_unjudged(const ToolInfo& tool, const AuditData& data) {
  AuditReport report;
  report.data = &data;
  report.tool = tool;
  report.primary_probe = m_primary_probe;
  for (auto& endpoint : m_endpoints) report.endpoints.push_back(endpoint.finish());
  for (auto& probe : m_probes) {
    ProbeAnalysis analysis;
    analysis.probe = probe.probe;
    if (probe.analysis) analysis.analysis = probe.analysis->finish(); // the primary: below
    analysis.prefix = std::move(probe.prefix);
    analysis.prefix_drift_prompts = probe.prefix_drift_prompts;
    report.probes.push_back(std::move(analysis));
  }
  for (auto& [endpoint, probe] : m_other_probes) {
    ProbeAnalysis analysis;
    analysis.probe = probe.probe;
    analysis.analysis = probe.analysis->finish();
    analysis.prefix = std::move(probe.prefix);
    report.other_endpoint_probes.push_back(std::move(analysis));
    report.other_endpoint_indices.push_back(endpoint);
  }
  if (report.endpoints.size() > 1) report.comparison = std::move(m_comparison);
  // Every shift test the gates judge, levels and endpoints alike, is one Holm family.
  std::vector<AuditAnalysis*> scopes;
  for (auto& endpoint : report.endpoints) scopes.push_back(&endpoint);
  for (auto& probe : report.probes)
    if (probe.probe != m_primary_probe) scopes.push_back(&probe.analysis);
  for (auto& probe : report.other_endpoint_probes) scopes.push_back(&probe.analysis);
  judge_shifts(scopes, report.comparison ? &*report.comparison : nullptr);
  // Summary-only copies in a lean report (AuditReport::details): its prompts are kept once.
  const auto summary_of = [](const AuditAnalysis& analysis) {
    AuditAnalysis summary;
    summary.endpoint_index = analysis.endpoint_index;
    summary.summary = analysis.summary;
    return summary;
  };
  if (m_details) {
    report.analysis = std::move(report.endpoints.front());
    report.endpoints.front() = summary_of(report.analysis);
  } else {
    report.analysis = report.endpoints.front();
  }
  for (auto& probe : report.probes)
    if (probe.probe == m_primary_probe)
      probe.analysis = m_details ? summary_of(report.analysis) : report.analysis;
  report.details = m_details;
  report.observed = std::move(m_observed);
  // An adaptive audit planned what its decisions asked for; a fixed one, its whole plan.
  report.planned_requests =
      data.adaptive
          ? data.adaptive->planned_requests()
          : planned_request_count(
                data.suite, plan_config_of(data.config, static_cast<int>(data.endpoints.size())));
  report.tara = report.analysis.summary.tara;
  report.warnings = audit_warnings(report, m_top_logprobs);
  if (m_determinism) report.determinism = determinism_checks(report);
  for (std::size_t e = 0; e < m_adi.size(); ++e)
    report.adi.push_back(m_adi[e].finish(report.endpoints[e].summary));
  return report;
}

std::vector<JudgedScope> judged_scopes(const AuditReport& report) {
  std::vector<JudgedScope> scopes;
  scopes.push_back({0, report.primary_probe, &report.analysis});
  for (const auto& probe : report.probes)
    if (probe.probe != report.primary_probe) scopes.push_back({0, probe.probe, &probe.analysis});
  for (std::size_t e = 1; e < report.endpoints.size(); ++e) {
    scopes.push_back({static_cast<int>(e), report.primary_probe, &report.endpoints[e]});
    for (std::size_t i = 0; i < report.other_endpoint_probes.size(); ++i)
      if (report.other_endpoint_indices[i] == static_cast<int>(e))
        scopes.push_back({static_cast<int>(e), report.other_endpoint_probes[i].probe,
                          &report.other_endpoint_probes[i].analysis});
  }
  return scopes;
}

RunFacts stored_run_facts(const AuditReport& report) {
  RunFacts facts;
  facts.planned_requests = report.planned_requests;
  facts.recorded_requests = report.data != nullptr ? recorded_requests(*report.data) : 0;
  if (report.data != nullptr) {
    facts.budget_stop = report.data->budget_stop;
    facts.distribution = temperature_in_effect(*report.data) == TemperatureMode::provider_default;
    facts.adaptive_unfinished = adaptive_unfinished_message(report.data->adaptive);
    // Re-judged with gates the adaptive stops did not wait for, those gates cannot pass.
    if (report.data->adaptive)
      facts.unsampled_gates = unsampled_gates(*report.data->adaptive, report.data->config);
  }
  return facts;
}

void rejudge(AuditReport& report, const GateConfig& gates, const RunFacts& facts) {
  report.verdict = judge(judged_scopes(report), report.comparison, gates, facts,
                         report.determinism.empty() ? nullptr : &report.determinism);
}

std::vector<DeterminismCheck> determinism_checks(const AuditReport& report) {
  std::vector<DeterminismCheck> checks;
  // How endpoint e's cold trials were made cold, as its probe activity recorded.
  const auto cold_mode_of = [&report](std::size_t e) {
    const bool recorded = report.data != nullptr && e < report.data->probe_activity.size();
    return recorded ? cold_mode_text(report.data->probe_activity[e]) : std::string();
  };
  // Endpoint e's side traffic as its probe activity recorded, null where none was.
  const auto activity_of = [&report](std::size_t e) -> const ProbeActivity* {
    const bool recorded = report.data != nullptr && e < report.data->probe_activity.size();
    return recorded ? &report.data->probe_activity[e] : nullptr;
  };
  std::size_t endpoint = 0;
  const auto input_of = [&](const ProbeAnalysis& probe, const AuditAnalysis& analysis) {
    const bool prefix = probe.probe == ProbeKind::prefix;
    return DeterminismInput{probe.probe, &analysis,
                            probe_has_sides(probe.probe) ? &probe.prefix : nullptr,
                            prefix ? cold_mode_of(endpoint) : std::string(), activity_of(endpoint)};
  };
  std::vector<DeterminismInput> inputs;
  for (const auto& probe : report.probes)
    inputs.push_back(input_of(probe, analysis_of(report, probe)));
  checks.push_back(check_determinism(inputs));
  for (std::size_t e = 1; e < report.endpoints.size(); ++e) {
    endpoint = e;
    inputs.clear();
    if (!probe_has_sides(report.primary_probe))
      inputs.push_back({report.primary_probe, &report.endpoints[e], nullptr, "", activity_of(e)});
    for (std::size_t i = 0; i < report.other_endpoint_probes.size(); ++i)
      if (report.other_endpoint_indices[i] == static_cast<int>(e))
        inputs.push_back(
            input_of(report.other_endpoint_probes[i], report.other_endpoint_probes[i].analysis));
    checks.push_back(check_determinism(inputs));
  }
  return checks;
}

const AuditAnalysis& analysis_of(const AuditReport& report, const ProbeAnalysis& probe) {
  // A whole report's copy of the primary kind is its own (a test may make it differ).
  return report.details && probe.probe == report.primary_probe ? report.analysis : probe.analysis;
}

const PromptAnalysis& detailed(const AuditReport& report, const PromptAnalysis& prompt,
                               PromptAnalysis& scratch) {
  return detailed(report.details.get(), prompt, scratch);
}

AuditReport make_audit_report(const AuditData& data, const ToolInfo& tool) {
  AuditReportBuilder builder(data);
  const auto by_prompt = records_by_prompt(data.suite, data.records);
  for (std::size_t p = 0; p < by_prompt.size(); ++p)
    builder.add_prompt(static_cast<int>(p), by_prompt[p]);
  return builder.finish(tool, data);
}

} // namespace llmrepro::core
