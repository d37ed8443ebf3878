#include <doctest/doctest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "store/audit_database.hpp"
#include "store/database_sink.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;
using store::AuditDatabase;
using store::DatabaseSink;

namespace {

using testing::TempDir;

constexpr int k_prompts = 32;

AuditDatabase create_audit(const std::string& path) {
  core::AuditData header;
  header.info = {"audit-sink", 1714567890123, 0, "partial"};
  header.config.plan.api = "openai-chat";
  header.config.plan.runs = 1;
  header.config.plan.levels = {1};
  header.endpoints = {{"http://127.0.0.1:8000", "openai-chat", "m", false, {}}};
  for (int i = 0; i < k_prompts; ++i) {
    core::Prompt prompt;
    prompt.id = "p" + std::to_string(i);
    prompt.text = "prompt " + std::to_string(i);
    header.suite.prompts.push_back(prompt);
  }
  auto created = AuditDatabase::create(path, header);
  REQUIRE(created);
  return std::move(*created);
}

core::RequestRecord sink_record(int prompt) {
  core::RequestRecord record;
  record.planned = {0, prompt, 1, core::ProbeKind::sweep, 0};
  record.outcome.ok = true;
  record.outcome.http_status = 200;
  record.outcome.attempts = 1;
  record.outcome.started_ms = 1000 + prompt;
  record.outcome.finished_ms = 2000 + prompt;
  auto& completion = record.outcome.completion;
  completion.text = "text " + std::to_string(prompt);
  completion.has_logprobs = true;
  completion.finish_reason = "length";
  completion.completion_tokens = 2;
  completion.tokens = {{"a" + std::to_string(prompt), -0.25, {{"a", -0.25}, {"b", -1.5}}},
                       {"c", -0.5, {}}};
  return record;
}

// The prompt indexes of the stored records, in recorded order.
std::vector<int> stored_prompts(const AuditDatabase& database) {
  auto loaded = database.load();
  REQUIRE(loaded);
  std::vector<int> prompts;
  for (const auto& record : loaded->records) prompts.push_back(record.planned.prompt_index);
  return prompts;
}

// A second connection to the audit database, as another process would hold.
class Connection {
public:
  explicit Connection(const std::string& path) {
    REQUIRE(sqlite3_open(path.c_str(), &m_db) == SQLITE_OK);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { sqlite3_close(m_db); }
  void exec(const char* sql) {
    char* message = nullptr;
    int code = sqlite3_exec(m_db, sql, nullptr, nullptr, &message);
    INFO((message != nullptr ? message : ""));
    sqlite3_free(message);
    REQUIRE(code == SQLITE_OK);
  }

private:
  sqlite3* m_db = nullptr;
};

std::vector<int> range(int from, int to) {
  std::vector<int> values;
  for (int i = from; i < to; ++i) values.push_back(i);
  return values;
}

} // namespace

TEST_CASE("DatabaseSink") {
  TempDir dir("sink");
  const std::string path = dir.file("audit.db");
  auto database = create_audit(path);

  SUBCASE("records are committed in the order they were queued") {
    DatabaseSink sink(database, 4, 3);
    core::RecordSink& as_sink = sink;
    for (int i = 0; i < 20; ++i) REQUIRE(as_sink.record(sink_record(i)));
    REQUIRE(sink.finish());
    CHECK(sink.committed() == 20);
    CHECK(stored_prompts(database) == range(0, 20));
    auto loaded = database.load();
    REQUIRE(loaded);
    CHECK(loaded->records[7].outcome.completion.text == "text 7");
    CHECK(loaded->records[7].outcome.completion.tokens[0].token == "a7");
    CHECK(loaded->records[7].outcome.completion.tokens[0].top[1].token == "b");
  }
  SUBCASE("records queued while a commit waits go in one transaction") {
    Connection other(path);
    other.exec("BEGIN IMMEDIATE");
    DatabaseSink sink(database, 256, 64);
    for (int i = 0; i < 10; ++i) REQUIRE(sink.record(sink_record(i)));
    // The writer's first transaction waits for the lock; everything else queues behind it.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(sink.committed() == 0);
    other.exec("COMMIT");
    REQUIRE(sink.finish());
    CHECK(sink.committed() == 10);
    CHECK(sink.transactions() <= 2);
    CHECK(stored_prompts(database) == range(0, 10));
  }
  SUBCASE("a transaction holds at most max_batch records") {
    Connection other(path);
    other.exec("BEGIN IMMEDIATE");
    DatabaseSink sink(database, 256, 4);
    for (int i = 0; i < 10; ++i) REQUIRE(sink.record(sink_record(i)));
    other.exec("COMMIT");
    REQUIRE(sink.finish());
    CHECK(sink.transactions() >= 3);
    CHECK(sink.transactions() <= 4);
    CHECK(stored_prompts(database) == range(0, 10));
  }
  SUBCASE("record() waits while the queue is full") {
    Connection other(path);
    other.exec("BEGIN IMMEDIATE");
    DatabaseSink sink(database, 2, 1);
    std::atomic<int> returned{0};
    std::thread producer([&] {
      for (int i = 0; i < 6; ++i) {
        if (!sink.record(sink_record(i))) return;
        ++returned;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    // One record in the blocked transaction and two queued: the fourth call waits.
    CHECK(returned.load() <= 3);
    other.exec("COMMIT");
    producer.join();
    CHECK(returned.load() == 6);
    REQUIRE(sink.finish());
    CHECK(stored_prompts(database) == range(0, 6));
  }
  SUBCASE("a failed commit is reported by finish() and keeps what was committed") {
    Connection other(path);
    other.exec("CREATE TRIGGER refuse_5 BEFORE INSERT ON requests WHEN NEW.prompt_index = 5 "
               "BEGIN SELECT RAISE(ABORT, 'scripted failure'); END");
    DatabaseSink sink(database, 256, 64);
    for (int i = 0; i < 5; ++i) REQUIRE(sink.record(sink_record(i)));
    while (sink.committed() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(sink.record(sink_record(5)));
    auto finished = sink.finish();
    REQUIRE_FALSE(finished);
    CHECK(finished.error().code == core::ErrorCode::environment);
    CHECK(finished.error().message ==
          "audit database '" + path + "': cannot store a record: scripted failure");
    CHECK(sink.committed() == 5);
    CHECK(stored_prompts(database) == range(0, 5));
    CHECK_FALSE(sink.record(sink_record(6)));
  }
  SUBCASE("a failed commit is reported by the next record()") {
    Connection other(path);
    other.exec("CREATE TRIGGER refuse_0 BEFORE INSERT ON requests WHEN NEW.prompt_index = 0 "
               "BEGIN SELECT RAISE(ABORT, 'scripted failure'); END");
    DatabaseSink sink(database, 256, 64);
    REQUIRE(sink.record(sink_record(0)));
    core::Result<void> later;
    for (int i = 1; i < 5000 && later; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      later = sink.record(sink_record(1 + i % 8));
    }
    REQUIRE_FALSE(later);
    CHECK(later.error().message ==
          "audit database '" + path + "': cannot store a record: scripted failure");
    CHECK_FALSE(sink.finish());
    CHECK(stored_prompts(database).empty());
  }
  SUBCASE("record() after finish() is refused") {
    DatabaseSink sink(database);
    REQUIRE(sink.record(sink_record(0)));
    REQUIRE(sink.finish());
    REQUIRE(sink.finish());
    auto late = sink.record(sink_record(1));
    REQUIRE_FALSE(late);
    CHECK(late.error().code == core::ErrorCode::internal);
    CHECK(stored_prompts(database) == std::vector<int>{0});
  }
}
