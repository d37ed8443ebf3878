#include <doctest/doctest.h>

#include <string>

#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using testing::TempDir;

namespace {

core::AdaptiveOutcome checked_outcome() {
  core::AdaptiveOutcome outcome;
  outcome.config.assumption = core::AdaptiveAssumption::greedy_shared_noise;
  outcome.looks = 3;
  core::AdaptivePrompt prompt;
  prompt.prompt_index = 0;
  prompt.id = "p0";
  prompt.stop = core::AdaptiveStop::undecided;
  prompt.planned = {{1, 4}, {8, 4}};
  prompt.p_flip_bound = 0.5;
  prompt.basis = core::BoundBasis::runs;
  prompt.basis_reason = "the noise model is contradicted at c=8";
  outcome.prompts.push_back(prompt);
  outcome.contradicted[8] = {2, "3 runs chose a token below its runner-up: the endpoint samples"};
  return outcome;
}

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

TEST_CASE("AuditDatabase::store_adaptive: the assumption, contradictions and reasons round-trip") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto header = make_header();
  header.config.adaptive.enabled = true;
  header.config.adaptive.assume = core::AdaptiveAssumption::greedy_shared_noise;
  auto database = create_or_fail(path, header);
  REQUIRE(database.store_adaptive(checked_outcome()));
  const core::AuditData loaded = load_or_fail(database);
  CHECK(loaded.config.adaptive.assume == core::AdaptiveAssumption::greedy_shared_noise);
  REQUIRE(loaded.adaptive);
  const core::AdaptiveOutcome& outcome = *loaded.adaptive;
  CHECK(outcome.config.assumption == core::AdaptiveAssumption::greedy_shared_noise);
  CHECK(outcome.contradicted == checked_outcome().contradicted);
  REQUIRE(outcome.prompts.size() == 1);
  CHECK(outcome.prompts[0].basis_reason == "the noise model is contradicted at c=8");
}

TEST_CASE("AuditDatabase::load: an adaptive outcome stored before the checks reads back") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto database = create_or_fail(path, make_header());
  run_sql(path, R"(INSERT OR REPLACE INTO meta (key, value) VALUES ('adaptive', '{"initial_runs":3,
    "max_runs":10,"epsilon":0.01,"confidence":0.95,"max_unique":null,"looks":1,"finished":true,
    "prompts":[{"prompt_index":0,"id":"p0","stop":"robust","look":1,"planned":[[1,3]],
    "p_flip_bound":0.004,"basis":"noise"}]}'))");
  const core::AuditData loaded = load_or_fail(database);
  REQUIRE(loaded.adaptive);
  CHECK(loaded.adaptive->config.assumption == core::AdaptiveAssumption::none);
  CHECK(loaded.adaptive->contradicted.empty());
  REQUIRE(loaded.adaptive->prompts.size() == 1);
  CHECK(loaded.adaptive->prompts[0].basis == core::BoundBasis::noise);
  CHECK(loaded.adaptive->prompts[0].basis_reason.empty());
}

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
