#include <doctest/doctest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/plan.hpp"
#include "core/random.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::numbered_suite;

TEST_CASE("make_plan") {
  const Suite suite = numbered_suite(4);
  PlanConfig config;
  config.levels = {1, 8};
  config.runs = 3;
  config.seed = 7;

  SUBCASE("one wave per level, every repeat exactly once") {
    const Plan plan = make_plan(suite, config);
    REQUIRE(plan.waves.size() == 2);
    CHECK(plan.size() == 24);
    for (const auto& wave : plan.waves) {
      std::set<std::tuple<int, int>> seen;
      for (const auto& r : wave.requests) {
        CHECK(r.concurrency == wave.concurrency);
        seen.insert({r.prompt_index, r.repeat});
      }
      CHECK(seen.size() == 12);
    }
  }
  SUBCASE("the same seed gives the same order, another seed another") {
    const Plan a = make_plan(suite, config);
    const Plan b = make_plan(suite, config);
    CHECK(a.waves[0].requests == b.waves[0].requests);
    config.seed = 8;
    const Plan c = make_plan(suite, config);
    CHECK_FALSE(a.waves[0].requests == c.waves[0].requests);
  }
  SUBCASE("shards partition the prompts") {
    config.shard_count = 3;
    std::multiset<int> prompts;
    for (int i = 0; i < 3; ++i) {
      config.shard_index = i;
      const Plan plan = make_plan(suite, config);
      for (const auto& r : plan.waves[0].requests)
        if (r.repeat == 0) prompts.insert(r.prompt_index);
    }
    CHECK(prompts == std::multiset<int>{0, 1, 2, 3});
  }
}

TEST_CASE("make_plan with probe kinds") {
  const Suite suite = numbered_suite(3);
  PlanConfig config;
  config.levels = {4, 8};
  config.runs = 2;
  config.probes = {ProbeKind::sweep, ProbeKind::prefix, ProbeKind::long_prompt};
  config.endpoints = 2;
  const Plan plan = make_plan(suite, config);

  SUBCASE("the prefix probe is one serial wave with warm and cold trials") {
    // Per endpoint: sweep 2 levels, prefix 1 wave at level 1, long 2 levels.
    REQUIRE(plan.waves.size() == 10);
    const Wave& prefix = plan.waves[2];
    CHECK(prefix.probe == ProbeKind::prefix);
    CHECK(prefix.concurrency == 1);
    CHECK(prefix.requests.size() == 12); // 3 prompts x 2 runs x (cold + warm)
    std::set<std::tuple<int, int>> seen;
    for (const auto& request : prefix.requests) seen.insert({request.prompt_index, request.repeat});
    CHECK(seen.size() == 12);
    CHECK(plan.size() == 2 * (3 * 2 * 2 + 12 + 3 * 2 * 2));
  }
  SUBCASE("every endpoint runs the same plan") {
    for (std::size_t w = 0; w < 5; ++w) {
      CHECK(plan.waves[w].endpoint_index == 0);
      CHECK(plan.waves[w + 5].endpoint_index == 1);
      CHECK(plan.waves[w].probe == plan.waves[w + 5].probe);
      CHECK(plan.waves[w].concurrency == plan.waves[w + 5].concurrency);
      CHECK(plan.waves[w].requests.size() == plan.waves[w + 5].requests.size());
    }
    CHECK(plan.waves[3].probe == ProbeKind::long_prompt);
    CHECK(plan.waves[3].concurrency == 4);
  }
}

TEST_CASE("the mixed-sampling probe kind") {
  REQUIRE(parse_probe_kind("mixed-sampling"));
  CHECK(*parse_probe_kind("mixed-sampling") == ProbeKind::mixed_sampling);
  CHECK(std::string(to_string(ProbeKind::mixed_sampling)) == "mixed-sampling");
  const auto unknown = parse_probe_kind("mixed_sampling");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message ==
        "unknown probe kind 'mixed_sampling' (expected sweep, mixed, mixed-sampling, prefix, "
        "long or restart)");
  // Both filler probes keep fillers in flight; only mixed-sampling samples them.
  CHECK(probe_uses_fillers(ProbeKind::mixed));
  CHECK(probe_uses_fillers(ProbeKind::mixed_sampling));
  CHECK_FALSE(probe_uses_fillers(ProbeKind::sweep));
  CHECK_FALSE(probe_uses_fillers(ProbeKind::prefix));
  CHECK_FALSE(probe_uses_fillers(ProbeKind::long_prompt));
  CHECK(fillers_sampled(ProbeKind::mixed_sampling));
  CHECK_FALSE(fillers_sampled(ProbeKind::mixed));
  CHECK(deterministic_probes() == std::vector<ProbeKind>{ProbeKind::sweep, ProbeKind::mixed,
                                                         ProbeKind::mixed_sampling,
                                                         ProbeKind::prefix});

  // Planned like the mixed probe: one wave per level, `runs` repeats of every prompt.
  const Suite suite = numbered_suite(3);
  PlanConfig config;
  config.levels = {2, 8};
  config.runs = 2;
  config.probes = {ProbeKind::mixed, ProbeKind::mixed_sampling};
  const Plan plan = make_plan(suite, config);
  REQUIRE(plan.waves.size() == 4);
  CHECK(plan.waves[2].probe == ProbeKind::mixed_sampling);
  CHECK(plan.waves[2].concurrency == 2);
  CHECK(plan.waves[3].concurrency == 8);
  CHECK(plan.waves[3].requests.size() == 6);
  CHECK(plan.size() == 24);
  CHECK(plan_contains(config, 3, {0, 1, 8, ProbeKind::mixed_sampling, 1}));
  CHECK_FALSE(plan_contains(config, 3, {0, 1, 8, ProbeKind::mixed_sampling, 2}));
  config.probes = {ProbeKind::mixed};
  CHECK_FALSE(plan_contains(config, 3, {0, 1, 8, ProbeKind::mixed_sampling, 1}));
}

