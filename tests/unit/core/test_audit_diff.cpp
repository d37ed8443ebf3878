#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/audit_diff.hpp"

using namespace llmrepro::core;

namespace {

// A prompt whose runs returned distinct completions with these counts (the first is the
// reference); fragile when `gap` is below 0.05.
PromptAnalysis prompt(const std::string& id, std::vector<int> counts, double gap = 1.0) {
  PromptAnalysis p;
  p.id = id;
  p.has_logprobs = true;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    DistinctCompletion c;
    c.text = id + std::to_string(i);
    c.count = counts[i];
    c.is_reference = i == 0;
    if (i > 0) c.divergence = 3;
    p.completions.push_back(c);
    p.runs += counts[i];
  }
  p.unique_completions = static_cast<int>(counts.size());
  p.unstable = counts.size() > 1;
  if (p.unstable) p.first_divergence = 3;
  p.min_gap = gap;
  p.fragile = gap < 0.05;
  return p;
}

AuditReport report_of(std::vector<PromptAnalysis> prompts) {
  AuditReport report;
  report.analysis.prompts = std::move(prompts);
  return report;
}

std::vector<PromptAnalysis> stable_prompts(int n, int runs) {
  std::vector<PromptAnalysis> prompts;
  for (int i = 0; i < n; ++i) prompts.push_back(prompt("p" + std::to_string(i), {runs}));
  return prompts;
}

const MetricDiff& metric(const AuditDiff& diff, const std::string& name) {
  for (const MetricDiff& m : diff.metrics) {
    if (m.name == name) return m;
  }
  FAIL("no metric " << name);
  return diff.metrics.front();
}

DiffConfig config() {
  DiffConfig c;
  c.bootstrap_resamples = 2000;
  c.seed = 3;
  return c;
}

} // namespace

