// The in-place upgrade of a schema version 1 database (a row per token) to version 2 (packed
// tokens), the reading of one that cannot be upgraded, and interning across records and opens.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "store/audit_database.hpp"
#include "store/detail/record_reader.hpp"
#include "store/detail/schema.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using store::AuditDatabase;
using testing::TempDir;

namespace {

// Records of every shape version 1 stored: tokens with 0, 1, 2 and 5 candidates, a failed
// request without tokens, the reasoning's own tokens, unknown log probabilities, bytes that are
// no UTF-8.
std::vector<core::RequestRecord> version_1_records() {
  auto reasoning = make_record(1, 1, 0, true);
  reasoning.outcome.completion.reasoning_split = core::ReasoningSplit::separate;
  reasoning.outcome.completion.reasoning_text = "Hm.";
  reasoning.outcome.completion.reasoning_tokens = {
      token("Hm", -0.25, {{"Hm", -0.25}, {"Ok", -2.0}}),
      token("\xe2\x80", core::k_unknown_logprob, {{"\xe2\x80", core::k_unknown_logprob}}),
  };
  return {make_record(0, 1, 0, true), make_record(0, 1, 1, false), reasoning,
          make_record(1, 1, 1, true, "fp_b")};
}

} // namespace

TEST_CASE("AuditDatabase::open upgrades a version 1 database in place") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto records = version_1_records();
  version_1_database(path, records);
  // 4 + 0 + 4 + 4 answer rows and 2 reasoning rows.
  REQUIRE(query_text(path, "SELECT count(*) FROM tokens") == "12");
  REQUIRE(query_text(path, "SELECT count(*) FROM reasoning_tokens") == "2");

  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  REQUIRE(database->older_schema());
  CHECK(database->older_schema()->version == 1);
  CHECK(database->older_schema()->upgraded);
  CHECK(database->older_schema()->token_rows_packed == 14);
  CHECK(query_text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "2");
  CHECK(query_text(path, "SELECT count(*) FROM sqlite_master WHERE name IN ('tokens', "
                         "'reasoning_tokens')") == "0");
  // One row per request with tokens; the failed one has none.
  CHECK(query_text(path, "SELECT group_concat(request_id, ',') FROM packed_tokens") == "1,3,4");
  CHECK(stored_tokens(path, false).size() == 12);
  CHECK(stored_tokens(path, true).size() == 2);

  SUBCASE("every record reads back as it was recorded") {
    const auto loaded = load_or_fail(*database);
    REQUIRE(loaded.records.size() == records.size());
    for (std::size_t i = 0; i < records.size(); ++i) check_same(loaded.records[i], records[i]);
  }
  SUBCASE("records, replaces and opens again without upgrading twice") {
    auto replaced = make_record(0, 1, 0, true);
    replaced.outcome.completion.tokens[0].token = "A brand new text";
    REQUIRE(database->record(replaced));
    REQUIRE(database->record(make_record(2, 1, 0, true)));
    auto again = AuditDatabase::open(path);
    REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
    CHECK_FALSE(again->older_schema());
    const auto loaded = load_or_fail(*again);
    REQUIRE(loaded.records.size() == 5);
    check_same(loaded.records[3], replaced);
    check_same(loaded.records[4], make_record(2, 1, 0, true));
    // Texts are interned once per audit: the new record's were stored by the upgrade already.
    CHECK(query_text(path, "SELECT count(*) FROM token_texts WHERE text = CAST(' answer' AS "
                           "BLOB)") == "1");
    CHECK(query_text(path, "SELECT count(*) FROM token_texts WHERE text = CAST('A brand new "
                           "text' AS BLOB)") == "1");
  }
}

TEST_CASE("a version 1 database with a token row of a missing request is not upgraded") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  version_1_database(path, {make_record(0, 1, 0, true)});
  run_sql(path, "INSERT INTO tokens (request_id, position, token, logprob) VALUES (9, 0, 'x', "
                "-1.0);");
  const auto opened = AuditDatabase::open(path);
  REQUIRE_FALSE(opened);
  CHECK(opened.error().code == core::ErrorCode::input);
  CHECK(opened.error().message ==
        "audit database '" + path + "': token rows of a missing request 9");
  // Rolled back: still version 1, every row there.
  CHECK(query_text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "1");
  CHECK(query_text(path, "SELECT count(*) FROM tokens") == "5");
}

TEST_CASE("a read-only version 1 database reads as it is") {
  // The process may be root, for whom no file is read-only: the reader is driven as open() drives
  // it when sqlite3_db_readonly() says so.
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto records = version_1_records();
  version_1_database(path, records);
  run_sql(path, "PRAGMA journal_mode=DELETE;");
  auto connection = store::detail::Connection::open(path, SQLITE_OPEN_READONLY);
  REQUIRE_MESSAGE(connection, (connection ? "" : connection.error().message));
  CHECK(sqlite3_db_readonly(connection->handle(), "main") == 1);
  const auto version = store::detail::check_schema_version(*connection);
  REQUIRE(version);
  CHECK(*version == 1);
  const auto upgraded = store::detail::upgrade_to_version_2(*connection);
  REQUIRE_FALSE(upgraded);
  CHECK(upgraded.error().code == core::ErrorCode::environment);
  const store::detail::RecordReader reader(*connection,
                                           store::detail::add_later_columns(*connection, 1), 1);
  core::AuditData data;
  REQUIRE(reader.read_header(data));
  REQUIRE(reader.read_records(data));
  REQUIRE(data.records.size() == records.size());
  for (std::size_t i = 0; i < records.size(); ++i) check_same(data.records[i], records[i]);
}

TEST_CASE("a corrupt token blob is an error naming the request") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  {
    auto database = create_or_fail(path, make_header());
    REQUIRE(database.record_batch({make_record(0, 1, 0, true), make_record(0, 1, 1, true)}));
  }
  run_sql(path, "UPDATE packed_tokens SET answer = substr(answer, 1, 10) WHERE request_id = 2;");
  auto database = AuditDatabase::open(path);
  REQUIRE(database);
  const std::string expected = "audit database '" + path + "': tokens of request 2: truncated";
  const auto loaded = database->load();
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code == core::ErrorCode::input);
  CHECK(loaded.error().message == expected);
  const auto streamed =
      database->load([](const core::AuditData&, int, const std::vector<core::RequestRecord>&) {
        return core::Result<void>{};
      });
  REQUIRE_FALSE(streamed);
  CHECK(streamed.error().message == expected);
}
