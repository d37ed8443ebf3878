#include <doctest/doctest.h>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "store/audit_database.hpp"
#include "store/database_sink.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using core::ErrorCode;
using store::AuditDatabase;

using namespace testing::store_support;
using testing::TempDir;

TEST_CASE("AuditDatabase::load") {
  TempDir dir;
  const auto header = make_header();
  const std::string path = dir.file("audit.db");
  const std::vector<core::RequestRecord> records = {
      make_record(0, 1, 0, true, "fp_b"), make_record(1, 1, 0, false),
      make_record(0, 4, 0, true, "fp_a"), make_record(0, 4, 1, true, ""),
      make_record(1, 4, 2, true, "fp_a")};
  {
    auto database = create_or_fail(path, header);
    for (const auto& record : records) REQUIRE(database.record(record));
  }
  // A failed record's fingerprint never counts, and neither does another endpoint's.
  auto stray = make_record(1, 64, 0, false);
  stray.outcome.completion.system_fingerprint = "fp_failed";
  auto other = make_record(1, 64, 1, true, "fp_other");
  other.planned.endpoint_index = 1;

  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  REQUIRE(database->record(stray));
  REQUIRE(database->record(other));
  const auto loaded = load_or_fail(*database);

  SUBCASE("info, config, suite, endpoints and errors round-trip") {
    CHECK(loaded.info.id == header.info.id);
    CHECK(loaded.info.started_ms == header.info.started_ms);
    CHECK(loaded.info.finished_ms == 0);
    CHECK(loaded.info.status == "partial");
    check_same_config(loaded.config, header.config);
    CHECK(loaded.suite.source == header.suite.source);
    REQUIRE(loaded.suite.prompts.size() == 2);
    check_same_prompt(loaded.suite.prompts[0], header.suite.prompts[0]);
    check_same_prompt(loaded.suite.prompts[1], header.suite.prompts[1]);
    CHECK(loaded.suite.prompts[0].is_chat());
    CHECK_FALSE(loaded.suite.prompts[1].is_chat());
    CHECK(loaded.errors == header.errors);
    REQUIRE(loaded.endpoints.size() == 2);
    CHECK(loaded.endpoints[0].url == "http://127.0.0.1:8000");
    CHECK(loaded.endpoints[0].dialect == "openai-chat");
    CHECK(loaded.endpoints[0].model == "m-a");
    CHECK_FALSE(loaded.endpoints[0].embedded);
    CHECK(loaded.endpoints[1].embedded);
  }
  SUBCASE("records come back in recorded order with every token and candidate") {
    REQUIRE(loaded.records.size() == 7);
    for (std::size_t i = 0; i < records.size(); ++i) check_same(loaded.records[i], records[i]);
    check_same(loaded.records[5], stray);
    check_same(loaded.records[6], other);
    CHECK(std::isinf(loaded.records[0].outcome.completion.tokens[3].top[3].logprob));
  }
  SUBCASE("fingerprints are the distinct ones of successful records, per endpoint, sorted") {
    CHECK(loaded.endpoints[0].fingerprints == std::vector<std::string>{"fp_a", "fp_b"});
    CHECK(loaded.endpoints[1].fingerprints == std::vector<std::string>{"fp_other"});
  }
  SUBCASE("absent optional gates stay absent") {
    auto bare = make_header();
    bare.config.gates = {};
    const auto bare_path = dir.file("bare.db");
    const auto bare_loaded = load_or_fail(create_or_fail(bare_path, bare));
    CHECK_FALSE(bare_loaded.config.gates.max_unique.has_value());
    CHECK_FALSE(bare_loaded.config.gates.max_unstable_rate.has_value());
    CHECK_FALSE(bare_loaded.config.gates.min_tara.has_value());
    CHECK_FALSE(bare_loaded.config.gates.max_logprob_drift.has_value());
    CHECK_FALSE(bare_loaded.config.gates.fail_on.any());
    CHECK(bare_loaded.records.empty());
    // Nor are the engine's settings or the header names invented.
    CHECK_FALSE(bare_loaded.config.plan.engine.has_value());
    CHECK_FALSE(bare_loaded.config.plan.header_names.has_value());
    CHECK(bare_loaded.config.plan.logprobs_form == "auto");
  }
  SUBCASE("the engine's settings and the header names round-trip") {
    auto engined = make_header();
    engined.config.plan.engine = core::EngineSettings{4, true, false, 99};
    engined.config.plan.header_names = std::vector<std::string>{"X-Org", "X-Team"};
    engined.config.plan.logprobs_form = "together";
    const auto engined_loaded = load_or_fail(create_or_fail(dir.file("engined.db"), engined));
    CHECK(engined_loaded.config.plan.logprobs_form == "together");
    REQUIRE(engined_loaded.config.plan.engine.has_value());
    CHECK(*engined_loaded.config.plan.engine == core::EngineSettings{4, true, false, 99});
    CHECK(engined_loaded.config.plan.header_names == engined.config.plan.header_names);
  }
}

