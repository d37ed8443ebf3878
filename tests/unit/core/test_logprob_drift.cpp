#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/analysis.hpp"
#include "core/flip_probability.hpp"
#include "core/logprob_drift.hpp"
#include "core/random.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::failed_record;
using llmrepro::testing::numbered_suite;
using llmrepro::testing::ok_record;

namespace {

// One position: the chosen token is the top-1 candidate, "alt" the top-2.
struct DriftPosition {
  const char* token;
  double logprob;
  double alt;
};

Completion drift_completion_of(std::vector<DriftPosition> positions) {
  Completion completion;
  completion.has_logprobs = true;
  for (const auto& p : positions) {
    TokenLogprob token;
    token.token = p.token;
    token.logprob = p.logprob;
    token.top = {{p.token, p.logprob}, {"alt", p.alt}};
    completion.text += p.token;
    completion.tokens.push_back(std::move(token));
  }
  return completion;
}

// "The sky is blue" with the chosen logprobs 0, -0.1, -0.2, -0.3 and every top-2 at -1.
std::vector<DriftPosition> sky() {
  return {{"The", 0.0, -1.0}, {" sky", -0.1, -1.0}, {" is", -0.2, -1.0}, {" blue", -0.3, -1.0}};
}

} // namespace

TEST_CASE("add_logprob_drift") {
  const Completion reference = drift_completion_of(sky());
  LogprobDrift drift;

  SUBCASE("bit-identical runs: no drift, every position compared") {
    add_logprob_drift(drift, reference, drift_completion_of(sky()));
    CHECK_MESSAGE(drift.max_abs == 0.0, "identical logprobs differ by nothing");
    CHECK(drift.max_abs_gap == 0.0);
    CHECK(drift.positions_compared == 4);
    CHECK_FALSE(has_drift(drift));
  }
  SUBCASE("the same tokens, one logprob 0.001 lower") {
    auto positions = sky();
    positions[0].logprob = -0.001; // against 0.0: |0 - (-0.001)| is 0.001 exactly
    add_logprob_drift(drift, reference, drift_completion_of(positions));
    CHECK_MESSAGE(drift.max_abs == 0.001, "the drift is the scripted change, bit for bit");
    // Gaps 1.0 and 0.999 (rounded): 0.001 up to the rounding of the subtraction.
    CHECK(drift.max_abs_gap == doctest::Approx(0.001).epsilon(1e-12));
    CHECK(drift.positions_compared == 4);
    CHECK(has_drift(drift));
  }
  SUBCASE("tokens diverging at position 3: only positions 0-2 are compared") {
    auto positions = sky();
    positions[2].logprob = -0.25; // 0.05 from the reference's -0.2, before the divergence
    positions[3] = {" grey", -5.0, -6.0};
    add_logprob_drift(drift, reference, drift_completion_of(positions));
    CHECK(drift.positions_compared == 3);
    CHECK(drift.max_abs == doctest::Approx(0.05).epsilon(1e-12));
    CHECK(drift.max_abs_gap == doctest::Approx(0.05).epsilon(1e-12));
  }
  SUBCASE("the same token after the divergence is not compared") {
    auto positions = sky();
    positions[1].token = " sea";
    positions[3].logprob = -3.0; // " blue" again, but in another context
    add_logprob_drift(drift, reference, drift_completion_of(positions));
    CHECK(drift.positions_compared == 1);
    CHECK(drift.max_abs == 0.0);
  }
  SUBCASE("a shorter run: positions up to its end") {
    auto positions = sky();
    positions.resize(2);
    add_logprob_drift(drift, reference, drift_completion_of(positions));
    CHECK(drift.positions_compared == 2);
  }
  SUBCASE("unknown logprobs are skipped and not counted") {
    auto positions = sky();
    positions[1].logprob = k_unknown_logprob; // the chosen token's logprob and so its gap
    positions[2].alt = k_unknown_logprob;     // the gap only
    Completion other = drift_completion_of(positions);
    add_logprob_drift(drift, reference, other);
    CHECK_MESSAGE(drift.positions_compared == 3, "position 1 is skipped, position 2 counts");
    CHECK_FALSE(std::isnan(drift.max_abs));
    CHECK_FALSE(std::isnan(drift.max_abs_gap));
    CHECK(drift.max_abs == 0.0);
    CHECK(drift.max_abs_gap == 0.0);
    SUBCASE("on either side") {
      LogprobDrift reversed;
      add_logprob_drift(reversed, other, reference);
      CHECK(reversed.positions_compared == 3);
      CHECK(reversed.max_abs == 0.0);
    }
  }
  SUBCASE("runs accumulate: the largest difference, the positions summed") {
    auto small = sky();
    small[1].logprob = -0.125; // 0.025 from -0.1
    auto large = sky();
    large[3].logprob = -0.5; // 0.2 from -0.3
    add_logprob_drift(drift, reference, drift_completion_of(large));
    add_logprob_drift(drift, reference, drift_completion_of(small));
    CHECK(drift.positions_compared == 8);
    CHECK(drift.max_abs == doctest::Approx(0.2).epsilon(1e-12));
  }
  SUBCASE("runs without tokens compare nothing") {
    Completion text_only;
    text_only.text = "The sky is blue";
    add_logprob_drift(drift, reference, text_only);
    CHECK(drift.positions_compared == 0);
  }
}

