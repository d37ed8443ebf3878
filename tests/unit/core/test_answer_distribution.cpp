// Distribution mode: modal shares, the shift test between levels and between endpoints with Holm
// over the audit, the gates, and seeded simulations of the test's family-wise error rate, on
// endpoints that meet its assumption (independent draws from one distribution at every level and
// on every endpoint) and on ones that break it (runs that repeat the previous answer).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/answer_distribution.hpp"
#include "core/probe_analysis.hpp"
#include "core/random.hpp"
#include "core/verdict.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::failed_record;
using llmrepro::testing::numbered_suite;
using llmrepro::testing::ok_record;

namespace {

Completion answer_completion(const std::string& answer) {
  Completion completion;
  completion.text = answer;
  return completion;
}

// Records of prompt `prompt` at `level`: one run per answer, repeats numbered from 0.
void add_answer_runs(std::vector<RequestRecord>& records, int prompt, int level,
                     const std::vector<std::string>& answers) {
  for (std::size_t r = 0; r < answers.size(); ++r)
    records.push_back(ok_record(prompt, level, static_cast<int>(r), answer_completion(answers[r])));
}

} // namespace

TEST_CASE("modal_share: failures count against the modal answer; ties go to the first") {
  const ModalShare modal = modal_share({{"Paris", 3}, {"Lyon", 1}}, 5);
  CHECK(modal.answer == "Paris");
  CHECK(modal.count == 3);
  CHECK(modal.runs == 5);
  CHECK(modal.share == doctest::Approx(0.6));
  const Interval wilson = wilson_interval(3, 5);
  CHECK(modal.interval.low == wilson.low);
  CHECK(modal.interval.high == wilson.high);
  CHECK(modal_share({{"b", 2}, {"a", 2}}, 4).answer == "a");
  const ModalShare none = modal_share({}, 3);
  CHECK(none.count == 0);
  CHECK(none.share == 0.0);
}

TEST_CASE("shift_test: Fisher's exact test of the pooled modal answer's share") {
  // 5 of 5 against 0 of 5: p = 2 / C(10, 5) = 0.00794.
  const ShiftTest apart = shift_test({{"A", 5}}, {{"B", 5}});
  CHECK(apart.answer == "A");
  CHECK(apart.a_count == 5);
  CHECK(apart.b_count == 0);
  CHECK(apart.p == doctest::Approx(2.0 / 252.0));
  // The same counts either way round.
  CHECK(shift_test({{"B", 5}}, {{"A", 5}}).p == doctest::Approx(apart.p));
  CHECK(shift_test({{"A", 3}, {"B", 2}}, {{"A", 3}, {"B", 2}}).p == doctest::Approx(1.0));
  CHECK(shift_test({}, {{"A", 3}}).p == 1.0);
  CHECK(answer_distance({{"A", 5}}, {{"B", 5}}) == doctest::Approx(1.0));
  CHECK(answer_distance({{"A", 2}, {"B", 2}}, {{"A", 3}, {"B", 1}}) == doctest::Approx(0.25));
}

