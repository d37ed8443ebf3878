#include <doctest/doctest.h>

#include "core/verdict.hpp"

using namespace llmrepro::core;

namespace {

// An analysis of `prompts` prompts: `unstable` of them unstable, `inconclusive` inconclusive,
// the rest stable; each prompt has two successful completions unless inconclusive.
AuditAnalysis analysis_of(int prompts, int unstable, int inconclusive = 0) {
  AuditAnalysis analysis;
  AuditSummary& s = analysis.summary;
  s.prompts = prompts;
  s.unstable_prompts = unstable;
  s.inconclusive_prompts = inconclusive;
  s.stable_prompts = prompts - unstable - inconclusive;
  s.prompts_with_two_completions = prompts - inconclusive;
  s.requests = prompts * 2;
  for (int i = 0; i < prompts; ++i) {
    PromptAnalysis prompt;
    prompt.id = "q" + std::to_string(i);
    prompt.unique_completions = i < unstable ? 2 : 1;
    prompt.fragile = false;
    analysis.prompts.push_back(prompt);
  }
  return analysis;
}

RunFacts complete_run(std::size_t requests) { return RunFacts{requests, requests, false, ""}; }

Verdict judge_one(const AuditAnalysis& analysis, const GateConfig& gates,
                  RunFacts facts = RunFacts{}) {
  if (facts.planned_requests == 0)
    facts = complete_run(static_cast<std::size_t>(analysis.summary.requests));
  return judge({{0, ProbeKind::sweep, &analysis}}, std::nullopt, gates, facts);
}

const GateResult* gate_named(const Verdict& verdict, const std::string& name) {
  for (const auto& gate : verdict.gates)
    if (gate.name == name) return &gate;
  return nullptr;
}

} // namespace

TEST_CASE("fail-on lists") {
  CHECK(to_string(parse_fail_on("none").value()) == "none");
  CHECK(to_string(parse_fail_on("fragile,unstable").value()) == "unstable,fragile");
  CHECK(parse_fail_on("unstable,fragile,disagree").value().disagree);
  CHECK_FALSE(parse_fail_on("unstable,unstable"));
  CHECK_FALSE(parse_fail_on("unstable,"));
  CHECK_FALSE(parse_fail_on("flaky"));
}

TEST_CASE("no stability gate says so instead of a bare PASS") {
  const auto analysis = analysis_of(48, 27);
  const auto verdict = judge_one(analysis, GateConfig{});
  CHECK(verdict.status == VerdictStatus::pass);
  CHECK_FALSE(verdict.stability_gated);
  CHECK(verdict.headline == "NO STABILITY GATE: 27 of 48 prompts unstable");
  // The failure gate is always there.
  REQUIRE(verdict.gates.size() == 1);
  CHECK(verdict.gates[0].name == "max_failed_rate");
  CHECK(verdict.gates[0].passed);
}

TEST_CASE("fail-on unstable") {
  const auto analysis = analysis_of(10, 3);
  GateConfig gates;
  gates.fail_on.unstable = true;
  const auto verdict = judge_one(analysis, gates);
  CHECK(verdict.status == VerdictStatus::fail);
  const auto* gate = gate_named(verdict, "fail_on_unstable");
  REQUIRE(gate != nullptr);
  CHECK(gate->message == "3 of 10 judged prompts unstable (--fail-on unstable)");
  CHECK(gate->figure == 3);
  CHECK(gate->scope.endpoint == 0);
  CHECK(gate->scope.probe == ProbeKind::sweep);
  CHECK(verdict.headline == "FAIL: 1 of 2 gates failed: 3 of 10 judged prompts unstable "
                            "(--fail-on unstable)");
  CHECK(judge_one(analysis_of(10, 0), gates).headline == "PASS: 2 gates passed");
}

