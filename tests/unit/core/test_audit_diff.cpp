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
    // 10/10 against 9/10 in one prompt is well within noise: one-sided, P = 10/20.
    CHECK(diff.prompts[0].agreement_p == doctest::Approx(0.5));
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
    // One-sided: half the two-sided 0.007703480851083897 at these symmetric margins.
    CHECK(diff.prompts[0].agreement_p == doctest::Approx(0.007703480851083897 / 2).epsilon(1e-9));
    CHECK(diff.prompts[0].agreement_p_adjusted == diff.prompts[0].agreement_p);
    CHECK(diff.prompts[0].regression);
    CHECK(diff.regression());
    SUBCASE("prompts identical on both sides cannot be significant and do not dilute it") {
      std::vector<PromptAnalysis> many_a = stable_prompts(11, 1000);
      std::vector<PromptAnalysis> many_b = stable_prompts(11, 1000);
      many_a.push_back(prompt("queens", {1000}));
      many_b.push_back(prompt("queens", {992, 8}));
      const AuditDiff many = diff_audits(report_of(many_a), report_of(many_b), config());
      CHECK(many.prompts[11].agreement_p_adjusted == many.prompts[11].agreement_p);
      CHECK(many.prompts[11].regression);
      CHECK(many.prompts[0].agreement_p_adjusted == 1.0);
    }
    SUBCASE("prompts that could have moved take part in the correction") {
      // Eleven prompts at 995 of 1000 on both sides: each could reach p <= 0.05/12.
      std::vector<PromptAnalysis> many_a;
      std::vector<PromptAnalysis> many_b;
      for (int i = 0; i < 11; ++i) {
        many_a.push_back(prompt("n" + std::to_string(i), {995, 5}));
        many_b.push_back(prompt("n" + std::to_string(i), {995, 5}));
      }
      many_a.push_back(prompt("queens", {1000}));
      many_b.push_back(prompt("queens", {992, 8}));
      const AuditDiff many = diff_audits(report_of(many_a), report_of(many_b), config());
      CHECK(many.prompts[11].agreement_p_adjusted ==
            doctest::Approx(12 * 0.007703480851083897 / 2).epsilon(1e-9));
      CHECK(many.prompts[11].regression); // 0.0462 < 0.05
      CHECK_FALSE(many.prompts[0].beyond_noise);
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
    // One-sided (half the two-sided 0.0007144558228149559); twelve equal p values: BH keeps it.
    CHECK(*diff.prompts[0].pass_p == doctest::Approx(0.0007144558228149559 / 2).epsilon(1e-9));
    CHECK(*diff.prompts[0].pass_p_adjusted == *diff.prompts[0].pass_p);
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
    b.plan.model = "other";
    b.plan.api = "openai-chat";
    b.plan.seed = 9;
    b.requests.retries = 0;
    b.gates.max_failed_rate = 0.5;
    CHECK(diff_plan_differences(a, b).empty());
  }
  SUBCASE("runs, levels and fixed against adaptive are named with both values") {
    a.plan.runs = 3;
    a.plan.levels = {1, 4};
    AuditConfig b = a;
    b.plan.runs = 12;
    b.plan.levels = {4};
    b.adaptive.enabled = true;
    const std::vector<DiffPlanDifference> differences = diff_plan_differences(a, b);
    REQUIRE(differences.size() == 3);
    CHECK(to_string(differences[0]) == "--runs 3 (A) vs 12 (B)");
    CHECK(to_string(differences[1]) == "--concurrency 1,4 (A) vs 4 (B)");
    CHECK(to_string(differences[2]) == "--adaptive off (A) vs on (B)");
  }
  SUBCASE("the adaptive settings count only when both are adaptive; fragility settings count") {
    a.adaptive.enabled = true;
    AuditConfig b = a;
    b.adaptive.epsilon = 0.05;
    b.analysis.fragile_gap = 0.1;
    b.analysis.fragile_p = 0.2;
    b.plan.max_tokens = 64;
    const std::vector<DiffPlanDifference> differences = diff_plan_differences(a, b);
    REQUIRE(differences.size() == 4);
    CHECK(to_string(differences[0]) == "--adaptive-epsilon 0.01 (A) vs 0.05 (B)");
    CHECK(to_string(differences[1]) == "--max-tokens 128 (A) vs 64 (B)");
    CHECK(to_string(differences[2]) == "--fragile-gap 0.05 (A) vs 0.1 (B)");
    CHECK(to_string(differences[3]) == "--fragile-p none (A) vs 0.2 (B)");
  }
  SUBCASE("what an adaptive audit assumed is a setting of its plan") {
    a.adaptive.enabled = true;
    AuditConfig b = a;
    b.adaptive.assume = AdaptiveAssumption::greedy_shared_noise;
    const std::vector<DiffPlanDifference> differences = diff_plan_differences(a, b);
    REQUIRE(differences.size() == 1);
    CHECK(to_string(differences[0]) == "--adaptive-assume none (A) vs greedy-shared-noise (B)");
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

TEST_CASE("one-sided Fisher and Tarone's Benjamini-Hochberg") {
  // 10/10 against 5/10: P(B <= 5 | 15 of 20 agree) = C(10,5) C(10,10) / C(20,15) = 252/15504.
  CHECK(fisher_one_sided_p(10, 10, 5, 10) == doctest::Approx(252.0 / 15504).epsilon(1e-12));
  CHECK(fisher_one_sided_p(10, 10, 6, 10) == doctest::Approx(210.0 / 4845).epsilon(1e-12));
  CHECK(fisher_one_sided_p(10, 10, 7, 10) == doctest::Approx(120.0 / 1140).epsilon(1e-12));
  CHECK(fisher_one_sided_p(5, 10, 10, 10) == doctest::Approx(1.0));
  // The observed table is the most extreme its margins allow: the floor is the p itself.
  CHECK(fisher_one_sided_min_p(10, 10, 5, 10) == doctest::Approx(252.0 / 15504).epsilon(1e-12));
  // 8/10 against 7/10 (15 agree): the floor is B at 5, whatever was observed.
  CHECK(fisher_one_sided_min_p(8, 10, 7, 10) == doctest::Approx(252.0 / 15504).epsilon(1e-12));
  CHECK(fisher_one_sided_min_p(10, 10, 10, 10) == 1.0);
  CHECK(fisher_one_sided_p(0, 0, 3, 10) == 1.0);

  // Tarone at alpha 0.05: floors {0.001, 0.02, 0.03, 0.2, 1}. k = 1: three floors <= 0.05;
  // k = 2: two <= 0.025, so K = 2 and the family is the first two tests.
  const std::vector<double> p{0.004, 0.03, 0.03, 0.5, 1.0};
  const std::vector<double> floors{0.001, 0.02, 0.03, 0.2, 1.0};
  const std::vector<double> adjusted = tarone_bh_adjust(p, floors, 0.05);
  REQUIRE(adjusted.size() == 5);
  CHECK(adjusted[0] == doctest::Approx(0.008)); // 2/1 * 0.004
  CHECK(adjusted[1] == doctest::Approx(0.03));  // 2/2 * 0.03
  CHECK(adjusted == std::vector<double>{adjusted[0], adjusted[1], 1.0, 1.0, 1.0});
  // BH's step-up: the adjusted p is the smallest over the ranks at or above its own.
  const std::vector<double> up = tarone_bh_adjust({0.04, 0.045}, {0.0, 0.0}, 0.05);
  CHECK(up[0] == doctest::Approx(0.045));
  CHECK(up[1] == doctest::Approx(0.045));
  CHECK(tarone_bh_adjust({}, {}, 0.05).empty());
}

namespace {

// A prompt of `runs` runs with `agree` of them returning the modal completion.
PromptAnalysis agreeing(const std::string& id, int agree, int runs) {
  return agree == runs ? prompt(id, {runs}) : prompt(id, {agree, runs - agree});
}

// The agreement counts of `flips.size()` prompts, each run flipping away from the modal
// completion with its probability (at most one half, so the modal one stays modal), seeded.
std::vector<PromptAnalysis> sampled(const std::vector<double>& flips, int runs,
                                    std::uint64_t& state) {
  std::vector<PromptAnalysis> out;
  for (std::size_t i = 0; i < flips.size(); ++i) {
    int agree = 0;
    for (int r = 0; r < runs; ++r) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL; // a 64-bit LCG
      const double u = static_cast<double>(state >> 11) / 9007199254740992.0;
      agree += u >= flips[i] ? 1 : 0;
    }
    out.push_back(agreeing("p" + std::to_string(i), std::max(agree, runs - agree), runs));
  }
  return out;
}

bool any_prompt_regressed(const AuditDiff& diff) {
  for (const PromptDiff& p : diff.prompts) {
    if (p.regression) return true;
  }
  return false;
}

} // namespace

