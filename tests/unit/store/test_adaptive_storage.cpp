#include <doctest/doctest.h>

#include "report/store/audit_database.hpp"
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

} // namespace

TEST_CASE("AuditDatabase::store_adaptive: the assumption, contradictions and reasons round-trip") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto header = make_header();
  header.config.adaptive = true;
  header.config.adaptive_assume = core::AdaptiveAssumption::greedy_shared_noise;
  auto database = create_or_fail(path, header);
  REQUIRE(database.store_adaptive(checked_outcome()));
  const core::AuditData loaded = load_or_fail(database);
  CHECK(loaded.config.adaptive_assume == core::AdaptiveAssumption::greedy_shared_noise);
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
