// What the audit database's tests share: a header and records with every field set, checks that
// two of them are the same, and SQL run on the file through a separate connection.
#pragma once

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/audit_database.hpp"
#include "store/detail/json_columns.hpp"
#include "store/detail/sqlite.hpp"
#include "store/detail/token_blob.hpp"
#include "store/detail/token_texts.hpp"

namespace llmrepro::testing::store_support {

using store::AuditDatabase;

inline core::AuditData make_header() {
  core::AuditData header;
  header.info = {"audit-7f3a", 1714567890123, 0, "partial"};
  auto& config = header.config;
  config.plan.api = "openai-chat";
  config.plan.model = "qwen-7b";
  config.plan.runs = 7;
  config.plan.levels = {1, 4, 64};
  config.plan.probes = {core::ProbeKind::sweep, core::ProbeKind::long_prompt,
                        core::ProbeKind::prefix};
  config.plan.max_tokens = 96;
  config.plan.top_logprobs = 5;
  config.plan.seed = 18446744073709551557ULL;
  config.plan.stream = true;
  config.requests.timeout_s = 12.5;
  config.requests.retries = 9;
  config.analysis.fragile_gap =
      0.1 + 0.2; // not exactly 0.3: the double must survive the JSON column
  config.analysis.fragile_window = 33;
  config.requests.rate_limit = 2.75;
  config.plan.shard_index = 1;
  config.plan.shard_count = 3;
  config.gates.fail_on.fragile = true;
  config.gates.max_unique = 2;
  config.gates.max_unstable_rate = 0.125;
  config.gates.min_tara = 0.9;
  config.gates.max_logprob_drift = 0.1 + 0.2;
  header.endpoints = {{"http://127.0.0.1:8000", "openai-chat", "m-a", false, {}},
                      {"embedded", "llamacpp", "m-b", true, {}}};
  header.suite.source = "suites/smoke.jsonl";
  core::Prompt chat;
  chat.id = "chat-1";
  chat.messages = {{"system", "Be terse."}, {"user", "Say \"hi\"\n\ttwice"}};
  chat.max_tokens = 12;
  chat.tags = {"smoke", "ünïcode"};
  chat.expect = {core::Expectation::Kind::number, "", "", 3.25, 0.001};
  chat.extract = {core::Extraction::Kind::regex, "(\\d+)"};
  chat.response_format_json = R"({"type":"json_object"})";
  chat.source_line = 4;
  core::Prompt text;
  text.id = "text-2";
  text.text = "";
  text.expect = {core::Expectation::Kind::json_path, "\"x\"", "$.a[0]", 0.0, 0.0};
  text.extract = {core::Extraction::Kind::last_line, ""};
  text.source_line = 9;
  header.suite.prompts = {chat, text};
  header.errors = {"endpoint 1 ignored the seed"};
  return header;
}

inline core::TokenLogprob token(std::string text, double logprob, core::TokenCandidates top) {
  return core::TokenLogprob{std::move(text), logprob, std::move(top)};
}

inline core::RequestRecord make_record(int prompt, int concurrency, int repeat, bool ok,
                                       std::string fingerprint = "fp_a") {
  core::RequestRecord record;
  record.planned = {0, prompt, concurrency, core::ProbeKind::sweep, repeat};
  auto& outcome = record.outcome;
  outcome.ok = ok;
  outcome.http_status = ok ? 200 : 503;
  outcome.error = ok ? "" : "HTTP 503: queue full";
  outcome.attempts = ok ? 1 : 4;
  outcome.started_ms = 1714567890200 + repeat;
  outcome.finished_ms = 1714567890950 + repeat;
  if (ok) {
    auto& completion = outcome.completion;
    completion.text = "The answer\x01 is 42";
    completion.has_logprobs = true;
    completion.finish_reason = "length";
    completion.system_fingerprint = std::move(fingerprint);
    completion.model = "m-a";
    completion.completion_tokens = 4;
    completion.tokens = {
        token("The", -0.1234567890123456789, {}),
        token(" answer", -1e-300, {{" answer", -1e-300}}),
        token(" is", -0.5, {{" is", -0.5}, {" was", -0.9162907318741551}}),
        token(" 42", -0.7,
              {{" 42", -0.7},
               {" 41", -0.7000000000000001},
               {" 43", -3.0},
               {"\"q\"", -std::numeric_limits<double>::infinity()},
               {"\xe2\x80\xae", -20.25}}),
    };
  }
  return record;
}

// Equal log probabilities, an unknown one (NaN) equal to another unknown one.
inline bool same_logprob(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

inline void check_same_tokens(const std::vector<core::TokenLogprob>& x,
                              const std::vector<core::TokenLogprob>& y) {
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    CHECK(x[i].token == y[i].token);
    CHECK(same_logprob(x[i].logprob, y[i].logprob));
    REQUIRE(x[i].top.size() == y[i].top.size());
    for (std::size_t k = 0; k < x[i].top.size(); ++k) {
      CHECK(x[i].top[k].token == y[i].top[k].token);
      CHECK(same_logprob(x[i].top[k].logprob, y[i].top[k].logprob));
    }
  }
}

inline void check_same(const core::RequestRecord& a, const core::RequestRecord& b) {
  CHECK(a.planned == b.planned);
  CHECK(a.outcome.ok == b.outcome.ok);
  CHECK(a.outcome.http_status == b.outcome.http_status);
  CHECK(a.outcome.error == b.outcome.error);
  CHECK(a.outcome.attempts == b.outcome.attempts);
  CHECK(a.outcome.started_ms == b.outcome.started_ms);
  CHECK(a.outcome.finished_ms == b.outcome.finished_ms);
  const auto& x = a.outcome.completion;
  const auto& y = b.outcome.completion;
  CHECK(x.text == y.text);
  CHECK(x.has_logprobs == y.has_logprobs);
  CHECK(x.finish_reason == y.finish_reason);
  CHECK(x.system_fingerprint == y.system_fingerprint);
  CHECK(x.model == y.model);
  CHECK(x.completion_tokens == y.completion_tokens);
  CHECK(x.numbers == y.numbers);
  CHECK(x.reasoning_text == y.reasoning_text);
  CHECK(x.reasoning_split == y.reasoning_split);
  CHECK(x.usage == y.usage);
  check_same_tokens(x.tokens, y.tokens);
  check_same_tokens(x.reasoning_tokens, y.reasoning_tokens);
}

inline void check_same_prompt(const core::Prompt& a, const core::Prompt& b) {
  CHECK(a.id == b.id);
  CHECK(a.text == b.text);
  REQUIRE(a.messages.size() == b.messages.size());
  for (std::size_t i = 0; i < a.messages.size(); ++i) {
    CHECK(a.messages[i].role == b.messages[i].role);
    CHECK(a.messages[i].content == b.messages[i].content);
  }
  CHECK(a.max_tokens == b.max_tokens);
  CHECK(a.tags == b.tags);
  CHECK(a.expect.kind == b.expect.kind);
  CHECK(a.expect.value == b.expect.value);
  CHECK(a.expect.path == b.expect.path);
  CHECK(a.expect.number == b.expect.number);
  CHECK(a.expect.tolerance == b.expect.tolerance);
  CHECK(a.extract.kind == b.extract.kind);
  CHECK(a.extract.pattern == b.extract.pattern);
  CHECK(a.response_format_json == b.response_format_json);
  CHECK(a.source_line == b.source_line);
}

inline void check_same_config(const core::AuditConfig& a, const core::AuditConfig& b) {
  CHECK(a.plan.api == b.plan.api);
  CHECK(a.plan.model == b.plan.model);
  CHECK(a.plan.runs == b.plan.runs);
  CHECK(a.plan.levels == b.plan.levels);
  CHECK(a.plan.probes == b.plan.probes);
  CHECK(a.plan.max_tokens == b.plan.max_tokens);
  CHECK(a.plan.top_logprobs == b.plan.top_logprobs);
  CHECK(a.plan.seed == b.plan.seed);
  CHECK(a.plan.stream == b.plan.stream);
  CHECK(a.requests.timeout_s == b.requests.timeout_s);
  CHECK(a.requests.retries == b.requests.retries);
  CHECK(a.analysis.fragile_gap == b.analysis.fragile_gap);
  CHECK(a.analysis.fragile_window == b.analysis.fragile_window);
  CHECK(a.requests.rate_limit == b.requests.rate_limit);
  CHECK(a.plan.shard_index == b.plan.shard_index);
  CHECK(a.plan.shard_count == b.plan.shard_count);
  CHECK(a.gates.fail_on == b.gates.fail_on);
  CHECK(a.gates.max_unique == b.gates.max_unique);
  CHECK(a.gates.max_unstable_rate == b.gates.max_unstable_rate);
  CHECK(a.gates.min_tara == b.gates.min_tara);
  CHECK(a.gates.max_logprob_drift == b.gates.max_logprob_drift);
}

inline AuditDatabase create_or_fail(const std::string& path, const core::AuditData& header) {
  auto created = AuditDatabase::create(path, header);
  if (!created) FAIL("create failed: " << created.error().message);
  return std::move(*created);
}

inline core::AuditData load_or_fail(const AuditDatabase& database) {
  auto loaded = database.load();
  if (!loaded) FAIL("load failed: " << loaded.error().message);
  return std::move(*loaded);
}

// Runs SQL on the file through a separate connection, as another program would.
inline void run_sql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* message = nullptr;
  const int status = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  INFO((message != nullptr ? message : ""));
  sqlite3_free(message);
  sqlite3_close(db);
  REQUIRE(status == SQLITE_OK);
}

