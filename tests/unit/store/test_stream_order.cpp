// The order in which a streaming load hands the records over: prompts ascending, each prompt's
// records in recorded order, every record once, whatever order they were recorded in and whether
// or not the file has the index it walks.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <algorithm>
#include <string>
#include <vector>

#include "store/audit_database.hpp"
#include "store/detail/record_reader.hpp"
#include "store/detail/sqlite.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using store::AuditDatabase;
using testing::TempDir;

namespace {

core::RequestRecord record_of(int endpoint, int prompt, int concurrency, int repeat, bool ok,
                              std::string fingerprint = "fp_a") {
  auto record = make_record(prompt, concurrency, repeat, ok, std::move(fingerprint));
  record.planned.endpoint_index = endpoint;
  return record;
}

// An audit of four prompts and two endpoints whose records were recorded out of plan key order,
// endpoints and prompts interleaved, so that no prompt's records are in recorded order in the
// index of the plan key; one record replaced (recorded again last), one of an endpoint the header
// lacks and two of prompts the suite lacks.
void record_interleaved(const std::string& path) {
  auto header = make_header();
  for (const char* id : {"p-2", "p-3"}) {
    core::Prompt prompt = header.suite.prompts[1];
    prompt.id = id;
    header.suite.prompts.push_back(prompt);
  }
  auto database = create_or_fail(path, header);
  for (const auto& record :
       {record_of(1, 2, 1, 0, true), record_of(0, 1, 4, 1, true, "fp_b"),
        record_of(0, 2, 1, 1, false), record_of(1, 0, 1, 0, true, "fp_c"),
        record_of(0, 0, 4, 2, true), record_of(0, 0, 1, 0, true), record_of(1, 1, 1, 1, false),
        record_of(0, 2, 1, 0, true), record_of(1, 0, 4, 1, true), record_of(0, 3, 1, 0, true),
        record_of(7, 1, 1, 0, true, "fp_stray"), record_of(0, 9, 1, 0, false),
        record_of(1, -1, 1, 0, true), record_of(0, 0, 1, 0, true, "fp_replaced")})
    REQUIRE(database.record(record));
}

// Streams `database` and checks what the visitor saw against the whole load, which reads in
// recorded order: the prompts ascending, once each, and each prompt's records those of the whole
// load with its prompt_index, in the whole load's order, tokens included. Then the streaming
// load that keeps only the failures: they in recorded order, the rest counted, the fingerprints
// those of the whole load.
void check_streamed_in_order(const AuditDatabase& database, std::size_t stored = 13) {
  const auto whole = load_or_fail(database);
  REQUIRE(whole.records.size() == stored);
  std::vector<int> prompts;
  std::vector<core::RequestRecord> visited;
  const auto streamed = database.load(
      [&](const core::AuditData&, int prompt, const std::vector<core::RequestRecord>& records) {
        prompts.push_back(prompt);
        for (const auto& record : records) CHECK(record.planned.prompt_index == prompt);
        visited.insert(visited.end(), records.begin(), records.end());
        return core::Result<void>{};
      });
  REQUIRE_MESSAGE(streamed, (streamed ? "" : streamed.error().message));
  CHECK(prompts == std::vector<int>{-1, 0, 1, 2, 3, 9});
  auto expected = whole.records;
  std::stable_sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
    return a.planned.prompt_index < b.planned.prompt_index;
  });
  REQUIRE(visited.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    check_same(visited[i], expected[i]);
  }
  // Prompt 0 as recorded: endpoint 1's concurrency 1 repeat 0, endpoint 0's concurrency 4 repeat
  // 2, endpoint 1's concurrency 4 repeat 1, then endpoint 0's concurrency 1 repeat 0 again (the
  // replaced record); the index lists endpoint 0's two first.
  REQUIRE(visited.size() > 5);
  CHECK(visited[1].outcome.completion.system_fingerprint == "fp_c");
  CHECK(visited[2].planned.repeat == 2);
  CHECK(visited[3].planned.endpoint_index == 1);
  CHECK(visited[4].outcome.completion.system_fingerprint == "fp_replaced");
  REQUIRE(streamed->records.size() == whole.records.size());
  for (std::size_t i = 0; i < whole.records.size(); ++i)
    CHECK(streamed->records[i].planned == whole.records[i].planned);

  std::size_t failures_visited = 0;
  const auto failures = database.load(
      [&](const core::AuditData&, int, const std::vector<core::RequestRecord>& records) {
        failures_visited += records.size();
        return core::Result<void>{};
      },
      AuditDatabase::KeptRecords::failures);
  REQUIRE_MESSAGE(failures, (failures ? "" : failures.error().message));
  CHECK(failures_visited == whole.records.size());
  std::vector<core::PlannedRequest> failed;
  for (const auto& record : whole.records)
    if (!record.outcome.ok) failed.push_back(record.planned);
  REQUIRE(failures->records.size() == failed.size());
  for (std::size_t i = 0; i < failed.size(); ++i) CHECK(failures->records[i].planned == failed[i]);
  CHECK(failures->records_not_kept == whole.records.size() - failed.size());
  REQUIRE(failures->endpoints.size() == whole.endpoints.size());
  for (std::size_t e = 0; e < whole.endpoints.size(); ++e)
    CHECK(failures->endpoints[e].fingerprints == whole.endpoints[e].fingerprints);
}