TEST_CASE("stability_tier") {
  LogprobDrift none;
  LogprobDrift zero{0.0, 0.0, 4};
  LogprobDrift moved{0.001, 0.0, 4};
  LogprobDrift gap_moved{0.0, 0.001, 4};
  CHECK(stability_tier(PromptStatus::stable, zero) == StabilityTier::bitwise);
  CHECK(stability_tier(PromptStatus::stable, moved) == StabilityTier::token);
  CHECK(stability_tier(PromptStatus::stable, gap_moved) == StabilityTier::token);
  CHECK_MESSAGE(stability_tier(PromptStatus::stable, none) == StabilityTier::token,
                "bitwise needs a compared position");
  CHECK(stability_tier(PromptStatus::unstable, zero) == StabilityTier::unstable);
  CHECK(stability_tier(PromptStatus::inconclusive, zero) == StabilityTier::inconclusive);
  CHECK(std::string(to_string(StabilityTier::bitwise)) == "bitwise");
  CHECK(std::string(to_string(StabilityTier::token)) == "token");
  CHECK(std::string(to_string(StabilityTier::unstable)) == "unstable");
  CHECK(std::string(to_string(StabilityTier::inconclusive)) == "inconclusive");
}

TEST_CASE("analyse: logprob drift and the stability tier") {
  auto nudged = sky();
  nudged[0].logprob = -0.001;
  auto diverged = sky();
  diverged[2].token = " was";
  auto far = sky();
  far[1].logprob = -0.6; // 0.5 from -0.1

  std::vector<RequestRecord> records;
  // p0: bit-identical at two levels.
  records.push_back(ok_record(0, 1, 0, drift_completion_of(sky())));
  records.push_back(ok_record(0, 1, 1, drift_completion_of(sky())));
  records.push_back(ok_record(0, 8, 0, drift_completion_of(sky())));
  // p1: each level agrees with itself bit for bit; level 8 is 0.001 from level 1. The level-8
  // records come first: the overall reference is still the lowest level's first run.
  records.push_back(ok_record(1, 8, 0, drift_completion_of(nudged)));
  records.push_back(ok_record(1, 8, 1, drift_completion_of(nudged)));
  records.push_back(ok_record(1, 1, 0, drift_completion_of(sky())));
  records.push_back(ok_record(1, 1, 1, drift_completion_of(sky())));
  // p2: unstable, diverging at token 2; identical logprobs before it.
  records.push_back(ok_record(2, 1, 0, drift_completion_of(sky())));
  records.push_back(ok_record(2, 8, 0, drift_completion_of(diverged)));
  // p3: inconclusive (a failed request) with a drift of 0.5 the summary leaves out.
  records.push_back(ok_record(3, 1, 0, drift_completion_of(sky())));
  records.push_back(ok_record(3, 1, 1, drift_completion_of(far)));
  records.push_back(failed_record(3, 8, 0));
  // p4: stable by text, without logprobs: nothing compared.
  Completion text_only;
  text_only.text = "The sky is blue";
  records.push_back(ok_record(4, 1, 0, text_only));
  records.push_back(ok_record(4, 1, 1, text_only));

  const AuditAnalysis analysis = analyse(numbered_suite(5), records, AnalysisConfig{});
  REQUIRE(analysis.prompts.size() == 5);

  SUBCASE("bit-identical runs are bitwise stable") {
    const auto& p = analysis.prompts[0];
    CHECK(p.status == PromptStatus::stable);
    CHECK(p.tier == StabilityTier::bitwise);
    CHECK(p.logprob_drift.max_abs == 0.0);
    CHECK(p.logprob_drift.max_abs_gap == 0.0);
    CHECK_MESSAGE(p.logprob_drift.positions_compared == 8, "two runs against the first, 4 each");
    REQUIRE(p.by_concurrency.size() == 2);
    CHECK(p.by_concurrency[0].logprob_drift.positions_compared == 4);
    CHECK_MESSAGE(p.by_concurrency[1].logprob_drift.positions_compared == 0,
                  "a level with one run has nothing to compare");
  }
  SUBCASE("per level against overall") {
    const auto& p = analysis.prompts[1];
    CHECK(p.status == PromptStatus::stable);
    CHECK(p.unique_completions == 1);
    CHECK(p.tier == StabilityTier::token);
    CHECK(p.logprob_drift.max_abs == 0.001);
    CHECK(p.logprob_drift.positions_compared == 12);
    REQUIRE(p.by_concurrency.size() == 2);
    for (const auto& level : p.by_concurrency) {
      CAPTURE(level.concurrency);
      CHECK_MESSAGE(level.logprob_drift.max_abs == 0.0, "each level agrees with itself");
      CHECK(level.logprob_drift.positions_compared == 4);
    }
  }
  SUBCASE("an unstable prompt: drift over the shared prefix") {
    const auto& p = analysis.prompts[2];
    CHECK(p.tier == StabilityTier::unstable);
    CHECK(p.logprob_drift.positions_compared == 2);
    CHECK(p.logprob_drift.max_abs == 0.0);
  }
  SUBCASE("an inconclusive prompt keeps its drift and its tier") {
    const auto& p = analysis.prompts[3];
    CHECK(p.tier == StabilityTier::inconclusive);
    CHECK(p.logprob_drift.max_abs == doctest::Approx(0.5).epsilon(1e-12));
  }
  SUBCASE("a stable prompt without logprobs is token-stable") {
    const auto& p = analysis.prompts[4];
    CHECK(p.status == PromptStatus::stable);
    CHECK(p.tier == StabilityTier::token);
    CHECK(p.logprob_drift.positions_compared == 0);
  }
  SUBCASE("the summary") {
    CHECK(analysis.summary.bitwise_stable_prompts == 1);
    CHECK(analysis.summary.stable_prompts == 3);
    REQUIRE(analysis.summary.max_logprob_drift.has_value());
    CHECK_MESSAGE(*analysis.summary.max_logprob_drift == 0.001,
                  "the inconclusive prompt's 0.5 is left out");
  }
  SUBCASE("the summary per level: over the prompts not inconclusive at that level") {
    const auto& levels = analysis.summary.by_concurrency;
    REQUIRE(levels.size() == 2);
    // c=1: p0, p1 and p3 (stable at this level, its failure is at c=8) compare 4 positions
    // each, p2 has one run there, p4 has no logprobs; p3's 0.5 is the largest.
    CHECK(levels[0].concurrency == 1);
    CHECK(levels[0].logprob_drift.max_abs == doctest::Approx(0.5).epsilon(1e-12));
    CHECK(levels[0].logprob_drift.positions_compared == 12);
    // c=8: only p1 has two runs; they agree bit for bit.
    CHECK(levels[1].concurrency == 8);
    CHECK(levels[1].logprob_drift.max_abs == 0.0);
    CHECK(levels[1].logprob_drift.max_abs_gap == 0.0);
    CHECK(levels[1].logprob_drift.positions_compared == 4);
  }
}