TEST_CASE("AuditDatabase::record") {
  TempDir dir;
  auto database = create_or_fail(dir.file("audit.db"), make_header());

  SUBCASE("a record with a stored key replaces it and its tokens") {
    auto first = make_record(0, 4, 2, true);
    REQUIRE(database.record(first));
    REQUIRE(database.record(make_record(1, 1, 0, true)));
    auto retry = make_record(0, 4, 2, true, "fp_retry");
    retry.outcome.completion.tokens.resize(2);
    retry.outcome.completion.text = "The answer";
    REQUIRE(database.record(retry));
    const auto loaded = load_or_fail(database);
    REQUIRE(loaded.records.size() == 2);
    check_same(loaded.records[0], make_record(1, 1, 0, true));
    check_same(loaded.records[1], retry);
  }
  SUBCASE("a failed record is replaced by the successful retry of --resume") {
    REQUIRE(database.record(make_record(1, 4, 0, false)));
    REQUIRE(database.record(make_record(1, 4, 0, true)));
    const auto loaded = load_or_fail(database);
    REQUIRE(loaded.records.size() == 1);
    check_same(loaded.records[0], make_record(1, 4, 0, true));
  }
  SUBCASE("keys differing only in probe or endpoint are distinct") {
    auto a = make_record(0, 1, 0, true);
    auto b = a;
    b.planned.probe = core::ProbeKind::mixed;
    auto c = a;
    c.planned.endpoint_index = 1;
    REQUIRE(database.record(a));
    REQUIRE(database.record(b));
    REQUIRE(database.record(c));
    CHECK(load_or_fail(database).records.size() == 3);
  }
  SUBCASE("long completions keep every token and candidate") {
    // Lengths about version 1's 32-row batches, kept as plain lengths of one blob.
    for (const std::size_t length : {std::size_t{31}, std::size_t{32}, std::size_t{70}}) {
      auto record = make_record(0, 4, static_cast<int>(length), true);
      auto& tokens = record.outcome.completion.tokens;
      const auto pattern = tokens;
      tokens.clear();
      for (std::size_t i = 0; i < length; ++i) {
        auto token = pattern[i % pattern.size()];
        token.token = token.token + ("#" + std::to_string(i));
        token.logprob -= static_cast<double>(i) / 64.0;
        tokens.push_back(token);
      }
      record.outcome.completion.completion_tokens = static_cast<long>(length);
      REQUIRE(database.record(record));
      const auto loaded = load_or_fail(database);
      check_same(loaded.records.back(), record);
    }
  }
  SUBCASE("through the DatabaseSink") {
    store::DatabaseSink sink(database);
    core::RecordSink& as_sink = sink;
    REQUIRE(as_sink.record(make_record(0, 8, 3, true)));
    REQUIRE(sink.finish());
    const auto loaded = load_or_fail(database);
    REQUIRE(loaded.records.size() == 1);
    check_same(loaded.records[0], make_record(0, 8, 3, true));
  }
}

