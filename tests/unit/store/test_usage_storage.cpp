#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "store/audit_database.hpp"
#include "store/detail/record_reader.hpp"
#include "store/detail/schema.hpp"
#include "store/detail/sqlite.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using store::AuditDatabase;
using testing::TempDir;

namespace {

// A record whose endpoint said what the prompt and the reasoning used (either may be unknown).
core::RequestRecord usage_record(int repeat, std::optional<long> prompt,
                                 std::optional<long> reasoning) {
  core::RequestRecord record = make_record(0, 1, repeat, true);
  record.outcome.completion.usage = core::TokenUsage{prompt, reasoning};
  return record;
}

} // namespace

TEST_CASE("AuditDatabase: the usage the endpoint reported is stored, NULL where unknown") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto both = usage_record(0, 31, 12);
  const auto prompt_only = usage_record(1, 17, std::nullopt);
  const auto neither = usage_record(2, std::nullopt, std::nullopt);
  {
    auto database = create_or_fail(path, make_header());
    REQUIRE(database.record_batch({both, prompt_only, neither}));
  }
  CHECK(query_text(path, "SELECT group_concat(coalesce(usage_prompt_tokens, 'null') || '/' || "
                         "coalesce(usage_reasoning_tokens, 'null'), ',') FROM (SELECT * FROM "
                         "requests ORDER BY id)") == "31/12,17/null,null/null");
  auto database = AuditDatabase::open(path);
  REQUIRE(database);
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 3);
  check_same(loaded.records[0], both);
  check_same(loaded.records[1], prompt_only);
  check_same(loaded.records[2], neither);
  CHECK(loaded.records[0].outcome.completion.usage.prompt == 31);
  CHECK(loaded.records[2].outcome.completion.usage.reasoning == std::nullopt);
}

TEST_CASE("AuditDatabase::open of a database created before the usage columns") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto old_record =
      database_with_one_record(path, "ALTER TABLE requests DROP COLUMN usage_prompt_tokens;"
                                     "ALTER TABLE requests DROP COLUMN usage_reasoning_tokens;"
                                     "ALTER TABLE requests DROP COLUMN "
                                     "usage_cached_prompt_tokens;");
  REQUIRE(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name LIKE "
                           "'usage_%'") == "0");

  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  CHECK(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name LIKE "
                         "'usage_%'") == "3");
  const auto reported = usage_record(1, 40, 3);
  REQUIRE(database->record(reported));
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 2);
  check_same(loaded.records[0], old_record);
  CHECK(loaded.records[0].outcome.completion.usage == core::TokenUsage{});
  check_same(loaded.records[1], reported);
}

TEST_CASE("a read-only database from before the usage columns reads its usage as unknown") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto old_record =
      database_with_one_record(path, "PRAGMA journal_mode=DELETE;"
                                     "ALTER TABLE requests DROP COLUMN usage_prompt_tokens;"
                                     "ALTER TABLE requests DROP COLUMN usage_reasoning_tokens;"
                                     "ALTER TABLE requests DROP COLUMN "
                                     "usage_cached_prompt_tokens;");

  auto connection = store::detail::Connection::open(path, SQLITE_OPEN_READONLY);
  REQUIRE_MESSAGE(connection, (connection ? "" : connection.error().message));
  const store::detail::LaterColumns columns = store::detail::add_later_columns(*connection, 1);
  CHECK(columns.numbers);
  CHECK(columns.reasoning);
  CHECK_FALSE(columns.usage);
  CHECK_FALSE(columns.cache);
  const store::detail::RecordReader reader(*connection, columns, 1);
  core::AuditData data;
  REQUIRE(reader.read_header(data));
  REQUIRE(reader.read_records(data));
  REQUIRE(data.records.size() == 1);
  check_same(data.records[0], old_record);
  CHECK(data.records[0].outcome.completion.usage == core::TokenUsage{});
}

TEST_CASE("AuditDatabase: the cached prompt tokens the server reported, NULL where unknown") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto warm = usage_record(0, 31, std::nullopt);
  warm.outcome.completion.usage.cached_prompt = 24;
  auto cold = usage_record(1, 31, std::nullopt);
  cold.outcome.completion.usage.cached_prompt = 0;
  const auto unknown = usage_record(2, 31, std::nullopt);
  {
    auto database = create_or_fail(path, make_header());
    REQUIRE(database.record_batch({warm, cold, unknown}));
  }
  CHECK(query_text(path, "SELECT group_concat(coalesce(usage_cached_prompt_tokens, 'null'), ',') "
                         "FROM (SELECT * FROM requests ORDER BY id)") == "24,0,null");
  auto database = AuditDatabase::open(path);
  REQUIRE(database);
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 3);
  check_same(loaded.records[0], warm);
  check_same(loaded.records[1], cold);
  check_same(loaded.records[2], unknown);
  CHECK(loaded.records[0].outcome.completion.usage.cached_prompt == 24);
  CHECK(loaded.records[1].outcome.completion.usage.cached_prompt == 0);
  CHECK_FALSE(loaded.records[2].outcome.completion.usage.cached_prompt);
}

TEST_CASE("AuditDatabase::open adds the cached-prompt column to a database stored before it") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto old_record = database_with_one_record(
      path, "ALTER TABLE requests DROP COLUMN usage_cached_prompt_tokens;");
  REQUIRE(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name = "
                           "'usage_cached_prompt_tokens'") == "0");
  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  CHECK(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name = "
                         "'usage_cached_prompt_tokens'") == "1");
  auto warm = usage_record(1, 40, std::nullopt);
  warm.outcome.completion.usage.cached_prompt = 7;
  REQUIRE(database->record(warm));
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 2);
  check_same(loaded.records[0], old_record);
  CHECK_FALSE(loaded.records[0].outcome.completion.usage.cached_prompt);
  check_same(loaded.records[1], warm);
}
