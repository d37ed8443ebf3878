#include <doctest/doctest.h>

#include "core/verdict.hpp"

using namespace llmrepro::core;

TEST_CASE("judge") {
  AuditAnalysis analysis;
  analysis.summary.prompts = 10;
  analysis.summary.unstable_prompts = 3;
  analysis.summary.fragile_prompts = 0;
  PromptAnalysis worst;
  worst.id = "q7";
  worst.unique_completions = 4;
  analysis.prompts.push_back(worst);

  SUBCASE("no gates pass") { CHECK(judge(analysis, GateConfig{}, std::nullopt).passed); }
  SUBCASE("fail-on unstable") {
    const auto verdict = judge(analysis, GateConfig{.fail_on = FailOn::unstable}, std::nullopt);
    CHECK_FALSE(verdict.passed);
    REQUIRE(verdict.gates.size() == 1);
    CHECK(verdict.gates[0].message == "3 of 10 prompts unstable (--fail-on unstable)");
  }
  SUBCASE("fail-on fragile passes with no fragile prompt") {
    CHECK(judge(analysis, GateConfig{.fail_on = FailOn::fragile}, std::nullopt).passed);
  }
  SUBCASE("max-unique names the worst prompt") {
    GateConfig gates;
    gates.max_unique = 3;
    const auto verdict = judge(analysis, gates, std::nullopt);
    CHECK_FALSE(verdict.passed);
    CHECK(verdict.gates[0].message == "most distinct completions: 4 (prompt q7), limit 3 (--max-unique)");
    gates.max_unique = 4;
    CHECK(judge(analysis, gates, std::nullopt).passed);
  }
  SUBCASE("max-unstable-rate") {
    GateConfig gates;
    gates.max_unstable_rate = 0.3;
    CHECK(judge(analysis, gates, std::nullopt).passed);
    gates.max_unstable_rate = 0.29;
    CHECK_FALSE(judge(analysis, gates, std::nullopt).passed);
  }
  SUBCASE("min-tara") {
    GateConfig gates;
    gates.min_tara = 0.8;
    CHECK(judge(analysis, gates, 0.9).passed);
    CHECK_FALSE(judge(analysis, gates, 0.7).passed);
    CHECK_FALSE(judge(analysis, gates, std::nullopt).passed);
  }
}
