#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/reasoning.hpp"
#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using store::AuditDatabase;
using testing::TempDir;

namespace {

// A reasoning model's record: the reasoning's tokens (with its <think> markers) apart from the
// answer's, as core::separate_reasoning leaves them.
core::RequestRecord reasoning_record(int prompt, int repeat, core::ReasoningSplit split) {
  core::RequestRecord record = make_record(prompt, 1, repeat, true);
  auto& completion = record.outcome.completion;
  completion.reasoning_text = "Six times seven.\n";
  completion.reasoning_split = split;
  if (split == core::ReasoningSplit::separate)
    completion.reasoning_tokens = {token("<think>", -0.01, {{"<think>", -0.01}, {"I", -5.0}}),
                                   token("Six", -0.5, {{"Six", -0.5}, {"6", -0.75}}),
                                   token(" times seven.\n", -0.25, {}),
                                   token("</think>", -0.125, {{"</think>", -0.125}})};
  return record;
}

} // namespace

TEST_CASE("AuditDatabase: a reasoning model's reasoning is stored apart from its answer") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto separate = reasoning_record(0, 0, core::ReasoningSplit::separate);
  const auto joined = reasoning_record(0, 1, core::ReasoningSplit::joined);
  const auto plain = make_record(1, 1, 0, true);
  {
    auto database = AuditDatabase::create(path, make_header());
    REQUIRE(database);
    REQUIRE(database->record_batch({separate, joined, plain}));
  }

  SUBCASE("in its own columns and token blob") {
    const auto reasoning = stored_tokens(path, true);
    CHECK(reasoning.size() == 4);
    CHECK(stored_tokens(path, false).size() == 12);
    CHECK(query_text(path, "SELECT group_concat(reasoning_split, ',') FROM (SELECT "
                           "reasoning_split FROM requests ORDER BY id)") == "separate,joined,none");
    REQUIRE(reasoning.size() > 3);
    CHECK(reasoning[3].token == "</think>");
    CHECK(query_text(path, "SELECT count(reasoning) FROM packed_tokens") == "1");
  }
  SUBCASE("round-trips through load() and the streaming load") {
    auto database = AuditDatabase::open(path);
    REQUIRE(database);
    const auto loaded = load_or_fail(*database);
    REQUIRE(loaded.records.size() == 3);
    check_same(loaded.records[0], separate);
    check_same(loaded.records[1], joined);
    check_same(loaded.records[2], plain);
    std::vector<core::RequestRecord> visited;
    REQUIRE(database->load(
        [&](const core::AuditData&, int, const std::vector<core::RequestRecord>& records) {
          visited.insert(visited.end(), records.begin(), records.end());
          return core::Result<void>{};
        }));
    REQUIRE(visited.size() == 3);
    check_same(visited[0], separate);
    check_same(visited[1], joined);
    check_same(visited[2], plain);
  }
  SUBCASE("a replaced record leaves none of its old reasoning tokens") {
    auto database = AuditDatabase::open(path);
    REQUIRE(database);
    REQUIRE(database->record(reasoning_record(0, 0, core::ReasoningSplit::joined)));
    CHECK(stored_tokens(path, true).empty());
    CHECK(query_text(path, "SELECT count(reasoning) FROM packed_tokens") == "0");
  }
}

TEST_CASE("AuditDatabase::open of a database created before the reasoning columns") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto old_record =
      database_with_one_record(path, "DROP TABLE reasoning_tokens;"
                                     "ALTER TABLE requests DROP COLUMN reasoning_text;"
                                     "ALTER TABLE requests DROP COLUMN reasoning_split;");

  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  CHECK(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name LIKE "
                         "'reasoning_%'") == "2");
  // Its reasoning_tokens table was created with the columns, then packed away by the upgrade.
  CHECK(query_text(path, "SELECT count(*) FROM sqlite_master WHERE name = 'reasoning_tokens'") ==
        "0");
  CHECK(stored_tokens(path, true).empty());
  const auto separate = reasoning_record(0, 1, core::ReasoningSplit::separate);
  REQUIRE(database->record(separate));
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 2);
  check_same(loaded.records[0], old_record);
  CHECK(loaded.records[0].outcome.completion.reasoning_split == core::ReasoningSplit::none);
  check_same(loaded.records[1], separate);
}