// A successful record whose endpoint sent log probabilities that were no finite number: unknown
// ones (NaN) in every column that holds one, and the counts of what it sent.
core::RequestRecord make_unknown_logprobs_record(int prompt, int repeat) {
  auto record = make_record(prompt, 1, repeat, true);
  const double unknown = core::k_unknown_logprob;
  record.outcome.completion.tokens = {
      token("a", unknown, {{"b", -0.5}, {"a", unknown}}),
      token("c", -0.25, {{"c", -0.25}, {"d", -1.0}, {"e", unknown}, {"f", unknown}}),
      token("g", -0.75, {{"g", unknown}, {"h", unknown}, {"i", -2.0}, {"j", -3.0}}),
  };
  record.outcome.completion.text = "acg";
  record.outcome.completion.completion_tokens = 3;
  auto& numbers = record.outcome.completion.numbers;
  numbers.nan = 1;
  numbers.infinity = 2;
  numbers.negative_infinity = 3;
  numbers.overflow = 4;
  numbers.null = 5;
  return record;
}

TEST_CASE("AuditDatabase: unknown log probabilities and number counts") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  const auto header = make_header();
  const auto wild = make_unknown_logprobs_record(0, 0);
  const auto plain = make_record(1, 1, 0, true);
  {
    auto database = create_or_fail(path, header);
    REQUIRE(database.record_batch({wild, plain}));
  }

  SUBCASE("NaN is stored as unknown in the token blobs, wherever a log probability is") {
    const auto tokens = stored_tokens(path, false);
    REQUIRE(tokens.size() == 7); // 3 of the wild record, 4 of the plain one
    const auto count = [&](auto&& holds) {
      return std::count_if(tokens.begin(), tokens.end(), holds);
    };
    CHECK(count([](const auto& t) { return std::isnan(t.logprob); }) == 1);
    CHECK(count([](const auto& t) { return !t.top.empty() && std::isnan(t.top[0].logprob); }) == 1);
    CHECK(count([](const auto& t) { return t.top.size() > 1 && std::isnan(t.top[1].logprob); }) ==
          2);
    REQUIRE(tokens[1].token == "c");
    REQUIRE(tokens[1].top.size() == 4);
    CHECK(tokens[1].top[2].token == "e");
    CHECK(std::isnan(tokens[1].top[2].logprob));
    CHECK(tokens[1].top[3].token == "f");
    CHECK(std::isnan(tokens[1].top[3].logprob));
    CHECK(query_text(path, "SELECT numbers_nan || numbers_infinity || numbers_negative_infinity "
                           "|| numbers_overflow || numbers_null FROM requests WHERE "
                           "prompt_index = 0") == "12345");
  }
  SUBCASE("both round-trip through load()") {
    auto database = AuditDatabase::open(path);
    REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
    const auto loaded = load_or_fail(*database);
    REQUIRE(loaded.records.size() == 2);
    check_same(loaded.records[0], wild);
    check_same(loaded.records[1], plain);
    CHECK(std::isnan(loaded.records[0].outcome.completion.tokens[0].logprob));
    CHECK(loaded.records[0].outcome.completion.numbers.total() == 15);
    CHECK(loaded.records[1].outcome.completion.numbers.total() == 0);
  }
  SUBCASE("and through the streaming load") {
    auto database = AuditDatabase::open(path);
    REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
    std::vector<core::RequestRecord> visited;
    auto loaded = database->load(
        [&](const core::AuditData&, int, const std::vector<core::RequestRecord>& records) {
          visited.insert(visited.end(), records.begin(), records.end());
          return core::Result<void>{};
        });
    REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().message));
    REQUIRE(visited.size() == 2);
    check_same(visited[0], wild);
    check_same(visited[1], plain);
    // The records kept without their tokens still carry the counts.
    REQUIRE(loaded->records.size() == 2);
    CHECK(loaded->records[0].outcome.completion.numbers == wild.outcome.completion.numbers);
  }
  SUBCASE("candidates written as \"nan\" before null was read back as unknown") {
    // A version 1 file of the same records whose JSON says "nan", as builds before null wrote
    // it: the upgrade reads it as unknown.
    downgrade_to_version_1(path, {wild, plain});
    run_sql(path, R"(UPDATE tokens SET more = '[["e","nan"],["f",-1.5]]' WHERE token = 'c';)");
    auto database = AuditDatabase::open(path);
    REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
    const auto loaded = load_or_fail(*database);
    const auto& top = loaded.records[0].outcome.completion.tokens[1].top;
    REQUIRE(top.size() == 4);
    CHECK(std::isnan(top[2].logprob));
    CHECK(top[3].logprob == -1.5);
  }
}

