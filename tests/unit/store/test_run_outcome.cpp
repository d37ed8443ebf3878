// AuditDatabase::store_outcome: how a run ended, saved in one transaction, so that no crash (or
// failed write) leaves this run's status beside an earlier run's budget stop line.
#include <doctest/doctest.h>

#include <string>

#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using core::ErrorCode;
using testing::TempDir;

namespace {

core::AdaptiveOutcome two_looks() {
  core::AdaptiveOutcome outcome;
  outcome.looks = 2;
  outcome.finished = true;
  core::AdaptivePrompt prompt;
  prompt.prompt_index = 0;
  prompt.id = "chat-1";
  prompt.stop = core::AdaptiveStop::budget;
  prompt.planned = {{1, 4}, {4, 2}};
  outcome.prompts.push_back(prompt);
  return outcome;
}

core::SemanticAgreement agreement(double similarity) {
  core::SemanticAgreement semantic;
  semantic.model = "embed-small";
  semantic.threshold = 0.8;
  core::PromptSemantics prompt;
  prompt.prompt_index = 1;
  prompt.distinct = 2;
  prompt.pairs = 1;
  prompt.mean = similarity;
  prompt.min = similarity;
  prompt.agrees = similarity >= 0.8;
  semantic.prompts.push_back(prompt);
  core::summarize(semantic);
  return semantic;
}

store::RunOutcome full_outcome() {
  store::RunOutcome outcome;
  outcome.status = "complete";
  outcome.finished_ms = 1714567999000;
  outcome.budget_stop = "budget --max-requests reached: 6 of 8 planned requests sent";
  outcome.adaptive = two_looks();
  outcome.semantic = agreement(0.875);
  return outcome;
}

} // namespace

TEST_CASE("AuditDatabase::store_outcome stores every part in one call") {
  TempDir dir;
  auto database = create_or_fail(dir.file("audit.db"), make_header());
  REQUIRE(database.store_outcome(full_outcome()));
  const core::AuditData loaded = load_or_fail(database);
  CHECK(loaded.info.status == "complete");
  CHECK(loaded.info.finished_ms == 1714567999000);
  CHECK(loaded.budget_stop == "budget --max-requests reached: 6 of 8 planned requests sent");
  REQUIRE(loaded.adaptive);
  CHECK(loaded.adaptive->looks == 2);
  CHECK(loaded.adaptive->finished);
  REQUIRE(loaded.adaptive->prompts.size() == 1);
  CHECK(loaded.adaptive->prompts[0].stop == core::AdaptiveStop::budget);
  const auto semantic = database.load_semantic();
  REQUIRE(semantic);
  REQUIRE(*semantic);
  CHECK((*semantic)->model == "embed-small");
  REQUIRE((*semantic)->prompts.size() == 1);
  CHECK((*semantic)->prompts[0].min == 0.875);
  CHECK((*semantic)->agreeing_share == 1.0);

  SUBCASE("a later run without a budget stop clears the line and keeps what it did not measure") {
    store::RunOutcome later;
    later.status = "partial";
    later.finished_ms = 1714568000000;
    REQUIRE(database.store_outcome(later));
    const core::AuditData again = load_or_fail(database);
    CHECK(again.info.status == "partial");
    CHECK(again.info.finished_ms == 1714568000000);
    CHECK(again.budget_stop.empty());
    REQUIRE(again.adaptive);
    CHECK(again.adaptive->looks == 2);
    const auto kept = database.load_semantic();
    REQUIRE(kept);
    REQUIRE(*kept);
    CHECK((*kept)->prompts[0].min == 0.875);
  }
}

TEST_CASE("AuditDatabase::store_outcome writes all or nothing") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto database = create_or_fail(path, make_header());
  REQUIRE(database.store_budget_stop("budget --max-tokens-total reached: an earlier run"));

  SUBCASE("a part that cannot be written rolls back the status and the budget stop line") {
    // The semantic rows are the last part written: refused, the earlier parts must not stay.
    // (store/semantic_tables.cpp creates the table on first use; its layout as there.)
    run_sql(path, "CREATE TABLE IF NOT EXISTS semantic_prompts (prompt_index INTEGER PRIMARY KEY, "
                  "distinct_count INTEGER NOT NULL, pairs INTEGER NOT NULL, mean REAL NOT NULL, "
                  "std REAL NOT NULL, min REAL NOT NULL); "
                  "CREATE TRIGGER refuse BEFORE INSERT ON semantic_prompts "
                  "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;");
    const auto stored = database.store_outcome(full_outcome());
    REQUIRE_FALSE(stored);
    CHECK(stored.error().message.find("refused by the test") != std::string::npos);
  }
  SUBCASE("a status that is neither partial nor complete writes nothing") {
    store::RunOutcome outcome = full_outcome();
    outcome.status = "done";
    const auto stored = database.store_outcome(outcome);
    REQUIRE_FALSE(stored);
    CHECK(stored.error().code == ErrorCode::internal);
    CHECK(stored.error().message.find("'done'") != std::string::npos);
  }
  const core::AuditData loaded = load_or_fail(database);
  CHECK(loaded.info.status == "partial");
  CHECK(loaded.info.finished_ms == 0);
  CHECK(loaded.budget_stop == "budget --max-tokens-total reached: an earlier run");
  CHECK_FALSE(loaded.adaptive);
  const auto semantic = database.load_semantic();
  REQUIRE(semantic);
  CHECK_FALSE(*semantic);
}