// The first column of the first row of a query, through a separate connection.
inline std::string query_text(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(statement) == SQLITE_ROW);
  std::string text(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return text;
}

// Every token stored in the file at `path` (the answers', or with `reasoning` the reasoning's),
// decoded from packed_tokens in request id order, as another reader of the documented format
// would see them.
inline std::vector<core::TokenLogprob> stored_tokens(const std::string& path, bool reasoning) {
  auto connection = store::detail::Connection::open(path, SQLITE_OPEN_READONLY);
  REQUIRE_MESSAGE(connection, (connection ? "" : connection.error().message));
  auto texts = store::detail::read_token_texts(*connection);
  REQUIRE_MESSAGE(texts, (texts ? "" : texts.error().message));
  auto statement = connection->prepare(reasoning ? "SELECT reasoning FROM packed_tokens ORDER BY "
                                                   "request_id"
                                                 : "SELECT answer FROM packed_tokens ORDER BY "
                                                   "request_id");
  REQUIRE(statement);
  std::vector<core::TokenLogprob> tokens;
  while (sqlite3_step(statement->get()) == SQLITE_ROW) {
    if (sqlite3_column_type(statement->get(), 0) == SQLITE_NULL) continue;
    const auto* bytes = static_cast<const char*>(sqlite3_column_blob(statement->get(), 0));
    const auto size = static_cast<std::size_t>(sqlite3_column_bytes(statement->get(), 0));
    std::vector<core::TokenLogprob> request_tokens; // decode_token_blob replaces, not appends
    const auto decoded =
        store::detail::decode_token_blob(std::string_view(bytes, size), *texts, request_tokens);
    REQUIRE_MESSAGE(decoded, (decoded ? "" : decoded.error().message));
    tokens.insert(tokens.end(), request_tokens.begin(), request_tokens.end());
  }
  return tokens;
}