TEST_CASE("AuditDatabase::open of a database created without the numbers columns") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  // The requests table as builds before the numbers_* columns created it.
  const auto old_record =
      database_with_one_record(path, "ALTER TABLE requests DROP COLUMN numbers_nan;"
                                     "ALTER TABLE requests DROP COLUMN numbers_infinity;"
                                     "ALTER TABLE requests DROP COLUMN numbers_negative_infinity;"
                                     "ALTER TABLE requests DROP COLUMN numbers_overflow;"
                                     "ALTER TABLE requests DROP COLUMN numbers_null;");
  REQUIRE(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name LIKE "
                           "'numbers_%'") == "0");

  auto database = AuditDatabase::open(path);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  SUBCASE("gets the columns, every stored request counting zero") {
    CHECK(query_text(path, "SELECT count(*) FROM pragma_table_info('requests') WHERE name LIKE "
                           "'numbers_%'") == "5");
    const auto loaded = load_or_fail(*database);
    REQUIRE(loaded.records.size() == 1);
    check_same(loaded.records[0], old_record);
    CHECK(loaded.records[0].outcome.completion.numbers.total() == 0);
    // The columns came within version 1; the token rows were then packed (version 3).
    CHECK(query_text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "3");
  }
  SUBCASE("records and resumes with the counts, and opens again") {
    const auto wild = make_unknown_logprobs_record(1, 0);
    REQUIRE(database->record(wild));
    CHECK(database->recorded_successes()->size() == 2);
    auto again = AuditDatabase::open(path);
    REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
    const auto loaded = load_or_fail(*again);
    REQUIRE(loaded.records.size() == 2);
    check_same(loaded.records[0], old_record);
    check_same(loaded.records[1], wild);
  }
}

TEST_CASE("AuditDatabase::recorded_successes") {
  TempDir dir;
  auto database = create_or_fail(dir.file("audit.db"), make_header());
  REQUIRE(database.record(make_record(0, 1, 1, true)));
  REQUIRE(database.record(make_record(1, 1, 0, false)));
  auto prefix = make_record(1, 8, 4, true);
  prefix.planned.probe = core::ProbeKind::prefix;
  REQUIRE(database.record(prefix));
  const auto keys = database.recorded_successes();
  REQUIRE(keys);
  REQUIRE(keys->size() == 2);
  CHECK((*keys)[0] == core::PlannedRequest{0, 0, 1, core::ProbeKind::sweep, 1});
  CHECK((*keys)[1] == core::PlannedRequest{0, 1, 8, core::ProbeKind::prefix, 4});
}

TEST_CASE("AuditDatabase::set_status") {
  TempDir dir;
  auto database = create_or_fail(dir.file("audit.db"), make_header());
  REQUIRE(database.set_status("complete", 1714567999000));
  auto loaded = load_or_fail(database);
  CHECK(loaded.info.status == "complete");
  CHECK(loaded.info.finished_ms == 1714567999000);
  const auto bad = database.set_status("done", 1);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::internal);
  CHECK(bad.error().message.find("'done'") != std::string::npos);
  CHECK(load_or_fail(database).info.status == "complete");
}

TEST_CASE("AuditDatabase::store_probe_activity") {
  TempDir dir;
  auto database = create_or_fail(dir.file("audit.db"), make_header());
  CHECK(load_or_fail(database).probe_activity.empty());
  core::ProbeActivity activity;
  activity.filler_sent = 7;
  activity.filler_failed = 1;
  activity.primes_sent = 4;
  activity.flushes_sent = 2;
  activity.flushes_failed = 2;
  activity.flush_looked_up = true;
  REQUIRE(database.store_probe_activity({activity}));
  activity.flush_route = "/flush_cache"; // a second run replaces the first
  REQUIRE(database.store_probe_activity({activity, core::ProbeActivity{}}));
  const auto loaded = load_or_fail(database).probe_activity;
  REQUIRE(loaded.size() == 2);
  CHECK(loaded[0].filler_sent == 7);
  CHECK(loaded[0].filler_failed == 1);
  CHECK(loaded[0].primes_sent == 4);
  CHECK(loaded[0].primes_failed == 0);
  CHECK(loaded[0].flushes_sent == 2);
  CHECK(loaded[0].flushes_failed == 2);
  CHECK(loaded[0].flush_looked_up);
  CHECK(loaded[0].flush_route == "/flush_cache");
  CHECK_FALSE(loaded[1].flush_looked_up);
  CHECK(loaded[0].filler_levels.empty());
}

