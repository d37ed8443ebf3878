#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "engine/scheduler.hpp"

using namespace llmrepro::engine;

namespace {

const Model& scheduler_model() {
  static const Model model{ModelConfig{}};
  return model;
}

// 21 words: one whole 16-token block can be cached (the last prompt token is always run).
const std::string k_prompt = "The old city stands on a river, where a bridge of stone has crossed "
                             "the water for six hundred years and more";

// Runs one generation to the end and returns the prompt tokens it found in the prefix cache.
std::size_t cached_tokens_of_run(Scheduler& scheduler) {
  auto submitted =
      scheduler.submit(GenerationRequest{scheduler_model().vocabulary().encode(k_prompt), 4});
  REQUIRE(submitted.has_value());
  const Generation::Snapshot snapshot = submitted.value()->wait_finished();
  CHECK(snapshot.finish_reason == "length");
  return snapshot.cached_tokens;
}

} // namespace

TEST_CASE("Scheduler::flush_prefix_cache") {
  EngineOptions options;
  SUBCASE("with a prefix cache: the run after a flush is cold, the one after it warm again") {
    options.prefix_cache = true;
    Scheduler scheduler(scheduler_model(), options, 8);
    CHECK(cached_tokens_of_run(scheduler) == 0);
    CHECK(cached_tokens_of_run(scheduler) == 16);
    CHECK(scheduler.flush_prefix_cache());
    CHECK(scheduler.flushes() == 1);
    CHECK(cached_tokens_of_run(scheduler) == 0);
    CHECK(cached_tokens_of_run(scheduler) == 16);
    CHECK(scheduler.flush_prefix_cache());
    CHECK(scheduler.flush_prefix_cache());
    CHECK(scheduler.flushes() == 3);
  }
  SUBCASE("without a prefix cache there is nothing to flush, and the flush succeeds") {
    Scheduler scheduler(scheduler_model(), options, 8);
    CHECK(scheduler.flush_prefix_cache());
    CHECK(cached_tokens_of_run(scheduler) == 0);
    CHECK(scheduler.flushes() == 1);
  }
  SUBCASE("refused while a generation runs, and after stop") {
    options.prefix_cache = true;
    Scheduler scheduler(scheduler_model(), options, 8);
    auto submitted =
        scheduler.submit(GenerationRequest{scheduler_model().vocabulary().encode(k_prompt), 1000});
    REQUIRE(submitted.has_value());
    // The generation is admitted at the first scheduling point, which also answers the flush:
    // the flush waits for the step after the one that admitted it at the latest.
    submitted.value()->wait_after(0);
    CHECK_FALSE(scheduler.flush_prefix_cache());
    CHECK(scheduler.flushes() == 0);
    scheduler.stop();
    CHECK(submitted.value()->wait_finished().finish_reason == "abort");
    CHECK_FALSE(scheduler.flush_prefix_cache());
  }
}
