// The in-place upgrade of a schema version 1 database (a row per token) and of a version 2 one
// (blob format 1, every text stored) to version 3 (blob format 2, texts NULL where they are their
// tokens' texts), the reading of one that cannot be upgraded, and interning across records and
// opens.
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

// Records of every shape the older versions stored: tokens with 0, 1, 2 and 5 candidates, a failed
// request without tokens, the reasoning's own tokens, unknown log probabilities, bytes that are
// no UTF-8, a text that is not its tokens' texts and one that is.
std::vector<core::RequestRecord> older_records() {
  auto reasoning = make_record(1, 1, 0, true);
  reasoning.outcome.completion.reasoning_split = core::ReasoningSplit::separate;
  reasoning.outcome.completion.reasoning_text = "Hm.";
  reasoning.outcome.completion.reasoning_tokens = {
      token("Hm", -0.25, {{"Hm", -0.25}, {"Ok", -2.0}}),
      token("\xe2\x80", core::k_unknown_logprob, {{"\xe2\x80", core::k_unknown_logprob}}),
  };
  auto spelled = make_record(1, 1, 2, true);
  spelled.outcome.completion.text = "The answer is 42";
  return {make_record(0, 1, 0, true), make_record(0, 1, 1, false), reasoning,
          make_record(1, 1, 1, true, "fp_b"), spelled};
}

// What version 3 stores of older_records(), however it came to hold them: 16 answer and 2
// reasoning tokens in four packed rows of blob format 2; `text` NULL where it is the tokens' texts
// (the failed request's empty one, the spelled one), `reasoning_text` likewise (every record's but
// the reasoning one, whose "Hm." is not "Hm\xe2\x80"); every record as it was recorded.
void check_version_3(const std::string& path, const AuditDatabase& database) {
  const auto records = older_records();
  CHECK(query_text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "3");
  CHECK(query_text(path,
                   "SELECT count(*) FROM sqlite_master WHERE name IN ('tokens', "
                   "'reasoning_tokens', 'packed_tokens_version_2', 'requests_version_2')") == "0");
  CHECK(query_text(path, "SELECT group_concat(request_id, ',') FROM packed_tokens") == "1,3,4,5");
  CHECK(query_text(path, "SELECT group_concat(hex(substr(answer, 1, 1)) || coalesce(hex(substr("
                         "reasoning, 1, 1)), ''), ',') FROM packed_tokens") == "02,0202,02,02");
  CHECK(query_text(path, "SELECT group_concat(id, ',') FROM requests WHERE text IS NULL") == "2,5");
  CHECK(query_text(path, "SELECT group_concat(id, ',') FROM requests WHERE reasoning_text IS "
                         "NULL") == "1,2,4,5");
  CHECK(stored_tokens(path, false).size() == 16);
  CHECK(stored_tokens(path, true).size() == 2);
  const auto loaded = load_or_fail(database);
  REQUIRE(loaded.records.size() == records.size());
  for (std::size_t i = 0; i < records.size(); ++i) check_same(loaded.records[i], records[i]);
  // The streaming load fills the texts in from the tokens as the whole one does.
  std::vector<core::RequestRecord> visited;
  const auto streamed = database.load(
      [&](const core::AuditData&, int, const std::vector<core::RequestRecord>& prompt_records) {
        visited.insert(visited.end(), prompt_records.begin(), prompt_records.end());
        return core::Result<void>{};
      });
  REQUIRE_MESSAGE(streamed, (streamed ? "" : streamed.error().message));
  REQUIRE(visited.size() == records.size());
  // Visited by prompt: the records of prompt 0 (ids 1, 2), then of prompt 1 (ids 3, 4, 5).
  for (std::size_t i = 0; i < records.size(); ++i) check_same(visited[i], records[i]);
}

// The packed_tokens and requests rows of the file at `path`, as text, to compare two files.
std::string stored_rows(const std::string& path) {
  return query_text(path, "SELECT group_concat(request_id || ':' || coalesce(hex(answer), '-') || "
                          "':' || coalesce(hex(reasoning), '-'), ';') FROM packed_tokens") +
         query_text(path, "SELECT group_concat(id || ':' || coalesce(hex(text), '-') || ':' || "
                          "coalesce(hex(reasoning_text), '-'), ';') FROM requests");
}

} // namespace