TEST_CASE("analyse: no logprobs, no logprob drift") {
  Completion text_only;
  text_only.text = "Hi";
  const std::vector<RequestRecord> records = {ok_record(0, 1, 0, text_only),
                                              ok_record(0, 1, 1, text_only)};
  const AuditAnalysis analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  CHECK(analysis.summary.bitwise_stable_prompts == 0);
  CHECK_FALSE(analysis.summary.max_logprob_drift.has_value());
}

TEST_CASE("logprob_drift_of: the runner-up's logprob is drift too") {
  // Only the runner-up moves, by 2^-10: the chosen logprobs are identical, the gap moves.
  const Completion reference = drift_completion_of(sky());
  auto positions = sky();
  positions[1].alt = -1.0 - 0.0009765625;
  const Completion moved_rival = drift_completion_of(positions);
  const LogprobDrift drift = logprob_drift_of({&reference, &reference, &moved_rival});
  CHECK(drift.max_abs == 0.0009765625);
  CHECK(drift.max_abs_gap == 0.0009765625);
  CHECK(drift.first_position == 1);
  CHECK(drift.positions_compared == 8); // 3 runs × 4 positions, less one per position
  CHECK(has_drift(drift));

  SUBCASE("a different runner-up is not compared as the same number") {
    Completion other = reference;
    other.tokens[0].top[1] = {"rival", -0.5};
    const LogprobDrift moved = logprob_drift_of({&reference, &other});
    CHECK(moved.max_abs == 0.0);
    CHECK(moved.max_abs_gap == 0.5); // the gap still says the margin moved
  }
}