TEST_CASE("diff_audits per prompt: a strong regression on a few prompts, false alarms at alpha") {
  DiffConfig c = config();
  c.bootstrap_resamples = 100; // the means are not what this measures
  SUBCASE("5 of 40 prompts from 10/10 to 5, 6, 7, 5 and 6 of 10 are found") {
    std::vector<PromptAnalysis> b = stable_prompts(40, 10);
    const int agree[] = {5, 6, 7, 5, 6};
    for (int i = 0; i < 5; ++i)
      b[static_cast<std::size_t>(i * 8)] =
          agreeing(b[static_cast<std::size_t>(i * 8)].id, agree[i], 10);
    const AuditDiff diff = diff_audits(report_of(stable_prompts(40, 10)), report_of(b), c);
    // Floors: 0.0163 twice, 0.0433 twice, 0.105; K = 2 (two floors <= 0.025): p0 and p32.
    std::vector<std::string> regressed;
    for (const PromptDiff& p : diff.prompts) {
      if (p.regression) regressed.push_back(p.id);
    }
    CHECK(regressed == std::vector<std::string>{"p0", "p24"});
    CHECK(diff.prompts[0].agreement_p_adjusted == doctest::Approx(252.0 / 15504));
    CHECK(diff.regression());
    // Holm over the 40 prompts, as before, called it no difference: 40 * 0.0163 > 1.
  }
  SUBCASE("seeded simulation: unchanged endpoints alarm at most alpha, the regression is found") {
    // 40 prompts: 28 that never flip, 12 flipping with probability 0.05 to 0.5; the same in A
    // and B. 2000 diffs of 10 runs a side.
    std::vector<double> flips(40, 0.0);
    const double noisy[] = {0.05, 0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4, 0.5, 0.5, 0.5};
    for (int i = 0; i < 12; ++i) flips[static_cast<std::size_t>(i)] = noisy[i];
    std::uint64_t state = 12345;
    const int trials = 2000;
    int per_prompt = 0;
    int pooled = 0;
    int either = 0;
    int overall = 0;
    for (int t = 0; t < trials; ++t) {
      const AuditDiff diff = diff_audits(report_of(sampled(flips, 10, state)),
                                         report_of(sampled(flips, 10, state)), c);
      const bool prompt_alarm = any_prompt_regressed(diff);
      const bool pooled_alarm = metric(diff, "pooled_agreement").regression;
      per_prompt += prompt_alarm ? 1 : 0;
      pooled += pooled_alarm ? 1 : 0;
      either += prompt_alarm || pooled_alarm ? 1 : 0;
      overall += diff.regression() ? 1 : 0;
    }
    MESSAGE("false regressions on unchanged endpoints, of "
            << trials << ": per prompt " << per_prompt << ", pooled " << pooled << ", either "
            << either << ", any metric " << overall);
    // Each test at most alpha within three standard errors of a 2000-trial estimate (0.0146).
    const double bound = trials * (0.05 + 3 * std::sqrt(0.05 * 0.95 / trials));
    CHECK(per_prompt <= bound);
    CHECK(pooled <= bound);
    CHECK(overall <= bound); // every metric together: what `llmrepro diff` exits 1 on
    // The regression: 5 of the 28 quiet prompts flip with probability 0.4 in B.
    std::vector<double> regressed = flips;
    for (int i = 0; i < 5; ++i) regressed[static_cast<std::size_t>(12 + i)] = 0.4;
    int found_per_prompt = 0;
    int found_pooled = 0;
    int found = 0;
    const int regression_trials = 500;
    for (int t = 0; t < regression_trials; ++t) {
      const AuditDiff diff = diff_audits(report_of(sampled(flips, 10, state)),
                                         report_of(sampled(regressed, 10, state)), c);
      const bool by_prompt = any_prompt_regressed(diff);
      const bool by_pool = metric(diff, "pooled_agreement").regression;
      found_per_prompt += by_prompt ? 1 : 0;
      found_pooled += by_pool ? 1 : 0;
      found += by_prompt || by_pool ? 1 : 0;
    }
    MESSAGE("5 of 40 prompts at flip probability 0.4 found, of "
            << regression_trials << ": per prompt " << found_per_prompt << ", pooled "
            << found_pooled << ", either " << found);
    // Among twelve noisy prompts the per-prompt family is wide (each noisy prompt could have
    // moved), so the pooled test carries it: measured 366 of 500.
    CHECK(found >= regression_trials * 6 / 10);
    // On a quiet suite (the other 35 prompts never flip) the same regression, both tests.
    const std::vector<double> quiet(40, 0.0);
    std::vector<double> quiet_regressed = quiet;
    for (int i = 0; i < 5; ++i) quiet_regressed[static_cast<std::size_t>(i * 8)] = 0.4;
    int quiet_per_prompt = 0;
    int quiet_found = 0;
    for (int t = 0; t < regression_trials; ++t) {
      const AuditDiff diff = diff_audits(report_of(sampled(quiet, 10, state)),
                                         report_of(sampled(quiet_regressed, 10, state)), c);
      quiet_per_prompt += any_prompt_regressed(diff) ? 1 : 0;
      quiet_found += diff.regression() ? 1 : 0;
    }
    MESSAGE("on a quiet suite, found of " << regression_trials << ": per prompt "
                                          << quiet_per_prompt << ", by the diff " << quiet_found);
    CHECK(quiet_found >= regression_trials * 9 / 10);
  }
}