TEST_CASE("plan_contains: exactly the requests make_plan builds") {
  const Suite suite = numbered_suite(5);
  PlanConfig config;
  config.endpoints = 2;
  config.levels = {1, 4};
  config.probes = {ProbeKind::sweep, ProbeKind::prefix};
  config.runs = 3;
  config.shard_index = 1;
  config.shard_count = 2;
  const Plan plan = make_plan(suite, config);
  std::size_t inside = 0;
  for (int endpoint = -1; endpoint <= 2; ++endpoint)
    for (int prompt = -1; prompt <= 5; ++prompt)
      for (int level : {0, 1, 2, 4, 8})
        for (ProbeKind probe : {ProbeKind::sweep, ProbeKind::prefix, ProbeKind::mixed})
          for (int repeat = -1; repeat <= 6; ++repeat) {
            const PlannedRequest request{endpoint, prompt, level, probe, repeat};
            bool planned = false;
            for (const Wave& wave : plan.waves)
              for (const PlannedRequest& each : wave.requests) planned = planned || each == request;
            CHECK(plan_contains(config, suite.prompts.size(), request) == planned);
            inside += planned ? 1 : 0;
          }
  CHECK(inside == plan.size());
}

TEST_CASE("make_plan: the restart probe keeps its rounds in order") {
  const Suite suite = numbered_suite(3);
  PlanConfig config;
  config.levels = {1, 8};
  config.probes = {ProbeKind::restart};
  config.runs = 2;
  config.seed = 11;
  const Plan plan = make_plan(suite, config);
  REQUIRE(plan.waves.size() == 1);
  const Wave& wave = plan.waves.front();
  CHECK(wave.concurrency == 1);
  REQUIRE(wave.requests.size() == 12);
  // Repeat by repeat: round 0's firsts (0), its laters (1), round 1's firsts (2), laters (3),
  // each prompt once per repeat.
  for (std::size_t i = 0; i < wave.requests.size(); ++i) {
    const PlannedRequest& request = wave.requests[i];
    CHECK(request.repeat == static_cast<int>(i / 3));
    CHECK(request.concurrency == 1);
    CHECK(plan_contains(config, suite.prompts.size(), request));
  }
  for (int repeat = 0; repeat < 4; ++repeat) {
    std::set<int> prompts;
    for (const auto& request : wave.requests)
      if (request.repeat == repeat) prompts.insert(request.prompt_index);
    CHECK(prompts == std::set<int>{0, 1, 2});
  }
  CHECK(restart_round_of(2) == 1);
  CHECK(restart_round_of(3) == 1);
  CHECK_FALSE(restart_request_is_later(2));
  CHECK(restart_request_is_later(3));
  CHECK_FALSE(plan_contains(config, suite.prompts.size(), {0, 0, 1, ProbeKind::restart, 4}));
  CHECK_FALSE(plan_contains(config, suite.prompts.size(), {0, 0, 8, ProbeKind::restart, 0}));
  CHECK(parse_probe_kind("restart").value() == ProbeKind::restart);
  CHECK(std::string(to_string(ProbeKind::restart)) == "restart");
}

TEST_CASE("planned_request_count: make_plan's size, over random configurations") {
  llmrepro::core::SplitMix64 random(3);
  const ProbeKind kinds[] = {ProbeKind::sweep,       ProbeKind::mixed,   ProbeKind::prefix,
                             ProbeKind::long_prompt, ProbeKind::restart, ProbeKind::mixed_sampling};
  for (int trial = 0; trial < 300; ++trial) {
    const Suite suite = numbered_suite(static_cast<int>(random.below(9)));
    PlanConfig config;
    config.endpoints = static_cast<int>(random.below(3));
    config.levels.clear();
    for (auto n = random.below(4); n > 0; --n)
      config.levels.push_back(static_cast<int>(1 + random.below(4)));
    config.probes.clear();
    for (auto n = random.below(4); n > 0; --n) config.probes.push_back(kinds[random.below(6)]);
    config.runs = static_cast<int>(random.below(5));
    if (random.below(2) == 0) config.serial_runs = static_cast<int>(random.below(4));
    config.bursts = random.below(2) == 0;
    config.serial_rounds = random.below(2) == 0;
    config.shard_count = static_cast<int>(random.below(4)); // 0: one shard, as make_plan reads it
    config.shard_index = static_cast<int>(random.below(3));
    CAPTURE(trial);
    CHECK(planned_request_count(suite, config) == make_plan(suite, config).size());
  }
}