TEST_CASE("missing evidence is an error, never a pass") {
  GateConfig gates;
  gates.fail_on.unstable = true;
  gates.max_unique = 1;
  gates.max_unstable_rate = 0.0;
  gates.max_failed_rate = 1.0;
  SUBCASE("every request failed") {
    auto analysis = analysis_of(2, 0, 2);
    analysis.summary.failed_requests = 4;
    analysis.summary.failure_reasons = {{"HTTP 404: model 'x' not found", 4}};
    const auto verdict = judge_one(analysis, gates);
    CHECK(verdict.status == VerdictStatus::error);
    REQUIRE(verdict.errors.size() == 1);
    CHECK(verdict.errors[0] == "no prompt has two successful completions to compare");
    CHECK(verdict.headline == "ERROR: the audit could not be judged: no prompt has two successful "
                              "completions to compare");
    // No gate passes on nothing.
    for (const auto& gate : verdict.gates)
      if (gate.name != "max_failed_rate") CHECK_FALSE(gate.passed);
    CHECK(gate_named(verdict, "fail_on_unstable")->message ==
          "no prompt could be judged (--fail-on unstable)");
  }
  SUBCASE("planned requests missing") {
    const auto analysis = analysis_of(2, 0);
    const auto verdict = judge_one(analysis, gates, RunFacts{10, 4, false, ""});
    CHECK(verdict.status == VerdictStatus::error);
    CHECK(verdict.errors.at(0) == "incomplete: 4 of 10 planned requests recorded");
  }
  SUBCASE("interrupted") {
    const auto analysis = analysis_of(2, 0);
    const auto verdict = judge_one(analysis, gates, RunFacts{10, 4, true, ""});
    CHECK(verdict.errors.at(0) == "interrupted: 4 of 10 planned requests recorded");
  }
  SUBCASE("the run stopped") {
    const auto analysis = analysis_of(2, 0);
    const auto verdict =
        judge_one(analysis, gates, RunFacts{4, 4, false, "cannot connect to http://x"});
    CHECK(verdict.status == VerdictStatus::error);
    CHECK(verdict.errors.at(0) == "the run stopped: cannot connect to http://x");
  }
}

TEST_CASE("failed requests are a gate") {
  auto analysis = analysis_of(4, 0, 1);
  analysis.summary.failed_requests = 2;
  analysis.summary.failure_reasons = {{"HTTP 503: overloaded", 1}, {"timed out", 1}};
  const auto verdict = judge_one(analysis, GateConfig{});
  CHECK(verdict.status == VerdictStatus::fail);
  const auto* gate = gate_named(verdict, "max_failed_rate");
  REQUIRE(gate != nullptr);
  CHECK(gate->figure == doctest::Approx(0.25));
  CHECK(gate->message == "2 of 8 requests failed after their retries (1 x HTTP 503: overloaded; "
                         "1 x timed out), limit 0.000 (--max-failed-rate)");
  GateConfig relaxed;
  relaxed.max_failed_rate = 0.25;
  CHECK(judge_one(analysis, relaxed).status == VerdictStatus::pass);
}

TEST_CASE("every scope is judged") {
  const auto sweep = analysis_of(4, 0);
  const auto long_probe = analysis_of(4, 1);
  GateConfig gates;
  gates.fail_on.unstable = true;
  const auto verdict =
      judge({{0, ProbeKind::sweep, &sweep}, {0, ProbeKind::long_prompt, &long_probe}}, std::nullopt,
            gates, complete_run(16));
  CHECK(verdict.status == VerdictStatus::fail);
  int failed = 0;
  for (const auto& gate : verdict.gates) {
    if (gate.passed) continue;
    ++failed;
    CHECK(gate.scope.probe == ProbeKind::long_prompt);
    CHECK(gate.message == "endpoint 0, long: 1 of 4 judged prompts unstable (--fail-on unstable)");
  }
  CHECK(failed == 1);
}

