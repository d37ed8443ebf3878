// A hand-built AuditReport with known values for the JSON and terminal renderers: every field is
// set by hand, so the tests check the renderers alone, not the analysis.
// Prompt "queens" diverges at token 102 (unstable, fragile), "stable" gave one completion but a
// request failed (so it is inconclusive) and is fragile, "hostile" carries terminal escapes and
// invalid UTF-8 in its id and completion, was compared as text (no tokens) and its fragility is
// unknown. The verdict fails 2 of 3 gates; two warnings, one with a hostile model name.
#pragma once

#include <limits>
#include <memory>
#include <string>

#include "core/audit_report.hpp"

namespace llmrepro::test {

struct ReportFixture {
  core::AuditData data;
  core::AuditReport report;
  ReportFixture() = default;
  ReportFixture(const ReportFixture&) = delete; // report.data points into data
  ReportFixture& operator=(const ReportFixture&) = delete;
};

inline const std::string k_hostile_prompt_id = "hostile\x1b[2J\x1b]0;pwned\x07";
inline const std::string k_hostile_token = "\x1b[31mred\r\n\xff";
inline const std::string k_hostile_model = "evil\x1b[2J";
inline const std::string k_fixture_headline =
    "FAIL: 2 of 3 gates failed: 2 of 2 judged prompts unstable, 1 inconclusive (--fail-on "
    "unstable)";

inline std::unique_ptr<ReportFixture> make_report_fixture() {
  auto fixture = std::make_unique<ReportFixture>();
  core::AuditData& data = fixture->data;
  data.info = {"audit-1700000000123", 1700000000123, 1700000060456, "complete"};
  data.config.plan.model = "tiny";
  data.config.plan.runs = 3;
  data.config.plan.levels = {1, 8};
  data.config.gates.fail_on.unstable = true;
  data.config.gates.max_unique = 2;
  data.config.gates.max_failed_rate = 0.1;
  data.config.plan.seed = 42;
  data.config.plan.shard_index = 0;
  data.config.plan.shard_count = 2;
  data.endpoints = {{"http://127.0.0.1:8000", "openai-chat", "tiny-model", false, {"fp1", "fp2"}}};
  data.suite.source = "suite.jsonl";
  for (const std::string& id :
       {std::string("queens"), std::string("stable"), k_hostile_prompt_id}) {
    core::Prompt prompt;
    prompt.id = id;
    prompt.text = "x";
    data.suite.prompts.push_back(prompt);
  }
  core::RequestRecord failed;
  failed.planned = {0, 1, 8, core::ProbeKind::sweep, 2};
  failed.outcome.http_status = 503;
  failed.outcome.attempts = 4;
  failed.outcome.error = "HTTP 503: queue full";
  core::RequestRecord other_endpoint = failed;
  other_endpoint.planned.endpoint_index = 1;
  data.records = {failed, other_endpoint};

  core::AuditReport& report = fixture->report;
  report.data = &data;
  report.tool = {"0.1.0", "g++ 12, RelWithDebInfo", "not compiled"};
  report.planned_requests = 18;
  report.tara = std::nullopt;

  auto& summary = report.analysis.summary;
  summary.prompts = 3;
  summary.requests = 18;
  summary.failed_requests = 1;
  summary.failure_reasons = {{"HTTP 503: queue full", 1}};
  summary.stable_prompts = 0;
  summary.unstable_prompts = 2;
  summary.inconclusive_prompts = 1;
  summary.prompts_with_two_completions = 3;
  summary.fragile_prompts = 2;
  summary.fragility_unknown_prompts = 1;
  summary.prompts_without_logprobs = 1;
  summary.non_greedy_prompts = 1;
  summary.token_text_mismatch_prompts = 0;
  summary.min_candidates = 1;
  summary.numbers.nan = 2;
  summary.numbers.null = 1;
  summary.models_seen = {{"tiny-model", 16}, {k_hostile_model, 1}};
  summary.fingerprints_seen = {{"fp1", 9}, {"fp2", 8}};
  summary.tarr = 1.0 / 3.0;
  summary.bitwise_stable_prompts = 0;
  summary.max_logprob_drift = 1.0 / 3.0; // queens'; the inconclusive prompt's is not counted
  summary.predictor = {1, 1, 1, 0, 0.5, std::nullopt};
  // concurrency, runs, unique, unstable, inconclusive, differs from serial, failed, tok/s, ms
  summary.by_concurrency = {
      {1, 9, 3, 0, 1, 0, 0, 812.5, 20.25, 18.0, 31.0},
      {8, 8, 5, 2, 1, 1, 1, std::numeric_limits<double>::infinity(), 95.0, 90.0, 140.0}};
  // Usage, priced at 2 in and 8 out per million tokens: at c=1 all 9 successful requests
  // reported their prompt's tokens, at c=8 7 of 8 did (so its cost is a lower bound).
  data.config.analysis.price = core::Price{2.0, 8.0};
  summary.by_concurrency[0].usage =
      core::UsageSummary{9, 9, 216, 90, 18, std::nullopt}.priced(data.config.analysis.price);
  summary.by_concurrency[1].usage =
      core::UsageSummary{8, 7, 184, 80, 12, std::nullopt}.priced(data.config.analysis.price);
  summary.usage =
      core::UsageSummary{17, 16, 400, 170, 30, std::nullopt}.priced(data.config.analysis.price);
  // Each level's drift is queens' (the other prompts compared nothing there).
  summary.by_concurrency[0].logprob_drift = {0.0, 0.0, 40};
  summary.by_concurrency[1].logprob_drift = {1.0 / 3.0, 0.0625, 100};
  // Noise: none at c=1 over 40 positions; at c=8 10 of 100 moved, up to 0.25 nats.
  summary.by_concurrency[0].noise = {40, 0, 0.0, 0.0, 0.0, 0.0, {40, 0, 0, 0, 0, 0, 0, 0, 0}};
  summary.by_concurrency[1].noise = {
      100, 10, 0.0, 0.0625, 0.25, 0.25, {90, 0, 0, 0, 0, 2, 4, 4, 0}};
  // Only queens is scored (stable is inconclusive, hostile has no p_flip): predicted 0.75.
  summary.flip_calibration.prompts = 1;
  summary.flip_calibration.unstable = 1;
  summary.flip_calibration.p_flip = {0.0625, std::nullopt};
  summary.flip_calibration.gap_rule = {0.0, std::nullopt};
  summary.flip_calibration.reliability = core::reliability_bins({0.75}, {true});
  summary.flip_calibration.recommended_tau = 0.25;

  core::PromptAnalysis queens;
  queens.id = "queens";
  queens.prompt_index = 0;
  queens.runs = 6;
  queens.unique_completions = 3;
  queens.first_divergence = 102;
  queens.gap_at_divergence = 0.0123456789012345678;
  queens.min_gap = 0.0123456789012345678;
  queens.min_gap_position = 102;
  queens.divergence_kind = core::DivergenceKind::token;
  queens.status = core::PromptStatus::unstable;
  queens.fragile = true;
  queens.fragile_by_gap = true;
  queens.p_flip = 0.75;
  queens.unstable = true;
  queens.has_logprobs = true;
  queens.non_greedy_tokens = 2;
  queens.min_candidates = 1;
  queens.numbers.nan = 2;
  queens.numbers.null = 1;
  queens.candidates_at_divergence = {{" Queens", -0.6931471805599453}, {" Manhattan", -0.7054}};
  queens.by_concurrency = {{1, 3, 0, 1, std::nullopt, core::PromptStatus::stable, false},
                           {8, 3, 0, 3, 102, core::PromptStatus::unstable, true}};
  queens.tier = core::StabilityTier::unstable;
  queens.logprob_drift = {1.0 / 3.0, 0.0625, 101};
  queens.by_concurrency[0].logprob_drift = {0.0, 0.0, 40};
  queens.by_concurrency[1].logprob_drift = {1.0 / 3.0, 0.0625, 100};
  queens.by_concurrency[0].p_flip = 0.0;
  queens.by_concurrency[1].p_flip = 0.5;
  core::DistinctCompletion reference;
  reference.text = "Born in Queens";
  reference.tokens = {{"Born", -0.01, {{"Born", -0.01}, {"Raised", -4.5}}}};
  reference.count = 4;
  reference.count_by_concurrency = {{1, 3}, {8, 1}};
  reference.is_reference = true;
  reference.finish_reasons = {{"stop", 4}};
  reference.models = {{"tiny-model", 4}};
  reference.fingerprints = {{"fp1", 3}, {"fp2", 1}};
  core::DistinctCompletion variant;
  variant.text = "Born in Manhattan";
  variant.count = 2;
  variant.count_by_concurrency = {{8, 2}};
  variant.divergence = 102;
  variant.divergence_kind = core::DivergenceKind::token;
  variant.finish_reasons = {{"length", 1}, {"stop", 1}};
  variant.models = {{"tiny-model", 1}, {k_hostile_model, 1}};
  variant.fingerprints = {{"fp2", 2}};
  queens.completions = {reference, variant};

  core::PromptAnalysis stable;
  stable.id = "stable";
  stable.prompt_index = 1;
  stable.runs = 5;
  stable.failed = 1;
  stable.unique_completions = 1;
  stable.min_gap = 0.01;
  stable.min_gap_position = 7;
  stable.status = core::PromptStatus::inconclusive;
  stable.fragile = true;
  stable.fragile_by_gap = true;
  stable.p_flip = 0.4375;
  stable.has_logprobs = true;
  stable.min_candidates = 2;
  stable.passes = 5;
  stable.checked_runs = 6;
  stable.answers = {{"42", 5}};
  stable.answers_agree = false;
  stable.by_concurrency = {{1, 3, 0, 1, std::nullopt, core::PromptStatus::stable, false},
                           {8, 2, 1, 1, std::nullopt, core::PromptStatus::inconclusive, false}};
  stable.tier = core::StabilityTier::inconclusive;
  stable.logprob_drift = {0.5, 0.25, 12};

  core::PromptAnalysis hostile;
  hostile.id = k_hostile_prompt_id;
  hostile.prompt_index = 2;
  hostile.runs = 6;
  hostile.unique_completions = 2;
  hostile.first_divergence = 0;
  hostile.divergence_kind = core::DivergenceKind::length;
  hostile.status = core::PromptStatus::unstable;
  hostile.unstable = true;
  hostile.fragile = std::nullopt;
  hostile.fragility_reason = "text mode: a completion came back without tokens";
  hostile.p_flip_reason = "text mode: a completion came back without tokens";
  hostile.text_mode = true;
  hostile.tier = core::StabilityTier::unstable;
  hostile.has_logprobs = false;
  hostile.token_text_mismatch = 1;
  hostile.candidates_at_divergence = {{k_hostile_token, -1.0}, {"\u202egnp.exe", -1.5}};
  core::DistinctCompletion hostile_text;
  hostile_text.text = k_hostile_token;
  hostile_text.count = 6;
  hostile_text.is_reference = true;
  hostile_text.finish_reasons = {{"", 6}};
  hostile_text.models = {{"tiny-model", 6}};
  hostile.completions = {hostile_text};

  report.analysis.prompts = {queens, stable, hostile};
  const core::GateScope scope{0, core::ProbeKind::sweep, std::nullopt};
  report.verdict.status = core::VerdictStatus::fail;
  report.verdict.stability_gated = true;
  report.verdict.headline = k_fixture_headline;
  report.verdict.gates = {
      {"max_failed_rate", "--max-failed-rate", core::GateScope{}, 1.0 / 18.0, 0.1,
       "1 of 18 requests failed after their retries (1 x HTTP 503: queue full), limit 0.100 "
       "(--max-failed-rate)",
       true},
      {"fail_on_unstable", "--fail-on unstable", scope, 2.0, 0.0,
       "2 of 2 judged prompts unstable, 1 inconclusive (--fail-on unstable)", false},
      {"max_unique", "--max-unique", scope, 3.0, 2.0,
       "most distinct completions: 3 (prompt queens), limit 2 (--max-unique)", false},
  };
  report.observed = {{{{"tiny-model", 16}, {k_hostile_model, 1}}, {{"fp1", 9}, {"fp2", 8}}}};
  report.warnings = {
      "the endpoint answered as 2 models (tiny-model: 16, " + k_hostile_model +
          ": 1): completions that differ may come from different models, not from batch drift",
      "the endpoint returned as few as 1 candidates at a position where --top-logprobs asked "
      "for 2: gaps there are unknown"};
  return fixture;
}

} // namespace llmrepro::test