TEST_CASE("analyse: each level against the lowest, Holm over the tests that can reject") {
  std::vector<RequestRecord> records;
  add_answer_runs(records, 0, 1, {"A", "A", "A", "A", "A"});
  add_answer_runs(records, 0, 8, {"B", "B", "B", "B", "B"});
  // One answer at both levels: the test can never reject and stays out of the family.
  add_answer_runs(records, 1, 1, {"A", "A", "A"});
  add_answer_runs(records, 1, 8, {"A", "A", "A"});
  // A failure counts against the modal share, never for it.
  add_answer_runs(records, 2, 1, {"X", "Y"});
  records.push_back(failed_record(2, 1, 2, "HTTP 500 after 4 attempts", 4));
  add_answer_runs(records, 2, 8, {"X", "X", "Y"});
  const AuditAnalysis analysis = analyse(numbered_suite(3), records, AnalysisConfig{});
  REQUIRE(analysis.prompts.size() == 3);

  const PromptAnalysis& p0 = analysis.prompts[0];
  CHECK(p0.modal.answer == "A");
  CHECK(p0.modal.share == doctest::Approx(0.5));
  REQUIRE(p0.by_concurrency.size() == 2);
  CHECK_FALSE(p0.by_concurrency[0].shift.has_value());
  REQUIRE(p0.by_concurrency[1].shift.has_value());
  CHECK(p0.by_concurrency[1].shift->p == doctest::Approx(2.0 / 252.0));
  // Two tests in the family (p0 and p2): Holm doubles the smallest.
  REQUIRE(p0.by_concurrency[1].shift_p_adjusted.has_value());
  CHECK(*p0.by_concurrency[1].shift_p_adjusted == doctest::Approx(4.0 / 252.0));
  CHECK(p0.by_concurrency[1].shifted);
  CHECK(p0.shifted);
  CHECK(p0.by_concurrency[1].answer_distance_from_serial == doctest::Approx(1.0));

  const PromptAnalysis& p1 = analysis.prompts[1];
  CHECK_FALSE(p1.by_concurrency[1].shift_p_adjusted.has_value());
  CHECK_FALSE(p1.shifted);
  CHECK(p1.modal.share == 1.0);

  const PromptAnalysis& p2 = analysis.prompts[2];
  CHECK(p2.modal.answer == "X");
  CHECK(p2.modal.runs == 6);
  CHECK(p2.modal.share == doctest::Approx(3.0 / 6.0));
  CHECK(p2.by_concurrency[0].modal.runs == 3);
  CHECK_FALSE(p2.shifted);

  CHECK(analysis.summary.shift_tests == 2);
  CHECK(analysis.summary.shifted_prompts == 1);
  CHECK(analysis.summary.min_modal_share == doctest::Approx(0.5));

  SUBCASE("the gates") {
    GateConfig gates;
    gates.fail_on.shift = true;
    gates.min_modal_share = 0.6;
    RunFacts facts;
    facts.planned_requests = facts.recorded_requests = records.size();
    facts.distribution = true;
    const Verdict verdict = judge({{0, ProbeKind::sweep, &analysis}}, std::nullopt, gates, facts);
    CHECK(verdict.status == VerdictStatus::fail);
    const GateResult* shift = nullptr;
    const GateResult* modal = nullptr;
    for (const auto& gate : verdict.gates) {
      if (gate.name == "fail_on_shift") shift = &gate;
      if (gate.name == "min_modal_share") modal = &gate;
    }
    REQUIRE(shift != nullptr);
    CHECK_FALSE(shift->passed);
    CHECK(shift->message == "1 of 3 prompts with an answer distribution that shifted between "
                            "levels (2 tests, family-wise 0.050), most of all p0 at c=8 "
                            "(--fail-on shift)");
    REQUIRE(modal != nullptr);
    CHECK_FALSE(modal->passed);
    CHECK(modal->message == "2 of 3 prompts below modal share 0.600, lowest 0.500 (prompt p0) "
                            "(--min-modal-share)");
  }
}

namespace {

// Records of `endpoint` at `level` for prompt `prompt`: one run per answer, repeats from 0.
void add_endpoint_answer_runs(std::vector<RequestRecord>& records, int endpoint, int prompt,
                              int level, const std::vector<std::string>& answers) {
  const std::size_t first = records.size();
  add_answer_runs(records, prompt, level, answers);
  for (std::size_t i = first; i < records.size(); ++i) records[i].planned.endpoint_index = endpoint;
}

// Each endpoint's analysis of `records`, their comparison, and the audit's one family judged as
// the report does (core::AuditReportBuilder): every level test and every endpoint test.
struct JudgedEndpoints {
  std::vector<AuditAnalysis> analyses;
  EndpointComparison comparison;

  JudgedEndpoints(const Suite& suite, const std::vector<RequestRecord>& records, int endpoints) {
    for (int e = 0; e < endpoints; ++e)
      analyses.push_back(analyse(suite, records, AnalysisConfig{}, e));
    comparison = compare_endpoints(analyses);
    std::vector<AuditAnalysis*> scopes;
    for (auto& analysis : analyses) scopes.push_back(&analysis);
    judge_shifts(scopes, &comparison);
  }

  // The verdict under --fail-on shift over every endpoint's scope.
  Verdict verdict(std::size_t requests) const {
    std::vector<JudgedScope> scopes;
    for (const auto& analysis : analyses)
      scopes.push_back({analysis.endpoint_index, ProbeKind::sweep, &analysis});
    GateConfig gates;
    gates.fail_on.shift = true;
    RunFacts facts;
    facts.planned_requests = facts.recorded_requests = requests;
    facts.distribution = true;
    return judge(scopes, comparison, gates, facts);
  }
};

} // namespace