TEST_CASE("diff_audits") {
  SUBCASE("identical audits: every difference within noise") {
    const AuditReport a = report_of(stable_prompts(12, 10));
    const AuditDiff diff = diff_audits(a, a, config());
    CHECK(diff.paired_prompts == 12);
    CHECK_FALSE(diff.regression());
    CHECK_FALSE(diff.improvement());
    CHECK(metric(diff, "tarr").a == 1.0);
    CHECK(metric(diff, "tarr").p_value == 1.0);
    CHECK(metric(diff, "mean_unique_completions").delta == 0.0);
    for (const PromptDiff& p : diff.prompts) CHECK(p.agreement_change == "stable");
  }
  SUBCASE("ten of twelve prompts newly unstable: a regression beyond noise") {
    const AuditReport a = report_of(stable_prompts(12, 10));
    std::vector<PromptAnalysis> b_prompts = stable_prompts(12, 10);
    for (int i = 0; i < 10; ++i)
      b_prompts[static_cast<std::size_t>(i)] = prompt("p" + std::to_string(i), {9, 1});
    const AuditReport b = report_of(b_prompts);
    const AuditDiff diff = diff_audits(a, b, config());
    const MetricDiff& tarr = metric(diff, "tarr");
    CHECK(tarr.a == 1.0);
    CHECK(tarr.b == doctest::Approx(2.0 / 12));
    CHECK(*tarr.only_a == 10);
    CHECK(*tarr.only_b == 0);
    CHECK(tarr.p_value == doctest::Approx(2.0 / 1024));
    CHECK(tarr.a_interval->high == 1.0);
    CHECK(tarr.beyond_noise);
    CHECK(tarr.regression);
    const MetricDiff& unique = metric(diff, "mean_unique_completions");
    CHECK(unique.delta == doctest::Approx(10.0 / 12));
    CHECK(*unique.sign_test_p == doctest::Approx(2.0 / 1024));
    CHECK(unique.regression);
    CHECK(diff.regression());
    CHECK(diff.prompts[0].agreement_change == "newly unstable");
    // 10/10 against 9/10 in one prompt is well within noise.
    CHECK(diff.prompts[0].agreement_p == 1.0);
    CHECK_FALSE(diff.prompts[0].beyond_noise);
    SUBCASE("the same change read the other way is an improvement") {
      const AuditDiff back = diff_audits(b, a, config());
      CHECK(metric(back, "tarr").improvement);
      CHECK_FALSE(back.regression());
      CHECK(back.improvement());
      CHECK(back.prompts[0].agreement_change == "newly stable");
    }
  }
  SUBCASE("one prompt of twelve newly unstable: within noise") {
    const AuditReport a = report_of(stable_prompts(12, 10));
    std::vector<PromptAnalysis> b_prompts = stable_prompts(12, 10);
    b_prompts[4] = prompt("p4", {9, 1});
    const AuditDiff diff = diff_audits(a, report_of(b_prompts), config());
    CHECK(metric(diff, "tarr").p_value == 1.0);
    CHECK_FALSE(metric(diff, "mean_unique_completions").beyond_noise);
    CHECK_FALSE(diff.regression());
  }
  SUBCASE("a few prompts shifting together are not enough for the mean: the sign test guards it") {
    const AuditReport a = report_of(stable_prompts(2, 10));
    const AuditReport b = report_of({prompt("p0", {9, 1}), prompt("p1", {9, 1})});
    const AuditDiff unique_diff = diff_audits(a, b, config());
    const MetricDiff& unique = metric(unique_diff, "mean_unique_completions");
    CHECK(unique.p_value < 0.05); // every resample of two equal differences agrees
    CHECK(*unique.sign_test_p == 0.5);
    CHECK_FALSE(unique.beyond_noise);
  }
  SUBCASE("per prompt: 1000 of 1000 against 992 of 1000 is beyond noise") {
    const AuditReport a = report_of({prompt("queens", {1000})});
    const AuditReport b = report_of({prompt("queens", {992, 8})});
    const AuditDiff diff = diff_audits(a, b, config());
    REQUIRE(diff.prompts.size() == 1);
    CHECK(diff.prompts[0].agreement_p == doctest::Approx(0.007703480851083897).epsilon(1e-9));
    CHECK(diff.prompts[0].agreement_p_adjusted == diff.prompts[0].agreement_p);
    CHECK(diff.prompts[0].regression);
    CHECK(diff.regression());
    SUBCASE("Holm's correction over many prompts takes it back within noise") {
      std::vector<PromptAnalysis> many_a = stable_prompts(11, 1000);
      std::vector<PromptAnalysis> many_b = stable_prompts(11, 1000);
      many_a.push_back(prompt("queens", {1000}));
      many_b.push_back(prompt("queens", {992, 8}));
      const AuditDiff many = diff_audits(report_of(many_a), report_of(many_b), config());
      CHECK(many.prompts[11].agreement_p_adjusted ==
            doctest::Approx(12 * 0.007703480851083897).epsilon(1e-9));
      CHECK_FALSE(many.prompts[11].beyond_noise);
    }
  }
  SUBCASE("prompts present on one side only are listed, not compared") {
    const AuditReport a = report_of({prompt("x", {5}), prompt("y", {5})});
    const AuditReport b = report_of({prompt("y", {5}), prompt("z", {5})});
    const AuditDiff diff = diff_audits(a, b, config());
    CHECK(diff.only_in_a == std::vector<std::string>{"x"});
    CHECK(diff.only_in_b == std::vector<std::string>{"z"});
    REQUIRE(diff.prompts.size() == 1);
    CHECK(diff.prompts[0].id == "y");
  }
  SUBCASE("a prompt without completions on one side is left out of the statistics") {
    PromptAnalysis broken = prompt("b", {});
    broken.failed = 10;
    const AuditDiff diff = diff_audits(report_of({prompt("a", {10}), prompt("b", {10})}),
                                       report_of({prompt("a", {10}), broken}), config());
    CHECK(diff.paired_prompts == 1);
    CHECK(diff.prompts[1].agreement_change == "no completions");
    // ... and its loss makes the diff no finding: B failed 10 of 20 requests, b died in B only.
    CHECK(diff.lost_evidence ==
          std::vector<std::string>{
              "B (): 10 of 20 requests failed (50.0%), above its --max-failed-rate 0; 1 of 2 "
              "prompts have no successful run",
              "B (): 1 prompts have no successful run where A has some: b"});
    CHECK_FALSE(diff.regression());
    CHECK_FALSE(diff.improvement());
  }
  SUBCASE("fragility compared over prompts with logprobs on both sides") {
    std::vector<PromptAnalysis> b_prompts = stable_prompts(12, 10);
    for (auto& p : b_prompts) {
      p.min_gap = 0.01;
      p.fragile = true;
    }
    const AuditDiff fragile_diff =
        diff_audits(report_of(stable_prompts(12, 10)), report_of(b_prompts), config());
    const MetricDiff& fragile = metric(fragile_diff, "fragile_rate");
    CHECK(fragile.a == 0.0);
    CHECK(fragile.b == 1.0);
    CHECK(fragile.regression);
  }
}