TEST_CASE("AuditDatabase::store_probe_activity keeps the fillers per level and cut long prompts") {
  TempDir dir;
  auto database = create_or_fail(dir.file("audit.db"), make_header());
  core::ProbeActivity activity;
  activity.filler_sent = 72;
  core::FillerLevel& eight = core::filler_level(activity, 8);
  eight.sent = 48;
  eight.refused = 12;
  eight.shortened = 3;
  eight.refusal = "HTTP 400: request (300 tokens) exceeds the available context size";
  core::filler_level(activity, 1).unfit = true;
  // The mixed-sampling probe's fillers at the same level are counted apart.
  activity.sampled_filler_sent = 30;
  activity.sampled_filler_failed = 2;
  core::FillerLevel& sampled = core::filler_level(activity, 8, true);
  sampled.sent = 30;
  sampled.refused = 2;
  sampled.refusal = "HTTP 400: 'temperature' must be 0";
  activity.long_shortened = 5;
  activity.long_context_words_min = 17;
  activity.prefix_shortened = true;
  activity.prefix_words = 0; // cut to nothing: stored as such, not as "not cut"
  REQUIRE(database.store_probe_activity({activity}));
  const auto loaded = load_or_fail(database).probe_activity;
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].filler_levels == activity.filler_levels);
  REQUIRE(loaded[0].filler_levels.size() == 3);
  CHECK(loaded[0].filler_levels[0].level == 8);
  CHECK_FALSE(loaded[0].filler_levels[0].sampled);
  CHECK(loaded[0].filler_levels[1].unfit);
  CHECK(loaded[0].filler_levels[2].sampled);
  CHECK(loaded[0].filler_levels[2].refusal == "HTTP 400: 'temperature' must be 0");
  CHECK(core::find_filler_level(loaded[0], 8, true)->sent == 30);
  CHECK(core::find_filler_level(loaded[0], 8)->sent == 48);
  CHECK(loaded[0].sampled_filler_sent == 30);
  CHECK(loaded[0].sampled_filler_failed == 2);
  CHECK(core::fillers_sent(loaded[0], core::ProbeKind::mixed) == 42);
  CHECK(core::fillers_sent(loaded[0], core::ProbeKind::mixed_sampling) == 30);
  CHECK(core::fillers_failed(loaded[0], core::ProbeKind::mixed_sampling) == 2);
  CHECK(core::fillers_sent(loaded[0], core::ProbeKind::sweep) == 0);
  CHECK(loaded[0].long_shortened == 5);
  CHECK(loaded[0].long_context_words_min == 17);
  CHECK(loaded[0].prefix_shortened);
  CHECK(loaded[0].prefix_words == 0);
}

TEST_CASE("AuditDatabase::update_endpoint") {
  TempDir dir;
  auto database = create_or_fail(dir.file("audit.db"), make_header());
  REQUIRE(database.update_endpoint(1, {"http://127.0.0.1:9/v1", "sglang", "m-c", false, {"x"}}));
  const auto loaded = load_or_fail(database);
  CHECK(loaded.endpoints[1].url == "http://127.0.0.1:9/v1");
  CHECK(loaded.endpoints[1].dialect == "sglang");
  CHECK(loaded.endpoints[1].model == "m-c");
  CHECK_FALSE(loaded.endpoints[1].embedded);
  // Fingerprints come from the records, never from what the caller passed.
  CHECK(loaded.endpoints[1].fingerprints.empty());
  CHECK(loaded.endpoints[0].dialect == "openai-chat");
  const auto missing = database.update_endpoint(2, {});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::internal);
  CHECK(missing.error().message.find("no endpoint 2") != std::string::npos);
}

