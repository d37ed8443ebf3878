// Completion::lone_surrogates is stored with each request and read back; a database from before
// the column gets it, every stored request counting zero.
#include <doctest/doctest.h>

#include <string>

#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace llmrepro::testing::store_support;
using store::AuditDatabase;
using testing::TempDir;

TEST_CASE("AuditDatabase: lone_surrogates round-trips") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  {
    auto database = create_or_fail(path, make_header());
    auto record = make_record(0, 1, 0, true);
    record.outcome.completion.lone_surrogates = 3;
    REQUIRE(database.record(record));
    REQUIRE(database.record(make_record(0, 1, 1, true)));
  }
  CHECK(query_text(path, "SELECT group_concat(lone_surrogates) FROM requests") == "3,0");
  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 2);
  CHECK(loaded.records[0].outcome.completion.lone_surrogates == 3);
  CHECK(loaded.records[1].outcome.completion.lone_surrogates == 0);
}

TEST_CASE("AuditDatabase::open of a database created without the lone_surrogates column") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  database_with_one_record(path, "ALTER TABLE requests DROP COLUMN lone_surrogates;");
  REQUIRE(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name = "
                           "'lone_surrogates'") == "0");
  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  CHECK(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name = "
                         "'lone_surrogates'") == "1");
  auto record = make_record(0, 1, 1, true);
  record.outcome.completion.lone_surrogates = 2;
  REQUIRE(database->record(record));
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == 2);
  CHECK(loaded.records[0].outcome.completion.lone_surrogates == 0);
  CHECK(loaded.records[1].outcome.completion.lone_surrogates == 2);
}