// The token tables of schema version 1 (a row per token), as builds before version 2 created them.
inline constexpr const char* k_version_1_token_tables = R"sql(
CREATE TABLE tokens (
  request_id INTEGER NOT NULL, position INTEGER NOT NULL, token TEXT NOT NULL, logprob REAL,
  c1_token TEXT, c1_logprob REAL, c2_token TEXT, c2_logprob REAL, more TEXT,
  PRIMARY KEY (request_id, position)) WITHOUT ROWID;
CREATE TABLE reasoning_tokens (
  request_id INTEGER NOT NULL, position INTEGER NOT NULL, token TEXT NOT NULL, logprob REAL,
  c1_token TEXT, c1_logprob REAL, c2_token TEXT, c2_logprob REAL, more TEXT,
  PRIMARY KEY (request_id, position)) WITHOUT ROWID;
)sql";

// Writes `tokens` as the version 1 rows of request `request_id` in `table`, as version 1's writer
// did: candidates 1 and 2 in columns, the rest as JSON in `more`, NaN as NULL.
inline void insert_version_1_rows(sqlite3* db, const char* table, sqlite3_int64 request_id,
                                  const std::vector<core::TokenLogprob>& tokens) {
  const std::string sql =
      std::string("INSERT INTO ") + table + " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
  sqlite3_stmt* statement = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
  const auto bind_logprob = [&](int index, double logprob) {
    if (std::isnan(logprob))
      sqlite3_bind_null(statement, index);
    else
      sqlite3_bind_double(statement, index, logprob);
  };
  for (std::size_t position = 0; position < tokens.size(); ++position) {
    const auto& token = tokens[position];
    sqlite3_bind_int64(statement, 1, request_id);
    sqlite3_bind_int64(statement, 2, static_cast<sqlite3_int64>(position));
    sqlite3_bind_text(statement, 3, token.token.data(), static_cast<int>(token.token.size()),
                      SQLITE_TRANSIENT);
    bind_logprob(4, token.logprob);
    for (std::size_t k = 0; k < 2; ++k) {
      const int column = 5 + 2 * static_cast<int>(k);
      if (k < token.top.size()) {
        sqlite3_bind_text(statement, column, token.top[k].token.data(),
                          static_cast<int>(token.top[k].token.size()), SQLITE_TRANSIENT);
        bind_logprob(column + 1, token.top[k].logprob);
      } else {
        sqlite3_bind_null(statement, column);
        sqlite3_bind_null(statement, column + 1);
      }
    }
    if (token.top.size() > 2) {
      const std::string more = store::detail::encode_candidates(token.top, 2);
      sqlite3_bind_text(statement, 9, more.data(), static_cast<int>(more.size()), SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_null(statement, 9);
    }
    REQUIRE(sqlite3_step(statement) == SQLITE_DONE);
    sqlite3_reset(statement);
  }
  sqlite3_finalize(statement);
}

// Rebuilds `requests` as schema versions 1 and 2 defined it (`text` and `reasoning_text` NOT
// NULL) with every record's texts stored: version 3 leaves them NULL where they are their tokens'
// texts. `records` as downgrade_to_version_1() takes them.
inline void restore_request_texts(sqlite3* db, const std::vector<core::RequestRecord>& records) {
  sqlite3_stmt* statement = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE name = 'requests'", -1,
                             &statement, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(statement) == SQLITE_ROW);
  std::string create(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
  sqlite3_finalize(statement);
  const auto replace = [&](const std::string& from, const std::string& to) {
    const std::size_t at = create.find(from);
    REQUIRE(at != std::string::npos);
    create.replace(at, from.size(), to);
  };
  replace("text TEXT,", "text TEXT NOT NULL,");
  replace("reasoning_text TEXT DEFAULT ''", "reasoning_text TEXT NOT NULL DEFAULT ''");
  const std::string rebuild = "ALTER TABLE requests RENAME TO requests_version_3; " + create +
                              "; UPDATE requests_version_3 SET text = coalesce(text, ''), "
                              "reasoning_text = coalesce(reasoning_text, ''); INSERT INTO "
                              "requests SELECT * FROM requests_version_3; DROP TABLE "
                              "requests_version_3;";
  REQUIRE(sqlite3_exec(db, rebuild.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_prepare_v2(db, "UPDATE requests SET text = ?1, reasoning_text = ?2 WHERE id = ?3",
                             -1, &statement, nullptr) == SQLITE_OK);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& completion = records[i].outcome.completion;
    sqlite3_bind_text(statement, 1, completion.text.data(),
                      static_cast<int>(completion.text.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(statement, 2, completion.reasoning_text.data(),
                      static_cast<int>(completion.reasoning_text.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(statement, 3, static_cast<sqlite3_int64>(i + 1));
    REQUIRE(sqlite3_step(statement) == SQLITE_DONE);
    sqlite3_reset(statement);
  }
  sqlite3_finalize(statement);
}

// Turns the database at `path`, which holds exactly `records` (recorded in that order, none
// replaced, so that record i has id i + 1), into what schema version 1 stored: the token tables
// with a row per token instead of token_texts and packed_tokens, every text in `requests`, and
// version 1 in meta. The fixture for the upgrade, so that no old build is needed.
inline void downgrade_to_version_1(const std::string& path,
                                   const std::vector<core::RequestRecord>& records) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK);
  restore_request_texts(db, records);
  REQUIRE(sqlite3_exec(db, k_version_1_token_tables, nullptr, nullptr, nullptr) == SQLITE_OK);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& completion = records[i].outcome.completion;
    const auto id = static_cast<sqlite3_int64>(i + 1);
    insert_version_1_rows(db, "tokens", id, completion.tokens);
    insert_version_1_rows(db, "reasoning_tokens", id, completion.reasoning_tokens);
  }
  REQUIRE(sqlite3_exec(db,
                       "DROP TABLE packed_tokens; DROP TABLE token_texts; UPDATE meta SET value "
                       "= '1' WHERE key = 'schema_version'; COMMIT;",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

// `tokens` as token blob version 1 (schema version 2) may hold them, every known log probability
// as its binary64 (tag 3), which version 1 reads as well as its shorter forms; `ids` gives each
// text's token_texts id.
inline std::string version_1_blob(const std::vector<core::TokenLogprob>& tokens,
                                  const std::map<std::string, std::uint64_t>& ids) {
  std::string out;
  const auto varint = [&](std::uint64_t value) {
    for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    out.push_back(static_cast<char>(value));
  };
  const auto value = [&](double logprob) {
    if (std::isnan(logprob)) {
      out.push_back('\x00');
      return;
    }
    out.push_back('\x03');
    const auto bits = std::bit_cast<std::uint64_t>(logprob);
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  };
  out.push_back('\x01');
  varint(tokens.size());
  for (const auto& token : tokens) {
    const bool first_same = !token.top.empty() && token.top[0].token == token.token &&
                            (std::bit_cast<std::uint64_t>(token.top[0].logprob) ==
                                 std::bit_cast<std::uint64_t>(token.logprob) ||
                             (std::isnan(token.top[0].logprob) && std::isnan(token.logprob)));
    varint(ids.at(token.token.str()));
    value(token.logprob);
    varint((token.top.size() << 1) | (first_same ? 1 : 0));
    for (std::size_t k = first_same ? 1 : 0; k < token.top.size(); ++k) {
      varint(ids.at(token.top[k].token.str()));
      value(token.top[k].logprob);
    }
  }
  return out;
}

// Turns the database at `path`, which holds exactly `records` (as downgrade_to_version_1() takes
// them), into what schema version 2 stored: every text in `requests`, every token blob in blob
// version 1, and version 2 in meta.
inline void downgrade_to_version_2(const std::string& path,
                                   const std::vector<core::RequestRecord>& records) {
  std::map<std::string, std::uint64_t> ids;
  {
    auto connection = store::detail::Connection::open(path, SQLITE_OPEN_READONLY);
    REQUIRE(connection);
    auto texts = store::detail::read_token_texts(*connection);
    REQUIRE(texts);
    for (std::size_t id = 0; id < texts->text.size(); ++id)
      if (texts->present[id]) ids[texts->text[id].str()] = id;
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK);
  restore_request_texts(db, records);
  sqlite3_stmt* statement = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "UPDATE packed_tokens SET answer = ?1, reasoning = ?2 WHERE "
                             "request_id = ?3",
                             -1, &statement, nullptr) == SQLITE_OK);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& completion = records[i].outcome.completion;
    const std::string blobs[] = {version_1_blob(completion.tokens, ids),
                                 version_1_blob(completion.reasoning_tokens, ids)};
    for (int column = 1; column <= 2; ++column) {
      const auto& listed = column == 1 ? completion.tokens : completion.reasoning_tokens;
      const std::string& blob = blobs[column - 1];
      if (listed.empty())
        sqlite3_bind_null(statement, column);
      else
        sqlite3_bind_blob(statement, column, blob.data(), static_cast<int>(blob.size()),
                          SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(statement, 3, static_cast<sqlite3_int64>(i + 1));
    REQUIRE(sqlite3_step(statement) == SQLITE_DONE);
    sqlite3_reset(statement);
  }
  sqlite3_finalize(statement);
  REQUIRE(sqlite3_exec(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'; COMMIT;",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

// A schema version 1 audit database at `path` holding `records`.
inline void version_1_database(const std::string& path,
                               const std::vector<core::RequestRecord>& records) {
  {
    auto database = create_or_fail(path, make_header());
    for (const auto& record : records) REQUIRE(database.record(record));
  }
  downgrade_to_version_1(path, records);
}

// A schema version 2 audit database at `path` holding `records`.
inline void version_2_database(const std::string& path,
                               const std::vector<core::RequestRecord>& records) {
  {
    auto database = create_or_fail(path, make_header());
    for (const auto& record : records) REQUIRE(database.record(record));
  }
  downgrade_to_version_2(path, records);
}

// A schema version 1 audit database at `path` holding one successful record, then `sql` run on
// the file through another connection (dropping columns, as a build before them left it).
// Returns the record.
inline core::RequestRecord database_with_one_record(const std::string& path, const char* sql) {
  const core::RequestRecord record = make_record(0, 1, 0, true);
  version_1_database(path, {record});
  run_sql(path, sql);
  return record;
}

} // namespace llmrepro::testing::store_support