TEST_CASE("AuditDatabase::open upgrades a version 1 database in place") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto records = older_records();
  version_1_database(path, records);
  // 4 + 0 + 4 + 4 + 4 answer rows and 2 reasoning rows.
  REQUIRE(query_text(path, "SELECT count(*) FROM tokens") == "16");
  REQUIRE(query_text(path, "SELECT count(*) FROM reasoning_tokens") == "2");

  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  REQUIRE(database->older_schema());
  CHECK(database->older_schema()->version == 1);
  CHECK(database->older_schema()->upgraded);
  CHECK(database->older_schema()->token_rows_packed == 18);
  check_version_3(path, *database);

  SUBCASE("records, replaces and opens again without upgrading twice") {
    auto replaced = make_record(0, 1, 0, true);
    replaced.outcome.completion.tokens[0].token = "A brand new text";
    REQUIRE(database->record(replaced));
    REQUIRE(database->record(make_record(2, 1, 0, true)));
    auto again = AuditDatabase::open(path);
    REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
    CHECK_FALSE(again->older_schema());
    const auto loaded = load_or_fail(*again);
    REQUIRE(loaded.records.size() == 6);
    check_same(loaded.records[4], replaced);
    check_same(loaded.records[5], make_record(2, 1, 0, true));
    // Texts are interned once per audit: the new record's were stored by the upgrade already.
    CHECK(query_text(path, "SELECT count(*) FROM token_texts WHERE text = CAST(' answer' AS "
                           "BLOB)") == "1");
    CHECK(query_text(path, "SELECT count(*) FROM token_texts WHERE text = CAST('A brand new "
                           "text' AS BLOB)") == "1");
  }
}

TEST_CASE("AuditDatabase::open upgrades a version 2 database in place") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto records = older_records();
  version_2_database(path, records);
  REQUIRE(query_text(path, "SELECT count(*) FROM requests WHERE text IS NULL OR reasoning_text "
                           "IS NULL") == "0");
  REQUIRE(query_text(path, "SELECT group_concat(hex(substr(answer, 1, 1)), ',') FROM "
                           "packed_tokens") == "01,01,01,01");

  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  REQUIRE(database->older_schema());
  CHECK(database->older_schema()->version == 2);
  CHECK(database->older_schema()->upgraded);
  CHECK(database->older_schema()->token_rows_packed == 18);
  check_version_3(path, *database);

  // What the upgrade wrote is what version 3 writes for the same records, byte for byte.
  const std::string fresh = dir.file("fresh.db");
  {
    auto created = create_or_fail(fresh, make_header());
    for (const auto& record : records) REQUIRE(created.record(record));
  }
  CHECK(stored_rows(path) == stored_rows(fresh));

  auto again = AuditDatabase::open(path);
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
  CHECK_FALSE(again->older_schema());
}

TEST_CASE("a version 3 database stores a text that is its tokens' texts as NULL") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto database = create_or_fail(path, make_header());
  const auto records = older_records();
  for (const auto& record : records) REQUIRE(database.record(record));
  check_version_3(path, database);
}

TEST_CASE("an older database with tokens of a missing request is not upgraded") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  SUBCASE("version 1") {
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
  SUBCASE("version 2") {
    version_2_database(path, {make_record(0, 1, 0, true)});
    run_sql(path, "INSERT INTO packed_tokens SELECT 9, answer, reasoning FROM packed_tokens;");
    const auto opened = AuditDatabase::open(path);
    REQUIRE_FALSE(opened);
    CHECK(opened.error().code == core::ErrorCode::input);
    CHECK(opened.error().message == "audit database '" + path + "': tokens of a missing request 9");
    CHECK(query_text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "2");
    CHECK(query_text(path, "SELECT group_concat(hex(substr(answer, 1, 1)), ',') FROM "
                           "packed_tokens") == "01,01");
  }
  SUBCASE("version 2 with a corrupt blob") {
    version_2_database(path, {make_record(0, 1, 0, true)});
    run_sql(path, "UPDATE packed_tokens SET answer = substr(answer, 1, 10);");
    const auto opened = AuditDatabase::open(path);
    REQUIRE_FALSE(opened);
    CHECK(opened.error().message ==
          "audit database '" + path + "': tokens of request 1: truncated");
    CHECK(query_text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "2");
  }
}

TEST_CASE("a read-only older database reads as it is") {
  // The process may be root, for whom no file is read-only: the reader is driven as open() drives
  // it when sqlite3_db_readonly() says so.
  for (const int version : {1, 2}) {
    CAPTURE(version);
    TempDir dir;
    const std::string path = dir.file("audit.db");
    const auto records = older_records();
    if (version == 1)
      version_1_database(path, records);
    else
      version_2_database(path, records);
    run_sql(path, "PRAGMA journal_mode=DELETE;");
    auto connection = store::detail::Connection::open(path, SQLITE_OPEN_READONLY);
    REQUIRE_MESSAGE(connection, (connection ? "" : connection.error().message));
    CHECK(sqlite3_db_readonly(connection->handle(), "main") == 1);
    const auto found = store::detail::check_schema_version(*connection);
    REQUIRE(found);
    CHECK(*found == version);
    const auto upgraded = store::detail::upgrade_schema(*connection);
    REQUIRE_FALSE(upgraded);
    CHECK(upgraded.error().code == core::ErrorCode::environment);
    const store::detail::RecordReader reader(
        *connection, store::detail::add_later_columns(*connection, version), version);
    core::AuditData data;
    REQUIRE(reader.read_header(data));
    REQUIRE(reader.read_records(data));
    REQUIRE(data.records.size() == records.size());
    for (std::size_t i = 0; i < records.size(); ++i) check_same(data.records[i], records[i]);
  }
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