TEST_CASE("fail-on fragile fails on unknown fragility") {
  auto analysis = analysis_of(3, 0);
  analysis.prompts[1].fragile.reset();
  analysis.prompts[1].fragility_reason = "no logprobs";
  analysis.summary.fragility_unknown_prompts = 1;
  GateConfig gates;
  gates.fail_on.fragile = true;
  const auto verdict = judge_one(analysis, gates);
  CHECK(verdict.status == VerdictStatus::fail);
  CHECK(gate_named(verdict, "fail_on_fragile")->message ==
        "0 of 3 prompts fragile, 1 of unknown fragility (prompt q1: no logprobs) (--fail-on "
        "fragile)");
}

TEST_CASE("fail-on disagree") {
  const auto analysis = analysis_of(2, 0);
  GateConfig gates;
  gates.fail_on.disagree = true;
  EndpointComparison comparison;
  comparison.prompts = {PromptComparison{"q0", 0, true, {EndpointDivergence{1, true, true, {}}}},
                        PromptComparison{"q1", 1, false, {EndpointDivergence{1, true, false, 3}}}};
  comparison.agreeing_prompts = 1;
  const auto verdict = judge({{0, ProbeKind::sweep, &analysis}, {1, ProbeKind::sweep, &analysis}},
                             comparison, gates, complete_run(8));
  CHECK(verdict.status == VerdictStatus::fail);
  const auto* gate = gate_named(verdict, "fail_on_disagree");
  CHECK(gate->message == "endpoint 1: 1 of 2 prompts have a reference completion other than "
                         "endpoint 0's (or none), first: q1 (--fail-on disagree)");
  CHECK(gate->scope.endpoint == 1);
  CHECK(gate->figure == 1);
  comparison.prompts[1].endpoints[0].agrees = true;
  comparison.prompts[1].all_agree = true;
  CHECK(judge({{0, ProbeKind::sweep, &analysis}}, comparison, gates, complete_run(4)).passed());
  CHECK_FALSE(
      judge({{0, ProbeKind::sweep, &analysis}}, std::nullopt, gates, complete_run(4)).passed());
}

TEST_CASE("max-unique, max-unstable-rate and min-tara") {
  auto analysis = analysis_of(10, 3, 1);
  analysis.prompts[0].unique_completions = 4;
  analysis.summary.tara = 0.9;
  GateConfig gates;
  gates.max_failed_rate = 1.0;
  gates.max_unique = 3;
  auto verdict = judge_one(analysis, gates);
  CHECK(gate_named(verdict, "max_unique")->message ==
        "most distinct completions: 4 (prompt q0), limit 3 (--max-unique)");
  CHECK_FALSE(verdict.passed());
  gates.max_unique = 4;
  CHECK(judge_one(analysis, gates).passed());

  gates = GateConfig{};
  gates.max_unstable_rate = 3.0 / 9.0;
  verdict = judge_one(analysis, gates);
  // Over the 9 judged prompts: the inconclusive one is not counted stable.
  CHECK(gate_named(verdict, "max_unstable_rate")->figure == doctest::Approx(3.0 / 9.0));
  CHECK(verdict.passed());
  gates.max_unstable_rate = 0.3;
  CHECK_FALSE(judge_one(analysis, gates).passed());

  gates = GateConfig{};
  gates.min_tara = 0.8;
  CHECK(judge_one(analysis, gates).passed());
  gates.min_tara = 0.95;
  CHECK_FALSE(judge_one(analysis, gates).passed());
}