TEST_CASE("AuditDatabase::create") {
  TempDir dir;
  const std::string path = dir.file("audit.db");

  SUBCASE("refuses a file that already holds an audit") {
    { create_or_fail(path, make_header()); }
    const auto again = AuditDatabase::create(path, make_header());
    REQUIRE_FALSE(again);
    CHECK(again.error().code == ErrorCode::input);
    CHECK(again.error().message.find("already holds an audit") != std::string::npos);
  }
  SUBCASE("refuses a file that is not SQLite") {
    std::ofstream(path) << "id,prompt\n1,hello\n";
    const auto created = AuditDatabase::create(path, make_header());
    REQUIRE_FALSE(created);
    CHECK(created.error().code == ErrorCode::input);
    CHECK(created.error().message.find("not an SQLite database") != std::string::npos);
  }
  SUBCASE("refuses another program's database") {
    run_sql(path, "CREATE TABLE users (name TEXT);");
    const auto created = AuditDatabase::create(path, make_header());
    REQUIRE_FALSE(created);
    CHECK(created.error().code == ErrorCode::input);
    CHECK(created.error().message.find("another program") != std::string::npos);
  }
  SUBCASE("accepts an empty file and writes WAL mode") {
    std::ofstream{path};
    create_or_fail(path, make_header());
    CHECK(query_text(path, "PRAGMA journal_mode") == "wal");
    CHECK(query_text(path, "SELECT value FROM meta WHERE key = 'schema_version'") == "3");
  }
}

TEST_CASE("AuditDatabase::open") {
  TempDir dir;
  const std::string path = dir.file("audit.db");

  SUBCASE("a missing file") {
    const auto opened = AuditDatabase::open(path);
    REQUIRE_FALSE(opened);
    CHECK(opened.error().code == ErrorCode::input);
    CHECK(opened.error().message == "no audit database at '" + path + "'");
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SUBCASE("a file that is not SQLite") {
    std::ofstream(path) << std::string(4096, 'x');
    const auto opened = AuditDatabase::open(path);
    REQUIRE_FALSE(opened);
    CHECK(opened.error().code == ErrorCode::input);
    CHECK(opened.error().message.find("not an SQLite database") != std::string::npos);
  }
  SUBCASE("an SQLite file without an audit") {
    run_sql(path, "CREATE TABLE users (name TEXT);");
    const auto opened = AuditDatabase::open(path);
    REQUIRE_FALSE(opened);
    CHECK(opened.error().code == ErrorCode::input);
    CHECK(opened.error().message.find("not an llmrepro audit database") != std::string::npos);
  }
  SUBCASE("another schema version") {
    { create_or_fail(path, make_header()); }
    run_sql(path, "UPDATE meta SET value = '4' WHERE key = 'schema_version';");
    const auto opened = AuditDatabase::open(path);
    REQUIRE_FALSE(opened);
    CHECK(opened.error().code == ErrorCode::input);
    CHECK(opened.error().message.find("has schema version 4; this build reads versions 1 to 3") !=
          std::string::npos);
  }
  SUBCASE("a database from before the logprob drift gate reads it as unset") {
    { create_or_fail(path, make_header()); }
    run_sql(path, "UPDATE audit SET config = json_remove(config, '$.gates.max_logprob_drift');");
    const auto opened = AuditDatabase::open(path);
    REQUIRE(opened);
    const auto loaded = opened->load();
    REQUIRE(loaded);
    CHECK_FALSE(loaded->config.gates.max_logprob_drift.has_value());
    CHECK(loaded->config.gates.min_tara == 0.9);
  }
  SUBCASE("a mistyped logprob drift gate is named") {
    { create_or_fail(path, make_header()); }
    run_sql(path, "UPDATE audit SET config = json_set(config, '$.gates.max_logprob_drift', 'x');");
    const auto opened = AuditDatabase::open(path);
    REQUIRE(opened);
    const auto loaded = opened->load();
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().message.find("max_logprob_drift") != std::string::npos);
  }
  SUBCASE("a mistyped config field is named") {
    { create_or_fail(path, make_header()); }
    run_sql(path, "UPDATE audit SET config = json_set(config, '$.runs', 'five');");
    const auto opened = AuditDatabase::open(path);
    REQUIRE(opened);
    const auto loaded = opened->load();
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().code == ErrorCode::input);
    CHECK(loaded.error().message.find("field 'runs' is missing or not an integer") !=
          std::string::npos);
  }
}

