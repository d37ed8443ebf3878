#include <doctest/doctest.h>

#include <string>

#include "report/store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using testing::TempDir;

namespace {

core::AdaptiveOutcome outcome_with_gates() {
  core::AdaptiveOutcome outcome;
  outcome.config.max_runs = 7;
  outcome.config.max_unique = 2;
  outcome.config.max_logprob_drift = 0.1 + 0.2; // the double must survive the JSON
  outcome.config.min_tara = 0.75;
  outcome.config.fragile_p = 0.25;
  outcome.config.fragile_window = 33;
  outcome.looks = 2;
  core::AdaptivePrompt prompt;
  prompt.id = "chat-1";
  prompt.stop = core::AdaptiveStop::robust;
  prompt.stopped_at_look = 2;
  prompt.planned = {{1, 4}, {4, 4}};
  prompt.p_flip_bound = 0.004;
  prompt.basis = core::BoundBasis::noise;
  outcome.prompts.push_back(prompt);
  return outcome;
}

} // namespace

TEST_CASE("AuditDatabase::store_adaptive keeps the gates the stops waited for") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto database = create_or_fail(path, make_header());
  const core::AdaptiveOutcome stored = outcome_with_gates();
  REQUIRE(database.store_adaptive(stored));
  SUBCASE("read back as stored") {
    const auto loaded = load_or_fail(database);
    REQUIRE(loaded.adaptive);
    CHECK(loaded.adaptive->config == stored.config);
    CHECK(*loaded.adaptive->config.max_logprob_drift == 0.1 + 0.2);
  }
  SUBCASE("an outcome stored before the gates were recorded waited for none") {
    run_sql(path, "UPDATE meta SET value = json_remove(value, '$.max_logprob_drift', "
                  "'$.min_tara', '$.fragile_p', '$.fragile_window') WHERE key = 'adaptive'");
    const auto loaded = load_or_fail(database);
    REQUIRE(loaded.adaptive);
    CHECK_FALSE(loaded.adaptive->config.max_logprob_drift);
    CHECK_FALSE(loaded.adaptive->config.min_tara);
    CHECK_FALSE(loaded.adaptive->config.fragile_p);
    CHECK(loaded.adaptive->config.fragile_window == 50);
    CHECK(loaded.adaptive->config.max_unique == 2);
    CHECK(loaded.adaptive->prompts.size() == 1);
  }
}