// Rebuilds the requests table of the file at `path` from its CREATE statement with `from`
// replaced by `to` (dropping the UNIQUE constraint, a NOT NULL), rows and ids kept, then runs
// `then`: a hand-made file.
void rebuild_requests(const std::string& path, const std::string& from, const std::string& to,
                      const std::string& then = "") {
  std::string create = query_text(path, "SELECT sql FROM sqlite_master WHERE name = 'requests'");
  const std::size_t at = create.find(from);
  REQUIRE(at != std::string::npos);
  create.replace(at, from.size(), to);
  const std::string sql = "BEGIN; ALTER TABLE requests RENAME TO requests_before; " + create +
                          "; INSERT INTO requests SELECT * FROM requests_before; DROP TABLE "
                          "requests_before; " +
                          then + "; COMMIT;";
  run_sql(path, sql.c_str());
}

constexpr const char* k_unique = ",\n  UNIQUE (endpoint_index, prompt_index, concurrency, probe, "
                                 "repeat)";

bool indexed(const std::string& path) {
  auto connection = store::detail::Connection::open(path, SQLITE_OPEN_READONLY);
  REQUIRE_MESSAGE(connection, (connection ? "" : connection.error().message));
  const auto found = store::detail::has_endpoint_prompt_index(*connection);
  REQUIRE_MESSAGE(found, (found ? "" : found.error().message));
  return *found;
}

AuditDatabase open_or_fail(const std::string& path) {
  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  return std::move(*database);
}

} // namespace

TEST_CASE("a streaming load hands prompts over in ascending order, each in recorded order") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  record_interleaved(path);

  SUBCASE("walking the plan key's index, one cursor per endpoint") {
    CHECK(indexed(path));
    check_streamed_in_order(open_or_fail(path));
  }
  SUBCASE("and, without that index, through SQLite's sort of the whole table") {
    rebuild_requests(path, k_unique, "");
    CHECK_FALSE(indexed(path));
    check_streamed_in_order(open_or_fail(path));
  }
  SUBCASE("an index that does not list an endpoint's requests in prompt order is not walked") {
    rebuild_requests(path, k_unique, "",
                     "CREATE INDEX by_prompt ON requests (prompt_index, endpoint_index); "
                     "CREATE INDEX descending ON requests (endpoint_index, prompt_index DESC); "
                     "CREATE INDEX partial ON requests (endpoint_index, prompt_index) WHERE ok");
    CHECK_FALSE(indexed(path));
    check_streamed_in_order(open_or_fail(path));
  }
  SUBCASE("more endpoint values than a reader opens cursors for: the sorted query, same order") {
    {
      auto database = open_or_fail(path);
      for (int endpoint = 1000; endpoint < 1300; ++endpoint)
        REQUIRE(database.record(record_of(endpoint, 9, 1, 0, false)));
    }
    CHECK(indexed(path));
    check_streamed_in_order(open_or_fail(path), 13 + 300);
  }
  SUBCASE("a hand-made index is walked, a NULL endpoint_index read like any other value") {
    rebuild_requests(path, k_unique, "");
    rebuild_requests(path, "endpoint_index INTEGER NOT NULL", "endpoint_index INTEGER",
                     "CREATE INDEX by_endpoint ON requests (endpoint_index, prompt_index); "
                     "UPDATE requests SET endpoint_index = NULL WHERE id = 11");
    CHECK(indexed(path));
    check_streamed_in_order(open_or_fail(path));
  }
}
