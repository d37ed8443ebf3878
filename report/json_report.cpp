#include "report/json_report.hpp"

#include <cmath>
#include <map>
#include <ostream>
#include <sstream>
#include <string_view>
#include <nlohmann/json.hpp>

#include "core/adaptive.hpp"
#include "core/cache_state.hpp"
#include "core/probe_text.hpp"
#include "core/statistics.hpp"
#include "report/detail/iso_time.hpp"
#include "report/detail/json_tokens.hpp"
#include "report/detail/adi_json.hpp"
#include "report/detail/capabilities_json.hpp"
#include "report/detail/server_json.hpp"

namespace llmrepro::report {
namespace {

// Insertion order is the documented key order.
using Json = nlohmann::ordered_json;

Json number(double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); }

Json optional_number(const std::optional<double>& value) {
  return value ? number(*value) : Json(nullptr);
}

Json optional_int(const std::optional<int>& value) { return value ? Json(*value) : Json(nullptr); }

// value -> count, in the map's (sorted) order; "" is a value like any other (absent upstream).
Json counts_json(const std::map<std::string, int>& counts) {
  Json json = Json::object();
  for (const auto& [value, count] : counts) json[value] = count;
  return json;
}

Json numbers_json(const core::NumberAnomalies& numbers) {
  return {{"nan", numbers.nan},
          {"infinity", numbers.infinity},
          {"negative_infinity", numbers.negative_infinity},
          {"overflow", numbers.overflow},
          {"null", numbers.null}};
}

// What the successful requests used and cost (core::UsageSummary); cost null without --price.
Json usage_json(const core::UsageSummary& usage) {
  return {{"requests", usage.requests},
          {"requests_with_prompt_usage", usage.requests_with_prompt_usage},
          {"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"reasoning_tokens", usage.reasoning_tokens},
          {"requests_with_cache_state", usage.requests_with_cache_state},
          {"warm_requests", usage.warm_requests},
          {"cost", optional_number(usage.cost)}};
}

Json optional_kind(const std::optional<core::DivergenceKind>& kind) {
  return kind ? Json(core::to_string(*kind)) : Json(nullptr);
}

Json candidates(const core::TokenCandidates& top) {
  Json json = Json::array();
  for (const auto& candidate : top)
    json.push_back({{"token", candidate.token}, {"logprob", number(candidate.logprob)}});
  return json;
}

Json tool_json(const core::ToolInfo& tool) {
  return {{"version", tool.version}, {"build", tool.build}, {"cuda", tool.cuda}};
}

Json audit_json(const core::AuditReport& report, const core::AuditData& data) {
  const bool complete = data.info.status == "complete";
  return {{"id", data.info.id},
          {"started", format_iso_utc_ms(data.info.started_ms)},
          {"finished", complete ? Json(format_iso_utc_ms(data.info.finished_ms)) : Json(nullptr)},
          {"status", complete ? "complete" : "partial"},
          {"planned_requests", report.planned_requests},
          {"recorded_requests", core::recorded_requests(data)}};
}

Json endpoints_json(const core::AuditReport& report, const core::AuditData& data) {
  Json json = Json::array();
  for (std::size_t e = 0; e < data.endpoints.size(); ++e) {
    const auto& endpoint = data.endpoints[e];
    static const core::EndpointObservations k_none;
    const core::EndpointObservations& seen =
        e < report.observed.size() ? report.observed[e] : k_none;
    json.push_back({{"url", endpoint.url},
                    {"dialect", endpoint.dialect},
                    {"model", endpoint.model},
                    {"embedded", endpoint.embedded},
                    {"fingerprints", endpoint.fingerprints},
                    {"models_seen", counts_json(seen.models)},
                    {"fingerprints_seen", counts_json(seen.fingerprints)},
                    {"server", detail::server_json<Json>(endpoint.server)},
                    {"capabilities", detail::capabilities_json<Json>(endpoint.capabilities)}});
  }
  return json;
}

Json config_json(const core::AuditConfig& config) {
  Json probes = Json::array();
  for (const auto probe : config.plan.probes) probes.push_back(core::to_string(probe));
  return {{"api", config.plan.api},
          {"model", config.plan.model},
          {"runs", config.plan.runs},
          {"concurrency", config.plan.levels},
          {"probes", probes},
          {"max_tokens", config.plan.max_tokens},
          {"top_logprobs", config.plan.top_logprobs},
          {"seed", config.plan.seed},
          {"stream", config.plan.stream},
          {"temperature", core::to_string(config.plan.temperature)},
          {"timeout_s", number(config.requests.timeout_s)},
          {"retries", config.requests.retries},
          {"fragile_gap", number(config.analysis.fragile_gap)},
          {"fragile_window", config.analysis.fragile_window},
          {"fragile_p", optional_number(config.analysis.fragile_p)},
          {"compare_on", core::to_string(config.analysis.compare_on)},
          {"price",
           config.analysis.price ? Json(core::to_string(*config.analysis.price)) : Json(nullptr)},
          {"max_requests",
           config.budget.max_requests ? Json(*config.budget.max_requests) : Json(nullptr)},
          {"max_tokens_total",
           config.budget.max_tokens_total ? Json(*config.budget.max_tokens_total) : Json(nullptr)},
          {"max_cost", optional_number(config.budget.max_cost)},
          {"stop_after", optional_int(config.plan.stop_after)},
          {"adaptive", config.adaptive.enabled},
          {"adaptive_initial", config.adaptive.initial},
          {"adaptive_epsilon", number(config.adaptive.epsilon)},
          {"adaptive_assume", core::to_string(config.adaptive.assume)},
          {"rate_limit", number(config.requests.rate_limit)},
          // 1-based, as the user gives it: --shard 1/4 is shard_index 0.
          {"shard", std::to_string(config.plan.shard_index + 1) + "/" +
                        std::to_string(config.plan.shard_count)},
          {"profile", core::to_string(config.plan.profile)},
          {"serial_runs", optional_int(config.plan.serial_runs)},
          {"serial_spacing_s", number(config.requests.serial_spacing_s)},
          {"gates",
           {{"fail_on", core::to_string(config.gates.fail_on)},
            {"max_unique", optional_int(config.gates.max_unique)},
            {"max_unstable_rate", optional_number(config.gates.max_unstable_rate)},
            {"min_tara", optional_number(config.gates.min_tara)},
            {"min_modal_share", optional_number(config.gates.min_modal_share)},
            {"max_logprob_drift", optional_number(config.gates.max_logprob_drift)},
            {"max_failed_rate", number(config.gates.max_failed_rate)}}}};
}

Json checks_json(const std::optional<core::CheckerSummary>& checks) {
  if (!checks) return nullptr;
  Json per_run = Json::array();
  for (const auto& run : checks->per_run)
    per_run.push_back({{"concurrency", run.concurrency},
                       {"repeat", run.repeat},
                       {"passed", run.passed},
                       {"checked", run.checked},
                       {"accuracy", number(run.accuracy)}});
  return {{"prompts_checked", checks->prompts_checked},
          {"mean_accuracy", number(checks->mean_accuracy)},
          {"best_possible", number(checks->best_possible)},
          {"worst_possible", number(checks->worst_possible)},
          {"spread", number(checks->spread)},
          {"per_run", per_run}};
}

// Runs against a reference over the positions where their tokens agree, in nats.
Json drift_json(const core::LogprobDrift& drift) {
  return {{"max_abs", number(drift.max_abs)},
          {"max_abs_gap", number(drift.max_abs_gap)},
          {"positions_compared", drift.positions_compared}};
}

// A level's noise: what it rests on, its quantiles and its counts per decade of |Δgap|.
Json noise_json(const core::NoiseEstimate& noise) {
  Json decades = Json::array();
  decades.push_back({{"upper", 0}, {"count", noise.decade_counts[0]}});
  for (std::size_t i = 0; i < core::k_noise_decades.size(); ++i)
    decades.push_back({{"upper", core::k_noise_decades[i]}, {"count", noise.decade_counts[i + 1]}});
  decades.push_back({{"upper", nullptr}, {"count", noise.decade_counts.back()}});
  return {{"positions", noise.positions},      {"nonzero", noise.nonzero},
          {"left_out", noise.left_out},        {"median", optional_number(noise.median)},
          {"p90", optional_number(noise.p90)}, {"p99", optional_number(noise.p99)},
          {"max", optional_number(noise.max)}, {"decades", decades}};
}

Json score_json(const core::PredictorScore& score) {
  return {{"brier", optional_number(score.brier)}, {"auc", optional_number(score.auc)}};
}

// The flip probability against the gap rule on the same prompts, and p_flip's reliability.
Json calibration_json(const core::FlipCalibration& calibration) {
  Json bins = Json::array();
  for (const auto& bin : calibration.reliability)
    bins.push_back({{"lower", number(bin.lower)},
                    {"upper", number(bin.upper)},
                    {"prompts", bin.items},
                    {"unstable", bin.observed},
                    {"mean_predicted", optional_number(bin.mean_predicted)},
                    {"observed_rate", optional_number(bin.observed_rate)}});
  return {{"prompts", calibration.prompts},
          {"unstable", calibration.unstable},
          {"p_flip", score_json(calibration.p_flip)},
          {"gap_rule", score_json(calibration.gap_rule)},
          {"reliability", bins},
          {"recommended_tau", optional_number(calibration.recommended_tau)}};
}

// Per concurrency level: stability beside cost.
Json levels_json(const std::vector<core::LevelSummary>& by_concurrency) {
  Json levels = Json::array();
  for (const auto& level : by_concurrency)
    levels.push_back({{"concurrency", level.concurrency},
                      {"runs", level.runs},
                      {"unique_completions", level.unique_completions},
                      {"unstable_prompts", level.unstable_prompts},
                      {"inconclusive_prompts", level.inconclusive_prompts},
                      {"differs_from_serial_prompts", level.differs_from_serial_prompts},
                      {"failed", level.failed},
                      {"tokens_per_second", number(level.tokens_per_second)},
                      {"mean_latency_ms", number(level.mean_latency_ms)},
                      {"median_latency_ms", number(level.median_latency_ms)},
                      {"p95_latency_ms", number(level.p95_latency_ms)},
                      {"usage", usage_json(level.usage)},
                      {"logprob_drift", drift_json(level.logprob_drift)},
                      {"noise", noise_json(level.noise)}});
  return levels;
}

// The verdict every output states: status, headline, and each gate in the scope it judged.
Json verdict_json(const core::Verdict& verdict) {
  Json gates = Json::array();
  for (const auto& gate : verdict.gates)
    gates.push_back(
        {{"name", gate.name},
         {"flag", gate.flag},
         {"scope",
          {{"endpoint", optional_int(gate.scope.endpoint)},
           {"probe", gate.scope.probe ? Json(core::to_string(*gate.scope.probe)) : Json(nullptr)},
           {"level", optional_int(gate.scope.level)}}},
         {"figure", optional_number(gate.figure)},
         {"limit", optional_number(gate.limit)},
         {"passed", gate.passed},
         {"message", gate.message}});
  return {{"status", core::to_string(verdict.status)},
          {"headline", verdict.headline},
          {"stability_gated", verdict.stability_gated},
          {"errors", verdict.errors},
          {"gates", gates}};
}

// --profile deterministic: where the claim held and where it first broke; null otherwise.
Json determinism_json(const core::AuditReport& report) {
  if (report.determinism.empty()) return nullptr;
  const core::DeterminismCheck& check = report.determinism.front();
  Json cells = Json::array();
  for (const auto& cell : check.cells)
    cells.push_back({{"probe", core::to_string(cell.probe)},
                     {"level", cell.level},
                     {"shape", core::to_string(cell.shape)},
                     {"prompts", cell.prompts},
                     {"token_breaks", cell.token_breaks},
                     {"logprob_breaks", cell.logprob_breaks},
                     {"max_drift", number(cell.max_drift)},
                     {"positions_compared", cell.positions_compared},
                     {"tested", cell.tested},
                     {"untested_reason", cell.tested ? Json(nullptr) : Json(cell.untested_reason)},
                     {"note", cell.note.empty() ? Json(nullptr) : Json(cell.note)},
                     {"held", cell.held()}});
  Json first_break = nullptr;
  if (check.first_break) {
    const core::DeterminismFinding& found = *check.first_break;
    first_break = {{"probe", core::to_string(found.probe)},
                   {"level", found.level},
                   {"shape", core::to_string(found.shape)},
                   {"what", core::to_string(found.what)},
                   {"prompt", found.prompt},
                   {"position", optional_int(found.position)},
                   {"drift", number(found.drift)}};
  }
  return {{"profile", "deterministic"},
          {"held", check.held},
          {"line", core::determinism_line(check)},
          {"coverage", core::determinism_coverage_line(check)},
          {"first_break", first_break},
          {"cells", cells}};
}

Json failure_reasons_json(const std::vector<std::pair<std::string, int>>& reasons) {
  Json json = Json::array();
  for (const auto& [reason, count] : reasons)
    json.push_back({{"reason", reason}, {"count", count}});
  return json;
}

Json reasoning_json(const core::ReasoningSummary& reasoning) {
  return {{"compare_on", core::to_string(reasoning.compare_on)},
          {"completions", reasoning.completions},
          {"with_reasoning", reasoning.with_reasoning},
          {"with_reasoning_tokens", reasoning.with_reasoning_tokens},
          {"joined", reasoning.joined}};
}

// Unstable over judged (stable + unstable) prompts, what --max-unstable-rate gates, with its
// Wilson 95% interval: under --compare-on tool_calls, the chain-divergence rate.
Json unstable_rate_json(const core::AuditSummary& summary) {
  const int judged = summary.stable_prompts + summary.unstable_prompts;
  const core::Interval interval = core::wilson_interval(summary.unstable_prompts, judged);
  return {{"judged", judged},
          {"rate", judged > 0 ? number(static_cast<double>(summary.unstable_prompts) / judged)
                              : Json(nullptr)},
          {"low", number(interval.low)},
          {"high", number(interval.high)}};
}

// Distribution mode's figures (core/answer_distribution.hpp): a modal share with its interval.
Json modal_json(const core::ModalShare& modal) {
  return {{"answer", modal.runs > 0 && modal.count > 0 ? Json(modal.answer) : Json(nullptr)},
          {"count", modal.count},
          {"runs", modal.runs},
          {"share", number(modal.share)},
          {"low", number(modal.interval.low)},
          {"high", number(modal.interval.high)}};
}

// A shift test as judged in the audit's family: `base` names the side it was tested against
// ("serial": the lowest level; "base": endpoint 0).
Json shift_json(const std::optional<core::ShiftTest>& test, const std::optional<double>& adjusted,
                double distance, bool shifted, const std::string& base) {
  if (!test) return nullptr;
  return {
      {"answer", test->a_answers > 0 && test->b_answers > 0 ? Json(test->answer) : Json(nullptr)},
      {base + "_count", test->a_count},
      {base + "_answers", test->a_answers},
      {"count", test->b_count},
      {"answers", test->b_answers},
      {"p", number(test->p)},
      {"p_adjusted", optional_number(adjusted)},
      {"distance", number(distance)},
      {"shifted", shifted}};
}

Json level_distribution_json(const core::LevelAnalysis& level) {
  return {{"modal", modal_json(level.modal)},
          {"distinct_answers", level.answers.size()},
          {"shift", shift_json(level.shift, level.shift_p_adjusted,
                               level.answer_distance_from_serial, level.shifted, "serial")}};
}

Json summary_distribution_json(const core::AuditSummary& summary) {
  return {{"shifted_prompts", summary.shifted_prompts},
          {"shift_tests", summary.shift_tests},
          {"alpha", number(core::k_shift_alpha)},
          {"min_modal_share", optional_number(summary.min_modal_share)}};
}

Json summary_json(const core::AuditReport& report) {
  const auto& summary = report.analysis.summary;
  const auto& predictor = summary.predictor;
  const Json levels = levels_json(summary.by_concurrency);
  const std::string cache_state = core::cache_state_line(summary.by_concurrency);
  return {{"prompts", summary.prompts},
          {"requests", summary.requests},
          {"failed_requests", summary.failed_requests},
          {"failure_reasons", failure_reasons_json(summary.failure_reasons)},
          {"stable_prompts", summary.stable_prompts},
          {"unstable_prompts", summary.unstable_prompts},
          {"inconclusive_prompts", summary.inconclusive_prompts},
          {"unstable_rate", unstable_rate_json(summary)},
          {"bitwise_stable_prompts", summary.bitwise_stable_prompts},
          {"max_logprob_drift", optional_number(summary.max_logprob_drift)},
          {"prompts_with_two_completions", summary.prompts_with_two_completions},
          {"fragile_prompts", summary.fragile_prompts},
          {"fragility_unknown_prompts", summary.fragility_unknown_prompts},
          {"prompts_without_logprobs", summary.prompts_without_logprobs},
          {"non_greedy_prompts", summary.non_greedy_prompts},
          {"token_text_mismatch_prompts", summary.token_text_mismatch_prompts},
          {"min_candidates", optional_int(summary.min_candidates)},
          {"numbers", numbers_json(summary.numbers)},
          {"lone_surrogates", summary.lone_surrogates},
          {"reasoning", reasoning_json(summary.reasoning)},
          {"usage", usage_json(summary.usage)},
          {"tarr", number(summary.tarr)},
          {"tara", optional_number(report.tara)},
          {"predictor",
           {{"true_positive", predictor.true_positive},
            {"false_positive", predictor.false_positive},
            {"false_negative", predictor.false_negative},
            {"true_negative", predictor.true_negative},
            {"precision", optional_number(predictor.precision)},
            {"recall", optional_number(predictor.recall)}}},
          {"flip_calibration", calibration_json(summary.flip_calibration)},
          {"checks", checks_json(summary.checks)},
          {"distribution", summary_distribution_json(summary)},
          {"by_concurrency", levels},
          {"cache_state", cache_state.empty() ? Json(nullptr) : Json(cache_state)},
          {"determinism", determinism_json(report)},
          {"adi", detail::adi_json<Json>(report.adi)},
          {"verdict", verdict_json(report.verdict)}};
}

// A completion's members before "tokens", its last, which write_prompt appends as text.
Json completion_json(const core::DistinctCompletion& completion) {
  Json counts = Json::object();
  for (const auto& [level, count] : completion.count_by_concurrency)
    counts[std::to_string(level)] = count;
  return {{"text", completion.text},
          {"count", completion.count},
          {"reference", completion.is_reference},
          {"divergence", optional_int(completion.divergence)},
          {"divergence_kind", optional_kind(completion.divergence_kind)},
          {"count_by_concurrency", counts},
          {"finish_reasons", counts_json(completion.finish_reasons)},
          {"models", counts_json(completion.models)},
          {"fingerprints", counts_json(completion.fingerprints)}};
}

// A prompt's members before "completions", its last, which write_prompt appends as text.
Json prompt_json(const core::PromptAnalysis& prompt) {
  Json levels = Json::array();
  for (const auto& level : prompt.by_concurrency)
    levels.push_back(
        {{"concurrency", level.concurrency},
         {"status", core::to_string(level.status)},
         {"runs", level.runs},
         {"failed", level.failed},
         {"unique_completions", level.unique_completions},
         {"first_divergence", optional_int(level.first_divergence)},
         {"text_divergence", detail::text_divergence_json<Json>(level.text_divergence)},
         {"differs_from_serial", level.differs_from_serial},
         {"logprob_drift", drift_json(level.logprob_drift)},
         {"p_flip", optional_number(level.p_flip)},
         {"distribution", level_distribution_json(level)}});
  Json answers = Json::array();
  for (const auto& [answer, count] : prompt.answers)
    answers.push_back({{"answer", answer}, {"count", count}});
  return {{"id", prompt.id},
          {"status", core::to_string(prompt.status)},
          {"tier", core::to_string(prompt.tier)},
          {"logprob_drift", drift_json(prompt.logprob_drift)},
          {"runs", prompt.runs},
          {"failed", prompt.failed},
          {"unique_completions", prompt.unique_completions},
          {"first_divergence", optional_int(prompt.first_divergence)},
          {"divergence_unit", prompt.text_mode ? "char" : "token"},
          {"divergence_kind", optional_kind(prompt.divergence_kind)},
          {"text_divergence", detail::text_divergence_json<Json>(prompt.text_divergence)},
          {"fingerprints", prompt.fingerprints},
          {"modal_completion_share", optional_number(core::modal_completion_share(prompt))},
          {"gap_at_divergence", optional_number(prompt.gap_at_divergence)},
          {"min_gap", optional_number(prompt.min_gap)},
          {"min_gap_position", optional_int(prompt.min_gap_position)},
          // Three-valued: null when fragility could not be computed, fragility_reason says why.
          {"fragile", prompt.fragile ? Json(*prompt.fragile) : Json(nullptr)},
          {"fragility_reason", prompt.fragile ? Json(nullptr) : Json(prompt.fragility_reason)},
          {"fragile_by_gap", prompt.fragile_by_gap ? Json(*prompt.fragile_by_gap) : Json(nullptr)},
          {"p_flip", optional_number(prompt.p_flip)},
          {"p_flip_reason", prompt.p_flip ? Json(nullptr) : Json(prompt.p_flip_reason)},
          {"unstable", prompt.unstable},
          {"has_logprobs", prompt.has_logprobs},
          {"token_text_mismatch", prompt.token_text_mismatch},
          {"non_greedy_tokens", prompt.non_greedy_tokens},
          {"min_candidates", optional_int(prompt.min_candidates)},
          {"numbers", numbers_json(prompt.numbers)},
          {"lone_surrogates", prompt.lone_surrogates},
          {"candidates_at_divergence", candidates(prompt.candidates_at_divergence)},
          {"tool_call_divergence", prompt.tool_call_divergence
                                       ? Json{{"step", prompt.tool_call_divergence->step},
                                              {"field", prompt.tool_call_divergence->field}}
                                       : Json(nullptr)},
          {"answers", answers},
          {"answer_failures", prompt.answer_failures},
          {"answers_agree", prompt.answers_agree},
          {"modal", modal_json(prompt.modal)},
          {"shifted", prompt.shifted},
          {"passes", optional_int(prompt.passes)},
          {"checked_runs", prompt.checked_runs},
          {"by_concurrency", levels}};
}

// The stability and cost of one analysis, without its prompts.
Json brief_summary_json(const core::AuditSummary& summary) {
  return {{"prompts", summary.prompts},
          {"requests", summary.requests},
          {"failed_requests", summary.failed_requests},
          {"stable_prompts", summary.stable_prompts},
          {"unstable_prompts", summary.unstable_prompts},
          {"inconclusive_prompts", summary.inconclusive_prompts},
          {"fragile_prompts", summary.fragile_prompts},
          {"fragility_unknown_prompts", summary.fragility_unknown_prompts},
          {"bitwise_stable_prompts", summary.bitwise_stable_prompts},
          {"max_logprob_drift", optional_number(summary.max_logprob_drift)},
          {"tarr", number(summary.tarr)},
          {"tara", number(summary.tara)},
          {"reasoning", reasoning_json(summary.reasoning)},
          {"usage", usage_json(summary.usage)},
          {"flip_calibration", calibration_json(summary.flip_calibration)},
          {"by_concurrency", levels_json(summary.by_concurrency)}};
}

// How the prefix probe's cold trials were made cold: "per_request" (the prompt cache left out of
// each request), "flush" (a flush route answered), or null (no cold mode: not cold at all).
Json cold_mode_json(const core::ProbeActivity& activity) {
  if (activity.cold_per_request) return "per_request";
  if (!activity.flush_route.empty()) return "flush";
  return nullptr;
}

Json activity_json(const core::AuditData& data, core::ProbeKind probe) {
  if (data.probe_activity.empty()) return nullptr;
  const core::ProbeActivity& activity = data.probe_activity.front();
  switch (probe) {
  case core::ProbeKind::mixed:
  case core::ProbeKind::mixed_sampling: {
    Json levels = Json::array();
    for (const core::FillerLevel& level : activity.filler_levels)
      if (level.sampled == core::fillers_sampled(probe))
        levels.push_back({{"level", level.level},
                          {"sent", level.sent},
                          {"refused", level.refused},
                          {"shortened", level.shortened},
                          {"unfit", level.unfit},
                          {"refusal", level.refused > 0 ? Json(level.refusal) : Json(nullptr)}});
    return {{"filler_sent", core::fillers_sent(activity, probe)},
            {"filler_failed", core::fillers_failed(activity, probe)},
            {"filler_levels", levels}};
  }
  case core::ProbeKind::long_prompt:
    return {{"long_shortened", activity.long_shortened},
            {"long_context_words_min",
             activity.long_shortened > 0 ? Json(activity.long_context_words_min) : Json(nullptr)}};
  case core::ProbeKind::prefix:
    return {{"primes_sent", activity.primes_sent},
            {"primes_failed", activity.primes_failed},
            {"flushes_sent", activity.flushes_sent},
            {"flushes_failed", activity.flushes_failed},
            {"flush_route", activity.flush_looked_up && !activity.flush_route.empty()
                                ? Json(activity.flush_route)
                                : Json(nullptr)},
            {"cold_mode", cold_mode_json(activity)},
            {"prefix_words",
             activity.prefix_shortened ? Json(activity.prefix_words) : Json(core::k_prefix_words)}};
  case core::ProbeKind::restart:
    return {{"restarts_run", activity.restarts_run},
            {"restarts_failed", activity.restarts_failed},
            {"restart_ready_ms_max", activity.restart_ready_ms_max}};
  case core::ProbeKind::sweep: break;
  }
  return Json::object();
}

// A two-sided probe's rows (PrefixPromptDrift's cold and warm sides), its sides named `first`
// and `second` in the keys.
Json two_sides_json(const core::ProbeAnalysis& probe, const std::string& first,
                    const std::string& second) {
  Json rows = Json::array();
  for (const auto& drift : probe.prefix)
    rows.push_back({{"id", drift.id},
                    {first + "_runs", drift.cold_runs},
                    {second + "_runs", drift.warm_runs},
                    {first + "_unique", drift.cold_unique},
                    {second + "_unique", drift.warm_unique},
                    {"drift", drift.drift},
                    {"divergence", optional_int(drift.divergence)}});
  return {{"drift_prompts", probe.prefix_drift_prompts}, {"prompts", rows}};
}

Json probes_json(const core::AuditReport& report, const core::AuditData& data) {
  Json probes = Json::array();
  for (const auto& probe : report.probes) {
    Json prompts = Json::array();
    for (const auto& prompt : core::analysis_of(report, probe).prompts)
      prompts.push_back({{"id", prompt.id},
                         {"status", core::to_string(prompt.status)},
                         {"runs", prompt.runs},
                         {"failed", prompt.failed},
                         {"unique_completions", prompt.unique_completions},
                         {"first_divergence", optional_int(prompt.first_divergence)},
                         {"unstable", prompt.unstable}});
    // The prefix probe's sides are cold and warm trials; the restart probe's, each round's
    // first request after the restart and the later one.
    const Json prefix = probe.probe == core::ProbeKind::prefix
                            ? two_sides_json(probe, "cold", "warm")
                            : Json(nullptr);
    const Json restart = probe.probe == core::ProbeKind::restart
                             ? two_sides_json(probe, "first", "later")
                             : Json(nullptr);
    probes.push_back({{"probe", core::to_string(probe.probe)},
                      {"summary", brief_summary_json(probe.analysis.summary)},
                      {"activity", activity_json(data, probe.probe)},
                      {"prefix", prefix},
                      {"restart", restart},
                      {"prompts", prompts}});
  }
  return probes;
}

Json comparison_json(const core::AuditReport& report, const core::AuditData& data) {
  if (!report.comparison) return nullptr;
  Json endpoints = Json::array();
  for (std::size_t e = 0; e < report.endpoints.size(); ++e)
    endpoints.push_back(
        {{"index", static_cast<int>(e)},
         {"url", e < data.endpoints.size() ? Json(data.endpoints[e].url) : Json(nullptr)},
         {"summary", brief_summary_json(report.endpoints[e].summary)}});
  Json prompts = Json::array();
  for (const auto& prompt : report.comparison->prompts) {
    Json others = Json::array();
    for (const auto& other : prompt.endpoints)
      others.push_back({{"endpoint", other.endpoint_index},
                        {"has_reference", other.has_reference},
                        {"agrees", other.agrees},
                        {"first_difference", optional_int(other.first_difference)},
                        {"shift", shift_json(other.shift, other.shift_p_adjusted,
                                             other.answer_distance, other.shifted, "base")}});
    prompts.push_back({{"id", prompt.id},
                       {"all_agree", prompt.all_agree},
                       {"shifted", prompt.shifted},
                       {"endpoints", others}});
  }
  return {{"probe", core::to_string(report.primary_probe)},
          {"agreeing_prompts", report.comparison->agreeing_prompts},
          {"shifted_prompts", report.comparison->shifted_prompts},
          {"shift_tests", report.comparison->shift_tests},
          {"endpoints", endpoints},
          {"prompts", prompts}};
}

// Semantic agreement of endpoint 0's distinct completions; null when it was not measured.
// The decisions of an adaptive audit (--adaptive); null for a fixed one.
Json adaptive_json(const core::AuditData& data) {
  if (!data.adaptive) return nullptr;
  const core::AdaptiveOutcome& outcome = *data.adaptive;
  Json prompts = Json::array();
  for (const auto& prompt : outcome.prompts) {
    Json by_level = Json::object();
    for (const auto& [concurrency, runs] : prompt.planned)
      by_level[std::to_string(concurrency)] = runs;
    prompts.push_back({{"id", prompt.id},
                       {"runs", prompt.runs()},
                       {"runs_by_concurrency", by_level},
                       {"stop", core::to_string(prompt.stop)},
                       {"look", prompt.stopped_at_look},
                       {"p_flip_bound", optional_number(prompt.p_flip_bound)},
                       {"bound_basis", core::to_string(prompt.basis)},
                       {"bound_basis_reason", prompt.basis_reason}});
  }
  Json stops = Json::object();
  for (core::AdaptiveStop stop :
       {core::AdaptiveStop::unstable, core::AdaptiveStop::robust, core::AdaptiveStop::max_runs,
        core::AdaptiveStop::budget, core::AdaptiveStop::undecided})
    stops[core::to_string(stop)] = outcome.count(stop);
  Json contradicted = Json::object();
  for (const auto& [concurrency, contradiction] : outcome.contradicted)
    contradicted[std::to_string(concurrency)] = {{"look", contradiction.look},
                                                 {"reason", contradiction.reason}};
  return {{"initial_runs", outcome.config.initial_runs},
          {"max_runs", outcome.config.max_runs},
          {"assumption", core::to_string(outcome.config.assumption)},
          {"noise_model_contradicted", contradicted},
          {"epsilon", number(outcome.config.epsilon)},
          {"confidence", number(outcome.config.confidence)},
          {"max_unique", optional_int(outcome.config.max_unique)},
          {"max_logprob_drift", optional_number(outcome.config.max_logprob_drift)},
          {"min_tara", optional_number(outcome.config.min_tara)},
          {"fragile_p", optional_number(outcome.config.fragile_p)},
          {"looks", outcome.looks},
          {"finished", outcome.finished},
          {"planned_requests", outcome.planned_requests()},
          {"fixed_plan_requests", core::fixed_plan_requests(outcome)},
          {"stops", stops},
          {"line", core::adaptive_line(outcome)},
          {"guarantee", core::adaptive_guarantee(outcome)},
          {"notes", core::adaptive_notes(outcome)},
          {"prompts", prompts}};
}

Json semantic_json(const core::AuditData& data) {
  if (!data.semantic) return nullptr;
  const core::SemanticAgreement& semantic = *data.semantic;
  Json prompts = Json::array();
  for (const auto& prompt : semantic.prompts) {
    const auto index = static_cast<std::size_t>(prompt.prompt_index);
    prompts.push_back({{"id", index < data.suite.prompts.size() ? Json(data.suite.prompts[index].id)
                                                                : Json(nullptr)},
                       {"distinct", prompt.distinct},
                       {"pairs", prompt.pairs},
                       {"mean", number(prompt.mean)},
                       {"std", number(prompt.std)},
                       {"min", number(prompt.min)},
                       {"agrees", prompt.agrees}});
  }
  return {{"model", semantic.model},
          {"threshold", number(semantic.threshold)},
          {"agreeing_share", optional_number(semantic.agreeing_share)},
          {"prompts", prompts}};
}

// Failed records of the analysed endpoint: the requests that never produced a completion.
Json errors_json(const core::AuditReport& report, const core::AuditData& data) {
  Json errors = Json::array();
  for (const auto& record : data.records) {
    const auto& planned = record.planned;
    if (record.outcome.ok || planned.endpoint_index != report.analysis.endpoint_index) continue;
    const auto index = static_cast<std::size_t>(planned.prompt_index);
    const std::string prompt = index < data.suite.prompts.size()
                                   ? data.suite.prompts[index].id
                                   : "#" + std::to_string(planned.prompt_index);
    errors.push_back({{"prompt", prompt},
                      {"concurrency", planned.concurrency},
                      {"probe", core::to_string(planned.probe)},
                      {"repeat", planned.repeat},
                      {"http_status", record.outcome.http_status},
                      {"attempts", record.outcome.attempts},
                      {"error", record.outcome.error}});
  }
  return errors;
}

// Model text may hold invalid UTF-8 (a BPE token can split a character); the replace handler
// writes U+FFFD instead of throwing.
std::string dump(const Json& json) {
  return json.dump(2, ' ', false, Json::error_handler_t::replace);
}

// One element of "prompts" at `indent`, as dump(2) writes the whole tree; the tokens as text.
void write_prompt(std::string& out, const core::PromptAnalysis& prompt, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  detail::append_open_object(out, dump(prompt_json(prompt)), indent);
  out += ",\n" + pad + "  \"completions\": ";
  if (prompt.completions.empty()) {
    out += "[]";
  } else {
    out += '[';
    for (std::size_t i = 0; i < prompt.completions.size(); ++i) {
      out += (i == 0 ? "\n" : ",\n") + pad + "    ";
      detail::append_open_object(out, dump(completion_json(prompt.completions[i])), indent + 4);
      out += ",\n" + pad + "      \"tokens\": ";
      detail::append_tokens_json(out, prompt.completions[i].tokens, indent + 6);
      detail::close_object(out, indent + 4);
    }
    out += '\n' + pad + "  ]";
  }
  detail::close_object(out, indent);
}

} // namespace

void write_json(const core::AuditReport& report, std::ostream& out) {
  static const core::AuditData k_empty;
  const core::AuditData& data = report.data != nullptr ? *report.data : k_empty;
  // The prompts are spliced in one at a time below, so that neither the document tree nor the
  // text ever holds every prompt's completions and tokens at once.
  const Json prompts = Json::array();
  const Json json = {
      {"schema", k_json_report_schema},      {"tool", tool_json(report.tool)},
      {"audit", audit_json(report, data)},   {"endpoints", endpoints_json(report, data)},
      {"config", config_json(data.config)},  {"summary", summary_json(report)},
      {"warnings", report.warnings},         {"prompts", prompts},
      {"errors", errors_json(report, data)}, {"probe", core::to_string(report.primary_probe)},
      {"probes", probes_json(report, data)}, {"comparison", comparison_json(report, data)},
      {"semantic", semantic_json(data)},     {"adaptive", adaptive_json(data)}};
  const std::string skeleton = dump(json) + "\n";
  // The top-level member is the only "prompts" at two spaces of indentation.
  const std::string_view placeholder = "\n  \"prompts\": [],\n";
  const std::size_t at =
      report.analysis.prompts.empty() ? std::string::npos : skeleton.find(placeholder);
  if (at == std::string::npos) {
    out.write(skeleton.data(), static_cast<std::streamsize>(skeleton.size()));
    return;
  }
  const auto write = [&out](std::string_view text) {
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  };
  const std::string_view whole = skeleton;
  write(whole.substr(0, at));
  write("\n  \"prompts\": [");
  std::string element;
  core::PromptAnalysis scratch;
  for (std::size_t i = 0; i < report.analysis.prompts.size(); ++i) {
    element.assign(i == 0 ? "\n    " : ",\n    ");
    write_prompt(element, core::detailed(report, report.analysis.prompts[i], scratch), 4);
    write(element);
  }
  write("\n  ],\n");
  write(whole.substr(at + placeholder.size()));
}

std::string render_json(const core::AuditReport& report) {
  std::ostringstream out;
  write_json(report, out);
  return std::move(out).str();
}

} // namespace llmrepro::report