TEST_CASE("compare_endpoints: each endpoint's answers against endpoint 0's, one family with the "
          "level tests") {
  std::vector<RequestRecord> records;
  for (const int level : {1, 8}) {
    // p0: endpoint 1 answers B where endpoint 0 answers A.
    add_endpoint_answer_runs(records, 0, 0, level, {"A", "A", "A", "A", "A"});
    add_endpoint_answer_runs(records, 1, 0, level, {"B", "B", "B", "B", "B"});
    // p1: X 8 of 10 against 4 of 10, within chance.
    add_endpoint_answer_runs(records, 0, 1, level, {"X", "X", "X", "X", "Y"});
    add_endpoint_answer_runs(records, 1, 1, level, {"X", "X", "Y", "Y", "Y"});
    // p2: one answer everywhere; no test can reject.
    add_endpoint_answer_runs(records, 0, 2, level, {"A", "A", "A"});
    add_endpoint_answer_runs(records, 1, 2, level, {"A", "A", "A"});
  }
  // p3: both endpoints shift between levels alike (C at c=1, D at c=8).
  for (int e = 0; e < 2; ++e) {
    add_endpoint_answer_runs(records, e, 3, 1, {"C", "C", "C", "C", "C"});
    add_endpoint_answer_runs(records, e, 3, 8, {"D", "D", "D", "D", "D"});
  }
  const JudgedEndpoints judged(numbered_suite(4), records, 2);
  const EndpointComparison& comparison = judged.comparison;
  REQUIRE(comparison.prompts.size() == 4);

  // p0: A 10 of 10 against 0 of 10 (A and B tie over both; A sorts first): 2 / C(20, 10).
  const EndpointDivergence& p0 = comparison.prompts[0].endpoints.at(0);
  REQUIRE(p0.shift.has_value());
  CHECK(p0.shift->answer == "A");
  CHECK((p0.shift->a_count == 10 && p0.shift->a_answers == 10));
  CHECK((p0.shift->b_count == 0 && p0.shift->b_answers == 10));
  CHECK(p0.shift->p == doctest::Approx(2.0 / 184756.0));
  CHECK(p0.answer_distance == doctest::Approx(1.0));
  // p1: X 8 of 10 against 4 of 10 (12 of 20 pooled): the tables as or less likely than the one
  // seen sum to 21390 / C(20, 12) = 21390 / 125970.
  const EndpointDivergence& p1 = comparison.prompts[1].endpoints.at(0);
  REQUIRE(p1.shift.has_value());
  CHECK(p1.shift->answer == "X");
  CHECK(p1.shift->p == doctest::Approx(21390.0 / 125970.0));
  CHECK(p1.answer_distance == doctest::Approx(0.4));
  const EndpointDivergence& p2 = comparison.prompts[2].endpoints.at(0);
  REQUIRE(p2.shift.has_value());
  CHECK(p2.shift->p == 1.0);
  CHECK_FALSE(p2.shift_p_adjusted.has_value()); // one pooled answer: out of the family
  const EndpointDivergence& p3 = comparison.prompts[3].endpoints.at(0);
  CHECK(p3.shift->p == doctest::Approx(1.0)); // C 5 of 10 on each endpoint

  // The family: 3 endpoint tests (p0, p1, p3) and 4 level tests (p1 and p3, each endpoint).
  // Holm, ascending: p0 x 7; p3's two level tests 2 / C(10, 5) x 6 and x 5, monotone: both
  // 12 / 252; p1's endpoint test x 4; the rest 1.
  CHECK(comparison.shift_tests == 7);
  REQUIRE(p0.shift_p_adjusted.has_value());
  CHECK(*p0.shift_p_adjusted == doctest::Approx(14.0 / 184756.0));
  CHECK(p0.shifted);
  CHECK(*p1.shift_p_adjusted == doctest::Approx(4.0 * 21390.0 / 125970.0));
  CHECK_FALSE(p1.shifted);
  CHECK(*p3.shift_p_adjusted == doctest::Approx(1.0));
  CHECK(comparison.prompts[0].shifted);
  CHECK_FALSE(comparison.prompts[1].shifted);
  CHECK(comparison.shifted_prompts == 1);
  for (const AuditAnalysis& analysis : judged.analyses) {
    CHECK(analysis.summary.shift_tests == 7);
    CHECK(analysis.summary.shifted_prompts == 1);
    const LevelAnalysis& p3_level = analysis.prompts[3].by_concurrency.at(1);
    REQUIRE(p3_level.shift_p_adjusted.has_value());
    CHECK(*p3_level.shift_p_adjusted == doctest::Approx(12.0 / 252.0));
    CHECK(p3_level.shifted);
    CHECK(*analysis.prompts[1].by_concurrency.at(1).shift_p_adjusted == doctest::Approx(1.0));
    CHECK_FALSE(analysis.prompts[0].shifted); // no level test: one answer per endpoint
  }

  const Verdict verdict = judged.verdict(records.size());
  CHECK(verdict.status == VerdictStatus::fail);
  std::vector<const GateResult*> shift_gates;
  for (const auto& gate : verdict.gates)
    if (gate.flag == "--fail-on shift") shift_gates.push_back(&gate);
  REQUIRE(shift_gates.size() == 3);
  CHECK(shift_gates[0]->name == "fail_on_shift");
  CHECK(shift_gates[0]->message ==
        "endpoint 0, sweep: 1 of 4 prompts with an answer distribution that shifted between "
        "levels (7 tests, family-wise 0.050), most of all p3 at c=8 (--fail-on shift)");
  CHECK(shift_gates[2]->name == "fail_on_endpoint_shift");
  CHECK(shift_gates[2]->scope.endpoint == 1);
  CHECK(shift_gates[2]->figure == 1.0);
  CHECK_FALSE(shift_gates[2]->passed);
  CHECK(shift_gates[2]->message ==
        "endpoint 1: 1 of 4 prompts with an answer distribution that shifted from endpoint 0's "
        "(7 tests, family-wise 0.050), most of all p0 (--fail-on shift)");

  SUBCASE("no answer on both endpoints: no test, and the gate has no evidence") {
    std::vector<RequestRecord> only_first;
    add_endpoint_answer_runs(only_first, 0, 0, 1, {"A", "B"});
    add_endpoint_answer_runs(only_first, 0, 0, 8, {"A", "B"});
    only_first.push_back(failed_record(0, 1, 0));
    only_first.back().planned.endpoint_index = 1;
    const JudgedEndpoints lone(numbered_suite(1), only_first, 2);
    CHECK_FALSE(lone.comparison.prompts.at(0).endpoints.at(0).shift.has_value());
    const Verdict unjudged = lone.verdict(only_first.size());
    const GateResult& gate = unjudged.gates.back();
    CHECK(gate.name == "fail_on_endpoint_shift");
    CHECK_FALSE(gate.passed);
    CHECK(gate.message ==
          "endpoint 1: no prompt had answers on both endpoints to compare (--fail-on shift)");
  }
}