TEST_CASE("logprob_drift_of: every pair of agreeing runs, not the reference alone") {
  // The reference at -0.2, one run 2^-8 above it, one 2^-8 below: against the reference each
  // differs by 2^-8, from each other by 2^-7.
  const Completion reference = drift_completion_of(sky());
  auto up = sky();
  up[2].logprob = -0.2 + 0.00390625;
  auto down = sky();
  down[2].logprob = -0.2 - 0.00390625;
  const Completion above = drift_completion_of(up);
  const Completion below = drift_completion_of(down);
  LogprobDrift against_reference;
  add_logprob_drift(against_reference, reference, above);
  add_logprob_drift(against_reference, reference, below);
  CHECK(against_reference.max_abs == doctest::Approx(0.00390625).epsilon(1e-12));

  const LogprobDrift drift = logprob_drift_of({&reference, &above, &below});
  CHECK(drift.max_abs == doctest::Approx(0.0078125).epsilon(1e-12));
  CHECK(drift.max_abs_gap == doctest::Approx(0.0078125).epsilon(1e-12));
  CHECK(drift.first_position == 2);
  CHECK(drift.positions_compared == 8);

  SUBCASE("runs compare where they agree with each other, whatever the reference chose") {
    // Both others leave the reference at position 1 but agree with each other: their -0.2
    // ± 2^-8 at position 2 are still compared, in their shared context.
    up[1].token = " sea";
    down[1].token = " sea";
    const Completion sea_above = drift_completion_of(up);
    const Completion sea_below = drift_completion_of(down);
    const LogprobDrift parted = logprob_drift_of({&reference, &sea_above, &sea_below});
    CHECK(parted.max_abs == doctest::Approx(0.0078125).epsilon(1e-12));
    // DriftPosition 0: 2 of 3; position 1: the two " sea" runs; 2 and 3: the same two.
    CHECK(parted.positions_compared == 5);
  }
  SUBCASE("no runs, one run, a null run: nothing compared") {
    CHECK(logprob_drift_of({}).positions_compared == 0);
    CHECK(logprob_drift_of({&reference}).positions_compared == 0);
    CHECK(logprob_drift_of({&reference, nullptr}).positions_compared == 0);
  }
}

TEST_CASE("analysis: a prompt's drift spans every pair of its runs") {
  // Serial runs at -0.2, the c=4 runs at -0.2 ± 2^-8 at position 2: the prompt's drift 2^-7
  // (the reference alone read 2^-8), c=1 none, c=4 2^-7.
  auto up = sky();
  up[2].logprob = -0.2 + 0.00390625;
  auto down = sky();
  down[2].logprob = -0.2 - 0.00390625;
  const std::vector<RequestRecord> records = {ok_record(0, 1, 0, drift_completion_of(sky())),
                                              ok_record(0, 1, 1, drift_completion_of(sky())),
                                              ok_record(0, 4, 0, drift_completion_of(up)),
                                              ok_record(0, 4, 1, drift_completion_of(down))};
  const AuditAnalysis analysis = analyse(numbered_suite(1), records, AnalysisConfig{});
  const PromptAnalysis& prompt = analysis.prompts.front();
  CHECK(prompt.logprob_drift.max_abs == doctest::Approx(0.0078125).epsilon(1e-12));
  CHECK(prompt.logprob_drift.positions_compared == 12);
  REQUIRE(prompt.by_concurrency.size() == 2);
  CHECK(prompt.by_concurrency[0].logprob_drift.max_abs == 0.0);
  CHECK(prompt.by_concurrency[1].logprob_drift.max_abs ==
        doctest::Approx(0.0078125).epsilon(1e-12));
  CHECK(analysis.summary.max_logprob_drift == doctest::Approx(0.0078125).epsilon(1e-12));
}