TEST_CASE("max-logprob-drift") {
  // Three stable prompts whose logprobs moved by 0, 0.25 and 0.125 nats over 6 positions each.
  auto analysis = analysis_of(3, 0);
  const double drifts[] = {0.0, 0.25, 0.125};
  for (std::size_t i = 0; i < 3; ++i) {
    analysis.prompts[i].status = PromptStatus::stable;
    analysis.prompts[i].logprob_drift = LogprobDrift{drifts[i], drifts[i] / 2, 6};
  }
  analysis.summary.max_logprob_drift = 0.25;
  GateConfig gates;
  gates.max_logprob_drift = 0.25;
  CHECK(gates.stability_gated());

  auto verdict = judge_one(analysis, gates);
  const auto* gate = gate_named(verdict, "max_logprob_drift");
  REQUIRE(gate != nullptr);
  CHECK(gate->flag == "--max-logprob-drift");
  CHECK(gate->figure == 0.25);
  CHECK(gate->limit == 0.25);
  CHECK(gate->scope.endpoint == 0);
  CHECK(gate->scope.probe == ProbeKind::sweep);
  CHECK(gate->message ==
        "largest logprob drift 0.25 nats (prompt q1), limit 0.25 (--max-logprob-drift)");
  CHECK(gate->passed);
  CHECK(verdict.headline == "PASS: 2 gates passed");

  SUBCASE("a drift above the limit fails") {
    gates.max_logprob_drift = 0.2;
    verdict = judge_one(analysis, gates);
    CHECK(verdict.status == VerdictStatus::fail);
    CHECK(verdict.headline == "FAIL: 1 of 2 gates failed: largest logprob drift 0.25 nats "
                              "(prompt q1), limit 0.2 (--max-logprob-drift)");
  }
  SUBCASE("0 demands bit-identical logprobs") {
    gates.max_logprob_drift = 0.0;
    CHECK_FALSE(judge_one(analysis, gates).passed());
    analysis.prompts[1].logprob_drift.max_abs = 0.0;
    analysis.prompts[2].logprob_drift.max_abs = 0.0;
    analysis.summary.max_logprob_drift = 0.0;
    verdict = judge_one(analysis, gates);
    CHECK(verdict.passed());
    CHECK(gate_named(verdict, "max_logprob_drift")->figure == 0.0);
    CHECK(gate_named(verdict, "max_logprob_drift")->message ==
          "largest logprob drift 0 nats (prompt q0), limit 0 (--max-logprob-drift)");
  }
  SUBCASE("tiny drift keeps its significant digits") {
    gates.max_logprob_drift = 0.0;
    analysis.prompts[1].logprob_drift.max_abs = 1.5e-06;
    analysis.summary.max_logprob_drift = 1.5e-06;
    CHECK(gate_named(judge_one(analysis, gates), "max_logprob_drift")->message ==
          "largest logprob drift 1.5e-06 nats (prompt q1), limit 0 (--max-logprob-drift)");
  }
  SUBCASE("no compared logprob fails, never passes on nothing") {
    analysis.summary.max_logprob_drift.reset();
    verdict = judge_one(analysis, gates);
    CHECK(verdict.status == VerdictStatus::fail);
    gate = gate_named(verdict, "max_logprob_drift");
    REQUIRE(gate != nullptr);
    CHECK_FALSE(gate->passed);
    CHECK_FALSE(gate->figure.has_value());
    CHECK(gate->message == "no logprobs were compared, limit 0.25 (--max-logprob-drift)");
  }
  SUBCASE("every scope is judged") {
    auto long_probe = analysis;
    long_probe.summary.max_logprob_drift = 0.5;
    long_probe.prompts[2].logprob_drift.max_abs = 0.5;
    verdict = judge({{0, ProbeKind::sweep, &analysis}, {1, ProbeKind::long_prompt, &long_probe}},
                    std::nullopt, gates, complete_run(12));
    int judged = 0;
    for (const auto& result : verdict.gates) {
      if (result.name != "max_logprob_drift") continue;
      ++judged;
      if (result.scope.endpoint == 1) {
        CHECK_FALSE(result.passed);
        CHECK(result.figure == 0.5);
        CHECK(result.message == "endpoint 1, long: largest logprob drift 0.5 nats (prompt q2), "
                                "limit 0.25 (--max-logprob-drift)");
      } else {
        CHECK(result.passed);
      }
    }
    CHECK(judged == 2);
  }
}