namespace {

// One simulated audit: `prompts` prompts, levels 1 and 8, `runs` runs each on each of
// `endpoints` endpoints, every prompt's answers drawn from its own distribution of 1 to 4 answers
// with random weights, the same at both levels and on every endpoint (no shift exists).
// `repeat_previous`: the chance a run repeats the answer of the run before it at its level
// instead of drawing afresh, an endpoint whose runs are not independent. One endpoint draws
// exactly what it drew before endpoints were simulated.
std::vector<RequestRecord> simulated_answer_records(SplitMix64& random, int prompts, int runs,
                                                    double repeat_previous, int endpoints) {
  std::vector<RequestRecord> records;
  for (int p = 0; p < prompts; ++p) {
    const int kinds = 1 + static_cast<int>(random.below(4));
    std::vector<double> weights;
    double total = 0.0;
    for (int k = 0; k < kinds; ++k) {
      weights.push_back(0.2 + random.uniform());
      total += weights.back();
    }
    const auto draw = [&]() {
      double u = random.uniform() * total;
      for (int k = 0; k < kinds; ++k) {
        const double weight = weights[static_cast<std::size_t>(k)];
        if (u < weight) return std::string(1, static_cast<char>('A' + k));
        u -= weight;
      }
      return std::string(1, static_cast<char>('A' + kinds - 1));
    };
    for (int e = 0; e < endpoints; ++e)
      for (const int level : {1, 8}) {
        std::string previous;
        for (int r = 0; r < runs; ++r) {
          const std::string answer =
              r > 0 && random.uniform() < repeat_previous ? previous : draw();
          records.push_back(ok_record(p, level, r, answer_completion(answer)));
          records.back().planned.endpoint_index = e;
          previous = answer;
        }
      }
  }
  return records;
}

// Whether one simulated audit of one endpoint found any prompt shifted between levels.
bool simulated_audit_flags_a_shift(SplitMix64& random, int prompts, int runs,
                                   double repeat_previous) {
  const auto records = simulated_answer_records(random, prompts, runs, repeat_previous, 1);
  return analyse(numbered_suite(prompts), records, AnalysisConfig{}).summary.shifted_prompts > 0;
}

double family_wise_rate(std::uint64_t seed, int audits, int prompts, int runs,
                        double repeat_previous) {
  SplitMix64 random(seed);
  int flagged = 0;
  for (int a = 0; a < audits; ++a)
    flagged += simulated_audit_flags_a_shift(random, prompts, runs, repeat_previous) ? 1 : 0;
  return static_cast<double>(flagged) / audits;
}

// Simulated audits of two endpoints with the same answer distributions: how many --fail-on
// shift failed (any test of the one family), and how many of those a test between the
// endpoints made fail.
struct EndpointFalseAlarms {
  int audits = 0;
  int failed = 0;
  int failed_between_endpoints = 0;
};

EndpointFalseAlarms endpoint_false_alarms(std::uint64_t seed, int audits, int prompts, int runs,
                                          double repeat_previous) {
  SplitMix64 random(seed);
  EndpointFalseAlarms alarms{audits, 0, 0};
  for (int a = 0; a < audits; ++a) {
    const auto records = simulated_answer_records(random, prompts, runs, repeat_previous, 2);
    const JudgedEndpoints judged(numbered_suite(prompts), records, 2);
    if (judged.verdict(records.size()).status == VerdictStatus::fail) ++alarms.failed;
    if (judged.comparison.shifted_prompts > 0) ++alarms.failed_between_endpoints;
  }
  return alarms;
}

} // namespace

