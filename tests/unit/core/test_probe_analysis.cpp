#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "core/audit_report.hpp"
#include "core/probe_analysis.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::numbered_suite;

namespace {

Completion completion_of(std::initializer_list<const char*> tokens) {
  Completion completion;
  completion.has_logprobs = true;
  for (const char* text : tokens) {
    TokenLogprob token;
    token.token = text;
    token.logprob = -0.1;
    token.top = {{text, -0.1}, {"alt", -1.1}};
    completion.text += text;
    completion.tokens.push_back(token);
  }
  return completion;
}

RequestRecord record_of(int endpoint, int prompt, int concurrency, ProbeKind probe, int repeat,
                        const Completion& completion) {
  RequestRecord record;
  record.planned = {endpoint, prompt, concurrency, probe, repeat};
  record.outcome.ok = true;
  record.outcome.attempts = 1;
  record.outcome.completion = completion;
  return record;
}

} // namespace

TEST_CASE("AuditReportBuilder probe kinds") {
  AuditData data;
  data.suite = numbered_suite(2);
  data.config.plan.probes = {ProbeKind::sweep, ProbeKind::prefix};
  data.endpoints = {{"http://127.0.0.1:1", "openai-chat", "m", false, {}},
                    {"http://127.0.0.1:2", "openai-chat", "m", false, {}}};
  auto& records = data.records;
  const auto a = completion_of({"A", " b", " c"});
  const auto b = completion_of({"A", " b", " d"});
  const auto x = completion_of({"X"});
  // Sweep: both prompts stable.
  for (int r = 0; r < 3; ++r) {
    records.push_back(record_of(0, 0, 1, ProbeKind::sweep, r, a));
    records.push_back(record_of(0, 1, 8, ProbeKind::sweep, r, x));
  }
  // Prefix: p0 cold (even repeats) gives a, warm (odd) gives b twice and a once;
  // p1 gives x cold and warm.
  records.push_back(record_of(0, 0, 1, ProbeKind::prefix, 0, a));
  records.push_back(record_of(0, 0, 1, ProbeKind::prefix, 1, b));
  records.push_back(record_of(0, 0, 1, ProbeKind::prefix, 2, a));
  records.push_back(record_of(0, 0, 1, ProbeKind::prefix, 3, b));
  records.push_back(record_of(0, 0, 1, ProbeKind::prefix, 4, a));
  records.push_back(record_of(0, 0, 1, ProbeKind::prefix, 5, a));
  records.push_back(record_of(0, 1, 1, ProbeKind::prefix, 0, x));
  records.push_back(record_of(0, 1, 1, ProbeKind::prefix, 1, x));
  // Another endpoint's prefix records never count for endpoint 0.
  records.push_back(record_of(1, 1, 1, ProbeKind::prefix, 1, a));

  const AuditReport report = make_audit_report(data, ToolInfo{});
  const auto& probes = report.probes;
  REQUIRE(probes.size() == 2);

  SUBCASE("the sweep is not mixed with the prefix probe") {
    const AuditSummary& sweep = probes[0].analysis.summary;
    CHECK(probes[0].probe == ProbeKind::sweep);
    CHECK(sweep.requests == 6);
    CHECK(sweep.unstable_prompts == 0);
    CHECK(sweep.tarr == 1.0);
    CHECK(probes[0].prefix.empty());
  }
  SUBCASE("the prefix probe separates warm from cold") {
    const ProbeAnalysis& prefix = probes[1];
    CHECK(prefix.analysis.summary.requests == 8);
    CHECK(prefix.analysis.summary.unstable_prompts == 1);
    REQUIRE(prefix.prefix.size() == 2);
    const PrefixPromptDrift& p0 = prefix.prefix[0];
    CHECK(p0.id == "p0");
    CHECK(p0.cold_runs == 3);
    CHECK(p0.warm_runs == 3);
    CHECK(p0.cold_unique == 1);
    CHECK(p0.warm_unique == 2);
    CHECK(p0.drift);
    REQUIRE(p0.divergence);
    CHECK(*p0.divergence == 2);
    const PrefixPromptDrift& p1 = prefix.prefix[1];
    CHECK(p1.cold_runs == 1);
    CHECK(p1.warm_runs == 1);
    CHECK_FALSE(p1.drift);
    CHECK_FALSE(p1.divergence);
    CHECK(prefix.prefix_drift_prompts == 1);
  }
}

TEST_CASE("primary_probe") {
  CHECK(primary_probe({}) == ProbeKind::sweep);
  CHECK(primary_probe({ProbeKind::prefix, ProbeKind::sweep}) == ProbeKind::sweep);
  CHECK(primary_probe({ProbeKind::long_prompt, ProbeKind::prefix}) == ProbeKind::long_prompt);
}

TEST_CASE("compare_endpoints") {
  const Suite suite = numbered_suite(3);
  const auto a = completion_of({"A", " b", " c"});
  const auto b = completion_of({"A", " b", " d"});
  const auto x = completion_of({"X"});
  std::vector<RequestRecord> records;
  for (int r = 0; r < 2; ++r) {
    // p0 agrees everywhere; p1 differs at endpoint 2 after 2 tokens; p2 never ran at endpoint 1.
    for (int e = 0; e < 3; ++e) records.push_back(record_of(e, 0, 1, ProbeKind::sweep, r, x));
    records.push_back(record_of(0, 1, 1, ProbeKind::sweep, r, a));
    records.push_back(record_of(1, 1, 1, ProbeKind::sweep, r, a));
    records.push_back(record_of(2, 1, 1, ProbeKind::sweep, r, b));
    records.push_back(record_of(0, 2, 1, ProbeKind::sweep, r, a));
    records.push_back(record_of(2, 2, 1, ProbeKind::sweep, r, a));
  }
  std::vector<AuditAnalysis> per_endpoint;
  for (int e = 0; e < 3; ++e)
    per_endpoint.push_back(analyse(suite, records, {}, e, ProbeKind::sweep));
  const EndpointComparison comparison = compare_endpoints(per_endpoint);
  REQUIRE(comparison.prompts.size() == 3);
  CHECK(comparison.agreeing_prompts == 1);

  const PromptComparison& p0 = comparison.prompts[0];
  CHECK(p0.all_agree);
  REQUIRE(p0.endpoints.size() == 2);
  CHECK(p0.endpoints[0].endpoint_index == 1);
  CHECK(p0.endpoints[0].agrees);
  CHECK(p0.endpoints[1].agrees);

  const PromptComparison& p1 = comparison.prompts[1];
  CHECK_FALSE(p1.all_agree);
  CHECK(p1.endpoints[0].agrees);
  CHECK_FALSE(p1.endpoints[1].agrees);
  REQUIRE(p1.endpoints[1].first_difference);
  CHECK(*p1.endpoints[1].first_difference == 2);

  const PromptComparison& p2 = comparison.prompts[2];
  CHECK_FALSE(p2.all_agree);
  CHECK_FALSE(p2.endpoints[0].has_reference);
  CHECK_FALSE(p2.endpoints[0].agrees);
  CHECK_FALSE(p2.endpoints[0].first_difference);
  CHECK(p2.endpoints[1].agrees);
}