TEST_CASE("diff_audits pass rates") {
  const std::vector<PromptAnalysis> prompts = stable_prompts(12, 10);
  SUBCASE("from an injected pass-count source") {
    DiffConfig c = config();
    c.pass_counts = [](const AuditReport& report,
                       const PromptAnalysis&) -> std::optional<PassCount> {
      return report.tara ? PassCount{2, 10} : PassCount{10, 10};
    };
    AuditReport b = report_of(prompts);
    b.tara = 0.0; // marks side B for the source above
    const AuditDiff diff = diff_audits(report_of(prompts), b, c);
    const MetricDiff& pass = metric(diff, "pass_rate");
    CHECK(pass.a == 1.0);
    CHECK(pass.b == doctest::Approx(0.2));
    CHECK(pass.a_interval->high == 1.0);
    CHECK(pass.regression);
    CHECK(*diff.prompts[0].pass_p == doctest::Approx(0.0007144558228149559).epsilon(1e-9));
    CHECK(*diff.prompts[0].pass_p_adjusted ==
          doctest::Approx(12 * 0.0007144558228149559).epsilon(1e-9));
    CHECK(diff.prompts[0].regression);
  }
  SUBCASE("the default source reads the checker results of the analysis") {
    std::vector<PromptAnalysis> checked = prompts;
    checked[0].passes = 7;
    checked[0].checked_runs = 10;
    const AuditDiff diff = diff_audits(report_of(checked), report_of(checked), config());
    REQUIRE(diff.prompts[0].a.pass.has_value());
    CHECK(diff.prompts[0].a.pass->passed == 7);
    CHECK(diff.prompts[0].a.pass->runs == 10);
    CHECK_FALSE(diff.prompts[1].a.pass.has_value());
    CHECK(metric(diff, "pass_rate").pairs == 1);
  }
  SUBCASE("without checkers there is no pass-rate metric") {
    const AuditDiff diff = diff_audits(report_of(prompts), report_of(prompts), config());
    for (const MetricDiff& m : diff.metrics) CHECK(m.name != "pass_rate");
  }
}

TEST_CASE("diff_audits: failures are lost evidence, never a finding") {
  SUBCASE("90% of B's requests failing is no improvement, however stable the rest looks") {
    // A: 10 prompts, 3 stable (TARr 30%). B: the 7 unstable ones died, 9 of 10 runs of each
    // stable one failed: what survives is all identical (TARr 100%).
    std::vector<PromptAnalysis> a_prompts;
    std::vector<PromptAnalysis> b_prompts;
    for (int i = 0; i < 10; ++i) {
      const std::string id = "p" + std::to_string(i);
      a_prompts.push_back(i < 3 ? prompt(id, {10}) : prompt(id, {5, 5}));
      PromptAnalysis b = i < 3 ? prompt(id, {1}) : prompt(id, {});
      b.failed = 10 - b.runs;
      b_prompts.push_back(b);
    }
    const AuditDiff diff = diff_audits(report_of(a_prompts), report_of(b_prompts), config());
    CHECK(diff.b.failed_requests == 97);
    CHECK(diff.b.requests == 100);
    CHECK(diff.b.dead_prompts == 7);
    CHECK(diff.a.failed_requests == 0);
    REQUIRE(diff.lost_evidence.size() == 2);
    CHECK(diff.lost_evidence[0] == "B (): 97 of 100 requests failed (97.0%), above its "
                                   "--max-failed-rate 0; 7 of 10 prompts have no successful run");
    CHECK(diff.lost_evidence[1] ==
          "B (): 7 prompts have no successful run where A has some: p3, p4, p5, p6, p7, ...");
    CHECK(diff.evidence_lost());
    CHECK_FALSE(diff.improvement());
    CHECK_FALSE(diff.regression());
  }
  SUBCASE("an audit whose verdict is ERROR is named with its errors") {
    AuditReport a = report_of(stable_prompts(4, 10));
    AuditReport b = report_of(stable_prompts(4, 10));
    a.verdict.status = VerdictStatus::error;
    a.verdict.errors = {"the endpoint was unreachable"};
    b.verdict.status = VerdictStatus::error;
    b.verdict.errors = {"40 of 80 planned requests were never recorded"};
    const AuditDiff diff = diff_audits(a, b, config());
    CHECK(diff.a.verdict == "error");
    CHECK(diff.lost_evidence ==
          std::vector<std::string>{"A () is ERROR: the endpoint was unreachable",
                                   "B () is ERROR: 40 of 80 planned requests were never recorded"});
  }
  SUBCASE("whole evidence on both sides loses nothing") {
    const AuditDiff diff =
        diff_audits(report_of(stable_prompts(4, 10)), report_of(stable_prompts(4, 10)), config());
    CHECK(diff.lost_evidence.empty());
    CHECK(diff.a.verdict == "pass");
  }
}