namespace {

// The definition of docs/design.md, written the plain way: at each position, the runs that agree
// on every token so far are split by this position's token, and each group's spreads are read.
// The tree and the pair walk must give exactly this, bit for bit.
LogprobDrift drift_by_definition(const std::vector<const Completion*>& runs) {
  const auto comparable = [](double v) { return std::isfinite(v) && v > -9999.0; };
  const auto rival_of = [](const TokenLogprob& t) -> const TokenCandidate* {
    for (const auto& c : t.top)
      if (c.token != t.token) return &c;
    return nullptr;
  };
  const auto spread = [](const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    const auto [low, high] = std::minmax_element(v.begin(), v.end());
    return *high - *low;
  };
  LogprobDrift drift;
  std::vector<std::vector<const Completion*>> groups{runs};
  for (std::size_t position = 0; !groups.empty(); ++position) {
    std::vector<std::vector<const Completion*>> next;
    for (const auto& group : groups) {
      std::map<std::string, std::vector<const Completion*>> by_token;
      for (const Completion* run : group)
        if (position < run->tokens.size())
          by_token[run->tokens[position].token.str()].push_back(run);
      for (auto& [token, agreeing] : by_token) {
        if (agreeing.size() < 2) continue;
        std::vector<double> chosen, gaps;
        std::map<std::string, std::vector<double>> rivals;
        for (const Completion* run : agreeing) {
          const TokenLogprob& at = run->tokens[position];
          if (comparable(at.logprob)) chosen.push_back(at.logprob);
          if (const auto g = measured_gap(at)) gaps.push_back(*g);
          if (const auto* r = rival_of(at); r != nullptr && comparable(r->logprob))
            rivals[r->token.str()].push_back(r->logprob);
        }
        double moved = spread(chosen);
        for (const auto& [name, values] : rivals) moved = std::max(moved, spread(values));
        drift.max_abs = std::max(drift.max_abs, moved);
        drift.max_abs_gap = std::max(drift.max_abs_gap, spread(gaps));
        if (chosen.size() >= 2) drift.positions_compared += static_cast<int>(chosen.size()) - 1;
        if ((moved > 0 || spread(gaps) > 0) && !drift.first_position)
          drift.first_position = static_cast<int>(position);
        next.push_back(agreeing);
      }
    }
    groups = std::move(next);
  }
  return drift;
}

// A run of up to 12 tokens from an alphabet of three, with logprobs on a coarse grid (so that
// equal values are common), sometimes unknown or at the floor, and one to three candidates whose
// order sometimes puts the chosen token second.
Completion random_run(SplitMix64& random) {
  const char* texts[] = {"a", "b", "c"};
  const auto value = [&]() -> double {
    switch (random.below(12)) {
    case 0: return k_unknown_logprob;
    case 1: return -9999.0;
    default: return -static_cast<double>(random.below(8)) / 8.0;
    }
  };
  Completion run;
  run.has_logprobs = true;
  const auto length = random.below(13);
  for (std::uint64_t i = 0; i < length; ++i) {
    TokenLogprob token;
    token.token = texts[random.below(i < 4 ? 2 : 3)];
    token.logprob = value();
    const auto candidates = random.below(4);
    for (std::uint64_t c = 0; c < candidates; ++c)
      token.top.push_back({c == random.below(2) ? token.token : texts[random.below(3)], value()});
    run.tokens.push_back(std::move(token));
  }
  return run;
}

bool same_drift(const LogprobDrift& a, const LogprobDrift& b) {
  return a.max_abs == b.max_abs && a.max_abs_gap == b.max_abs_gap &&
         a.positions_compared == b.positions_compared && a.first_position == b.first_position;
}

} // namespace

TEST_CASE("logprob drift: the tree and the pair walk equal the definition on 3,000 random audits") {
  SplitMix64 random(20261207);
  int drifting = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<Completion> runs;
    const auto count = random.below(9);
    for (std::uint64_t i = 0; i < count; ++i) runs.push_back(random_run(random));
    std::vector<const Completion*> pointers;
    for (const auto& run : runs) pointers.push_back(&run);
    const LogprobDrift expected = drift_by_definition(pointers);
    if (has_drift(expected)) ++drifting;
    CHECK(same_drift(logprob_drift_of(pointers), expected));
    // Any order of the runs: the same figures.
    LogprobDriftTree reversed;
    for (auto it = pointers.rbegin(); it != pointers.rend(); ++it) reversed.add(**it);
    CHECK(same_drift(reversed.drift(), expected));
    if (runs.size() >= 2) {
      LogprobDrift pair;
      add_logprob_drift(pair, runs[0], runs[1]);
      CHECK(same_drift(pair, drift_by_definition({&runs[0], &runs[1]})));
    }
  }
  // The random audits exercise drift, not only its absence.
  CHECK(drifting > 300);
}
