#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "core/cache_state.hpp"
#include "core/usage_summary.hpp"

using namespace llmrepro::core;

namespace {

// A level whose successful runs reported these cached prompt tokens (nullopt: not said), and
// `nonzero` nonzero noise samples.
LevelSummary level_of(int concurrency, const std::vector<std::optional<long>>& cached,
                      int nonzero) {
  LevelSummary level;
  level.concurrency = concurrency;
  for (const auto& tokens : cached) {
    Completion completion;
    completion.usage.cached_prompt = tokens;
    level.usage.add(completion);
  }
  level.noise.positions = 100;
  level.noise.nonzero = nonzero;
  return level;
}

} // namespace

TEST_CASE("UsageSummary counts the runs that said their cache state and the warm ones") {
  const LevelSummary level = level_of(1, {0, 12, std::nullopt, 3, 0}, 0);
  CHECK(level.usage.requests == 5);
  CHECK(level.usage.requests_with_cache_state == 4);
  CHECK(level.usage.warm_requests == 2);
  UsageSummary sum = level.usage;
  sum += level.usage;
  CHECK(sum.requests_with_cache_state == 8);
  CHECK(sum.warm_requests == 4);
}

TEST_CASE("cache_state_line") {
  SUBCASE("no warm run, or none said: nothing to say") {
    CHECK(cache_state_line({}).empty());
    CHECK(cache_state_line({level_of(1, {0, 0, 0}, 5)}).empty());
    CHECK(cache_state_line({level_of(1, {std::nullopt, std::nullopt}, 5)}).empty());
  }
  SUBCASE("warm and cold serial runs with noise: the noise is cache state, not batching") {
    const std::vector<LevelSummary> levels{level_of(1, {0, 40, 40, 0, 0, 0, 0, 40, 0, 0}, 17),
                                           level_of(8, {40, 40}, 90)};
    CHECK(cache_state_line(levels) ==
          "c=1: 3 of 10 runs warm (prefix cache), so its noise is cache state (warm and cold "
          "prefills), not batching: one request at a time shares no batch");
  }
  SUBCASE("warm runs but no noise, or every run warm: the count alone") {
    CHECK(cache_state_line({level_of(1, {0, 40, 0}, 0)}) == "c=1: 1 of 3 runs warm (prefix cache)");
    CHECK(cache_state_line({level_of(1, {40, 40, std::nullopt}, 9)}) ==
          "c=1: 2 of 2 runs warm (prefix cache)");
  }
  SUBCASE("a lowest level above 1 batches too: the noise only coincides with cache state") {
    CHECK(cache_state_line({level_of(4, {0, 40}, 2)}) ==
          "c=4: 1 of 2 runs warm (prefix cache), so its noise coincides with cache state (warm "
          "and cold prefills)");
  }
}