TEST_CASE("level_speeds: each level both audits served, B's speed over A's") {
  AuditSummary a;
  AuditSummary b;
  const auto level = [](int concurrency, int runs, double tokens_per_second, double mean,
                        double p95) {
    LevelSummary out;
    out.concurrency = concurrency;
    out.runs = runs;
    out.tokens_per_second = tokens_per_second;
    out.mean_latency_ms = mean;
    out.p95_latency_ms = p95;
    return out;
  };
  a.by_concurrency = {level(1, 5, 200.0, 40.0, 50.0), level(8, 5, 800.0, 80.0, 120.0),
                      level(16, 5, 0.0, 0.0, 0.0), level(32, 0, 0.0, 0.0, 0.0)};
  b.by_concurrency = {level(1, 5, 150.0, 50.0, 60.0), level(8, 5, 600.0, 120.0, 200.0),
                      level(16, 5, 900.0, 90.0, 99.0), level(32, 5, 1.0, 1.0, 1.0),
                      level(64, 5, 1.0, 1.0, 1.0)};
  const std::vector<LevelSpeed> speeds = level_speeds(a, b);
  // Level 32 had no successful request in A and level 64 none in A at all: not compared.
  REQUIRE(speeds.size() == 3);
  CHECK(speeds[0].concurrency == 1);
  CHECK(*speeds[0].throughput_ratio == doctest::Approx(0.75));
  CHECK(*speeds[0].latency_ratio == doctest::Approx(1.25));
  CHECK(speeds[1].concurrency == 8);
  CHECK(*speeds[1].throughput_ratio == doctest::Approx(0.75));
  CHECK(*speeds[1].latency_ratio == doctest::Approx(1.5));
  CHECK(speeds[1].a_p95_latency_ms == 120.0);
  CHECK(speeds[1].b_p95_latency_ms == 200.0);
  // A's level 16 took no measurable time: no ratio rather than a division by zero.
  CHECK(speeds[2].concurrency == 16);
  CHECK_FALSE(speeds[2].throughput_ratio);
  CHECK_FALSE(speeds[2].latency_ratio);
}