TEST_CASE("diff_plan_differences") {
  AuditConfig a;
  SUBCASE("equal plans differ in nothing, whatever the endpoint, model and seed") {
    AuditConfig b = a;
    b.model = "other";
    b.api = "openai-chat";
    b.seed = 9;
    b.retries = 0;
    b.gates.max_failed_rate = 0.5;
    CHECK(diff_plan_differences(a, b).empty());
  }
  SUBCASE("runs, levels and fixed against adaptive are named with both values") {
    a.runs = 3;
    a.levels = {1, 4};
    AuditConfig b = a;
    b.runs = 12;
    b.levels = {4};
    b.adaptive = true;
    const std::vector<DiffPlanDifference> differences = diff_plan_differences(a, b);
    REQUIRE(differences.size() == 3);
    CHECK(to_string(differences[0]) == "--runs 3 (A) vs 12 (B)");
    CHECK(to_string(differences[1]) == "--concurrency 1,4 (A) vs 4 (B)");
    CHECK(to_string(differences[2]) == "--adaptive off (A) vs on (B)");
  }
  SUBCASE("the adaptive settings count only when both are adaptive; fragility settings count") {
    a.adaptive = true;
    AuditConfig b = a;
    b.adaptive_epsilon = 0.05;
    b.fragile_gap = 0.1;
    b.fragile_p = 0.2;
    b.max_tokens = 64;
    const std::vector<DiffPlanDifference> differences = diff_plan_differences(a, b);
    REQUIRE(differences.size() == 4);
    CHECK(to_string(differences[0]) == "--adaptive-epsilon 0.01 (A) vs 0.05 (B)");
    CHECK(to_string(differences[1]) == "--max-tokens 128 (A) vs 64 (B)");
    CHECK(to_string(differences[2]) == "--fragile-gap 0.05 (A) vs 0.1 (B)");
    CHECK(to_string(differences[3]) == "--fragile-p none (A) vs 0.2 (B)");
  }
}

TEST_CASE("diff_audits: tiers, drift and unknown fragility") {
  SUBCASE("fragility lost in B is no improvement: a metric of its own, a regression") {
    // A: 12 prompts, all known fragile. B: the same runs without logprobs (fragility unknown).
    std::vector<PromptAnalysis> a_prompts = stable_prompts(12, 10);
    std::vector<PromptAnalysis> b_prompts = stable_prompts(12, 10);
    for (auto& p : a_prompts) {
      p.min_gap = 0.01;
      p.fragile = true;
    }
    for (auto& p : b_prompts) {
      p.has_logprobs = false;
      p.fragile.reset();
    }
    const AuditDiff diff = diff_audits(report_of(a_prompts), report_of(b_prompts), config());
    for (const MetricDiff& m : diff.metrics) CHECK_MESSAGE(m.name != "fragile_rate", m.name);
    const MetricDiff& known = metric(diff, "fragility_known_rate");
    CHECK((known.a == 1.0 && known.b == 0.0 && known.only_a == 12 && known.only_b == 0));
    CHECK(known.p_value == doctest::Approx(2 * std::pow(0.5, 12)));
    CHECK(known.regression);
    CHECK_FALSE(diff.improvement());
    CHECK(diff.regression());
  }
  SUBCASE("a tier that worsens is named; bitwise share and drift compared") {
    std::vector<PromptAnalysis> a_prompts = stable_prompts(12, 10);
    std::vector<PromptAnalysis> b_prompts = stable_prompts(12, 10);
    for (std::size_t i = 0; i < a_prompts.size(); ++i) {
      a_prompts[i].tier = StabilityTier::bitwise;
      a_prompts[i].logprob_drift.positions_compared = 40;
      b_prompts[i].tier = StabilityTier::token;
      b_prompts[i].logprob_drift.positions_compared = 40;
      b_prompts[i].logprob_drift.max_abs = 0.25;
    }
    b_prompts[11].tier = StabilityTier::inconclusive;
    const AuditDiff diff = diff_audits(report_of(a_prompts), report_of(b_prompts), config());
    CHECK(diff.prompts[0].tier_change == "bitwise -> token");
    CHECK(diff.prompts[0].tier_worsened);
    CHECK(diff.prompts[11].tier_change == "inconclusive");
    CHECK_FALSE(diff.prompts[11].tier_worsened);
    const MetricDiff& bitwise = metric(diff, "bitwise_rate");
    CHECK((bitwise.pairs == 11 && bitwise.a == 1.0 && bitwise.b == 0.0 && bitwise.only_a == 11));
    CHECK(bitwise.p_value == doctest::Approx(2 * std::pow(0.5, 11)));
    CHECK(bitwise.regression);
    const MetricDiff& drift = metric(diff, "mean_logprob_drift");
    CHECK((drift.pairs == 12 && drift.a == 0.0 && drift.b == doctest::Approx(0.25)));
    CHECK(drift.regression);
    // Back the other way: tiers improved, nothing worsened.
    const AuditDiff back = diff_audits(report_of(b_prompts), report_of(a_prompts), config());
    CHECK(back.prompts[0].tier_change == "token -> bitwise");
    CHECK_FALSE(back.prompts[0].tier_worsened);
    CHECK(metric(back, "bitwise_rate").improvement);
  }
}