TEST_CASE("AuditDatabase::record survives kill -9") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  { create_or_fail(path, make_header()); }
  constexpr int k_tokens = 40;
  // Every token's values derive from its repeat and position, so a torn write would show.
  const auto scripted = [](int repeat) {
    core::RequestRecord record;
    record.planned = {0, repeat % 2, 1, core::ProbeKind::sweep, repeat};
    record.outcome.ok = true;
    record.outcome.attempts = 1;
    record.outcome.completion.has_logprobs = true;
    for (int position = 0; position < k_tokens; ++position) {
      const double logprob = -(repeat * 1000 + position) / 7.0;
      record.outcome.completion.tokens.push_back(
          token("t" + std::to_string(position), logprob,
                {{"a", logprob}, {"b", logprob - 1.0}, {"c", logprob - 2.0}}));
    }
    return record;
  };

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child opens its own connection and records until it is killed.
    auto database = AuditDatabase::open(path);
    if (!database) _exit(2);
    for (int repeat = 0; repeat < 1000000; ++repeat)
      if (!database->record(scripted(repeat))) _exit(3);
    _exit(0);
  }
  // Whatever fails below, the writer must not outlive the test.
  struct KillOnExit {
    pid_t pid;
    bool armed = true;
    ~KillOnExit() {
      if (armed) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } guard{child};
  int recorded = 0;
  {
    auto watcher = AuditDatabase::open(path);
    REQUIRE(watcher);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (recorded < 200 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const auto keys = watcher->recorded_successes();
      REQUIRE(keys);
      recorded = static_cast<int>(keys->size());
    }
  }
  guard.armed = false;
  REQUIRE(kill(child, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE_MESSAGE(WIFSIGNALED(status), "the writer ended before it was killed");
  REQUIRE(recorded >= 200);

  auto reopened = AuditDatabase::open(path);
  REQUIRE_MESSAGE(reopened, (reopened ? "" : reopened.error().message));
  const auto loaded = load_or_fail(*reopened);
  REQUIRE(static_cast<int>(loaded.records.size()) >= recorded);
  for (std::size_t i = 0; i < loaded.records.size(); ++i) {
    CAPTURE(i);
    check_same(loaded.records[i], scripted(static_cast<int>(i)));
  }
  // And the file itself is sound.
  CHECK(query_text(path, "PRAGMA integrity_check") == "ok");
}

TEST_CASE("AuditDatabase: a prompt's tools and stub registry, and an endpoint's preflight") {
  TempDir dir;
  auto header = make_header();
  core::Prompt& prompt = header.suite.prompts.at(1);
  prompt.tools_json = R"([{"function":{"name":"search"},"type":"function"}])";
  prompt.tool_results = {{"search", R"({"q":"Rome"})", "Colosseum"}};
  prompt.max_steps = 3;
  core::EndpointCapabilities& found = header.endpoints.at(0).capabilities;
  found.requests = 3;
  found.model = "claude-x";
  found.in_effect = core::TemperatureMode::provider_default;
  found.temperature = {core::CapabilityOutcome::refused, "HTTP 400: no"};
  found.logprobs = {core::CapabilityOutcome::not_sent, "the API has none"};
  found.candidates_requested = 2;
  found.seed = {core::CapabilityOutcome::not_honoured, "differed"};
  auto database = create_or_fail(dir.file("audit.db"), header);
  const auto loaded = load_or_fail(database);
  const core::Prompt& back = loaded.suite.prompts.at(1);
  CHECK(back.tools_json == prompt.tools_json);
  REQUIRE(back.tool_results.size() == 1);
  CHECK(back.tool_results[0].arguments == R"({"q":"Rome"})");
  CHECK(back.tool_results[0].result == "Colosseum");
  CHECK(back.max_steps == 3);
  CHECK(loaded.suite.prompts.at(0).tools_json.empty());
  CHECK(loaded.endpoints.at(0).capabilities == found);
}
