// A hand-built AuditReport with known values for the JSON and terminal renderers: every field is
// set by hand, so the tests check the renderers alone, not the analysis.
// Prompt "queens" diverges at token 102, "stable" is stable but fragile, "hostile" carries
// terminal escapes and invalid UTF-8 in its id and completion.
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

inline std::unique_ptr<ReportFixture> make_report_fixture() {
  auto fixture = std::make_unique<ReportFixture>();
  core::AuditData& data = fixture->data;
  data.info = {"audit-1700000000123", 1700000000123, 1700000060456, "complete"};
  data.config.model = "tiny";
  data.config.runs = 3;
  data.config.levels = {1, 8};
  data.config.gates.fail_on = core::FailOn::unstable;
  data.config.gates.max_unique = 2;
  data.config.seed = 42;
  data.config.shard_index = 0;
  data.config.shard_count = 2;
  data.endpoints = {{"http://127.0.0.1:8000", "openai-chat", "tiny-model", false, {"fp1", "fp2"}}};
  data.suite.source = "suite.jsonl";
  for (const std::string& id : {std::string("queens"), std::string("stable"), k_hostile_prompt_id}) {
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
  summary.unstable_prompts = 2;
  summary.fragile_prompts = 2;
  summary.prompts_without_logprobs = 1;
  summary.tarr = 1.0 / 3.0;
  summary.predictor = {1, 1, 1, 0, 0.5, std::nullopt};
  summary.by_concurrency = {{1, 9, 3, 0, 0, 812.5, 20.25},
                            {8, 8, 5, 2, 1, std::numeric_limits<double>::infinity(), 95.0}};

  core::PromptAnalysis queens;
  queens.id = "queens";
  queens.prompt_index = 0;
  queens.runs = 6;
  queens.unique_completions = 3;
  queens.first_divergence = 102;
  queens.gap_at_divergence = 0.0123456789012345678;
  queens.min_gap = 0.0123456789012345678;
  queens.min_gap_position = 102;
  queens.fragile = true;
  queens.unstable = true;
  queens.has_logprobs = true;
  queens.candidates_at_divergence = {{" Queens", -0.6931471805599453}, {" Manhattan", -0.7054}};
  queens.by_concurrency = {{1, 3, 0, 1, std::nullopt}, {8, 3, 0, 3, 102}};
  core::DistinctCompletion reference;
  reference.text = "Born in Queens";
  reference.tokens = {{"Born", -0.01, {{"Born", -0.01}, {"Raised", -4.5}}}};
  reference.count = 4;
  reference.count_by_concurrency = {{1, 3}, {8, 1}};
  reference.is_reference = true;
  core::DistinctCompletion variant;
  variant.text = "Born in Manhattan";
  variant.count = 2;
  variant.count_by_concurrency = {{8, 2}};
  variant.divergence = 102;
  queens.completions = {reference, variant};

  core::PromptAnalysis stable;
  stable.id = "stable";
  stable.prompt_index = 1;
  stable.runs = 5;
  stable.failed = 1;
  stable.unique_completions = 1;
  stable.min_gap = 0.01;
  stable.min_gap_position = 7;
  stable.fragile = true;
  stable.has_logprobs = true;
  stable.passes = 5;
  stable.checked_runs = 6;
  stable.answers = {{"42", 5}};
  stable.answers_agree = false;
  stable.by_concurrency = {{1, 3, 0, 1, std::nullopt}, {8, 2, 1, 1, std::nullopt}};

  core::PromptAnalysis hostile;
  hostile.id = k_hostile_prompt_id;
  hostile.prompt_index = 2;
  hostile.runs = 6;
  hostile.unique_completions = 2;
  hostile.first_divergence = 0;
  hostile.unstable = true;
  hostile.has_logprobs = false;
  hostile.candidates_at_divergence = {{k_hostile_token, -1.0}, {"\u202egnp.exe", -1.5}};
  core::DistinctCompletion hostile_text;
  hostile_text.text = k_hostile_token;
  hostile_text.count = 6;
  hostile_text.is_reference = true;
  hostile.completions = {hostile_text};

  report.analysis.prompts = {queens, stable, hostile};
  report.verdict.passed = false;
  report.verdict.gates = {
      {"fail_on", "2 of 3 prompts unstable (fail_on unstable)", false},
      {"max_unique", "prompt 'queens' has 3 distinct completions, more than 2", false},
  };
  return fixture;
}

} // namespace llmrepro::test
