// Completion::tool_calls is stored with each request (requests.tool_calls, NULL without calls)
// and read back; a database from before the column gets it, every stored request without calls.
#include <doctest/doctest.h>

#include <string>

#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace llmrepro::testing::store_support;
using store::AuditDatabase;
using testing::TempDir;

namespace {

std::vector<core::ToolCall> two_calls() {
  return {{"filter_beliefs", R"({"term":"x"})"}, {"final_answer", R"({"answer":2})"}};
}

} // namespace

TEST_CASE("AuditDatabase: tool_calls round-trips") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  {
    auto database = create_or_fail(path, make_header());
    auto record = make_record(0, 1, 0, true);
    record.outcome.completion.tool_calls = two_calls();
    REQUIRE(database.record(record));
    REQUIRE(database.record(make_record(0, 1, 1, true)));
  }
  CHECK(query_text(path, "SELECT tool_calls FROM requests WHERE repeat = 0") ==
        R"([{"arguments":{"term":"x"},"name":"filter_beliefs"},)"
        R"({"arguments":{"answer":2},"name":"final_answer"}])");
  CHECK(query_text(path, "SELECT count(*) FROM requests WHERE tool_calls IS NULL") == "1");
  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 2);
  CHECK(loaded.records[0].outcome.completion.tool_calls == two_calls());
  CHECK(loaded.records[1].outcome.completion.tool_calls.empty());
}

TEST_CASE("AuditDatabase::open of a database created without the tool_calls column") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  database_with_one_record(path, "ALTER TABLE requests DROP COLUMN tool_calls;");
  const char* has_column =
      "SELECT count(*) FROM pragma_table_info('requests') WHERE name = 'tool_calls'";
  REQUIRE(query_text(path, has_column) == "0");
  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  CHECK(query_text(path, has_column) == "1");
  auto record = make_record(0, 1, 1, true);
  record.outcome.completion.tool_calls = two_calls();
  REQUIRE(database->record(record));
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 2);
  CHECK(loaded.records[0].outcome.completion.tool_calls.empty());
  CHECK(loaded.records[1].outcome.completion.tool_calls == two_calls());
}

TEST_CASE("AuditDatabase: a malformed stored tool_calls value is a corrupt database") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  database_with_one_record(path, "UPDATE requests SET tool_calls = '[{\"arguments\":1}]';");
  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  auto loaded = database->load();
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code == core::ErrorCode::input);
  CHECK_MESSAGE(loaded.error().message.find("tool calls of request 1: tool calls: call 0: `name` "
                                            "must be a string") != std::string::npos,
                loaded.error().message);
}