TEST_CASE("simulation: no shift, independent runs: the family-wise false alarm rate holds") {
  // 400 audits of 20 prompts x 2 levels x 10 runs. The bound is the claim, k_shift_alpha, plus
  // three standard errors of the simulation.
  const int audits = 400;
  const double rate = family_wise_rate(20261206, audits, 20, 10, 0.0);
  const double slack = 3.0 * std::sqrt(k_shift_alpha * (1 - k_shift_alpha) / audits);
  MESSAGE("family-wise false alarm rate, independent runs: " << rate);
  CHECK(rate <= k_shift_alpha + slack);
  CHECK(rate == doctest::Approx(7.0 / 400)); // the seed fixes it: 7 audits of 400
}

TEST_CASE("simulation: runs that repeat the previous answer break the assumption") {
  // An endpoint whose runs at one level repeat the run before 60% of the time (a sticky router,
  // a cache of sampled answers) has the same answer distribution at both levels, yet each level's
  // sample is far less informative than its count says: the test, which assumes independent
  // runs, raises false alarms well above k_shift_alpha. docs/design.md "Distribution mode" quotes
  // this rate; what it says must stay true.
  const double rate = family_wise_rate(20261206, 400, 20, 10, 0.6);
  MESSAGE(
      "family-wise false alarm rate, runs repeating the previous answer 60% of the time: " << rate);
  CHECK(rate > 2 * k_shift_alpha);
  CHECK(rate == doctest::Approx(324.0 / 400));
}

TEST_CASE("simulation: two endpoints, no shift, independent runs: the family holds its rate") {
  // 400 audits of 20 prompts x 2 levels x 10 runs on each of two endpoints that answer alike:
  // 60 tests at most in the family (20 prompts x (2 level tests + 1 between the endpoints)).
  // docs/design.md "Distribution mode" quotes these counts; the seed fixes them exactly.
  const EndpointFalseAlarms alarms = endpoint_false_alarms(20261206, 400, 20, 10, 0.0);
  MESSAGE("two endpoints, independent runs: --fail-on shift failed "
          << alarms.failed << " of " << alarms.audits << ", between the endpoints "
          << alarms.failed_between_endpoints);
  const double slack = 3.0 * std::sqrt(k_shift_alpha * (1 - k_shift_alpha) / alarms.audits);
  CHECK(static_cast<double>(alarms.failed) / alarms.audits <= k_shift_alpha + slack);
  CHECK(alarms.failed == 5);
  CHECK(alarms.failed_between_endpoints == 3);
}

TEST_CASE("simulation: two endpoints whose runs repeat the previous answer break the assumption") {
  // Both endpoints answer alike, but each run repeats the one before 60% of the time: each
  // endpoint's pooled runs are far less informative than their count says, between endpoints as
  // between levels.
  const EndpointFalseAlarms alarms = endpoint_false_alarms(20261206, 400, 20, 10, 0.6);
  MESSAGE("two endpoints, runs repeating the previous answer 60% of the time: --fail-on shift "
          "failed "
          << alarms.failed << " of " << alarms.audits << ", between the endpoints "
          << alarms.failed_between_endpoints);
  CHECK(alarms.failed > 2 * k_shift_alpha * alarms.audits);
  CHECK(alarms.failed == 386);
  CHECK(alarms.failed_between_endpoints == 255);
}
