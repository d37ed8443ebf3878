// Distribution mode's shared wording (report/detail/distribution_text.hpp): the summary line
// with the tests between endpoints beside the level tests, the endpoints a prompt shifted on, and
// the rows shown first.
#include <doctest/doctest.h>

#include <string>

#include "core/audit_report.hpp"
#include "report/detail/distribution_text.hpp"

namespace {

// Endpoint 0's prompts a (one answer), b (shifted at c=8) and c (shifted on endpoint 1), each
// with 10 runs; with `compared`, endpoint 1 compared on all three.
llmrepro::core::AuditReport distribution_report(bool compared) {
  using namespace llmrepro::core;
  AuditReport report;
  const char* ids[] = {"a", "b", "c"};
  const double shares[] = {1.0, 0.6, 0.8};
  for (int i = 0; i < 3; ++i) {
    PromptAnalysis prompt;
    prompt.id = ids[i];
    prompt.prompt_index = i;
    prompt.answers = {{"A", static_cast<int>(shares[i] * 10)}};
    if (i > 0) prompt.answers.push_back({"B", 10 - prompt.answers[0].second});
    prompt.modal = modal_share({prompt.answers.begin(), prompt.answers.end()}, 10);
    prompt.by_concurrency.resize(2);
    prompt.by_concurrency[1].concurrency = 8;
    if (i == 1) {
      prompt.by_concurrency[1].shifted = true;
      prompt.by_concurrency[1].shift_p_adjusted = 0.004;
      prompt.shifted = true;
    }
    report.analysis.prompts.push_back(prompt);
  }
  report.analysis.summary.prompts = 3;
  report.analysis.summary.shifted_prompts = 1;
  report.analysis.summary.shift_tests = 5;
  if (!compared) return report;
  EndpointComparison comparison;
  for (int i = 0; i < 3; ++i) {
    PromptComparison row;
    row.id = ids[i];
    row.prompt_index = i;
    EndpointDivergence other;
    other.endpoint_index = 1;
    if (i == 2) {
      other.shifted = true;
      other.shift_p_adjusted = 2.3e-08;
      row.shifted = true;
    }
    row.endpoints.push_back(other);
    comparison.prompts.push_back(row);
  }
  comparison.shifted_prompts = 1;
  comparison.shift_tests = 5;
  report.comparison = comparison;
  return report;
}

} // namespace

TEST_CASE("distribution_text: tests between endpoints beside the level tests") {
  using llmrepro::report::distribution_rows;
  using llmrepro::report::distribution_summary_line;
  using llmrepro::report::shifted_endpoints_text;
  using llmrepro::report::shifted_levels_text;

  const auto alone = distribution_report(false);
  CHECK(distribution_summary_line(alone) ==
        "3 prompts: 1 with one answer, lowest modal share 0.60 (b); 1 shifted between levels "
        "(Holm over 5 tests, family-wise 0.05)");
  CHECK(shifted_endpoints_text(alone, alone.analysis.prompts[2]) == "\u2013");
  auto rows = distribution_rows(alone, 3);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]->id == "b"); // shifted first, then the lowest modal share
  CHECK(rows[1]->id == "c");

  const auto compared = distribution_report(true);
  CHECK(distribution_summary_line(compared) ==
        "3 prompts: 1 with one answer, lowest modal share 0.60 (b); 1 shifted between levels, 1 "
        "between endpoints (Holm over 5 tests, family-wise 0.05)");
  CHECK(shifted_levels_text(compared.analysis.prompts[1]) == "c=8 (p 0.004)");
  CHECK(shifted_endpoints_text(compared, compared.analysis.prompts[2]) == "endpoint 1 (p 2.3e-08)");
  CHECK(shifted_endpoints_text(compared, compared.analysis.prompts[1]) == "\u2013");
  rows = distribution_rows(compared, 2);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]->id == "b"); // both shifted: the lower modal share first
  CHECK(rows[1]->id == "c"); // shifted between endpoints only, ahead of the unshifted a
}
