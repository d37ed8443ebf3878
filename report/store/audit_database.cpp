// The audit database on the SQLite C API.
//
// Layout (k_schema_version 1):
//   meta       key/value: schema_version, format
//   audit      one row: id, times, status, the AuditConfig as JSON, the suite's source, errors
//   endpoints  one row per endpoint, by index
//   prompts    one row per suite prompt, by index, every Prompt field
//   requests   one row per logical request, unique on its plan key; rowid = recorded order;
//              numbers_* count the log probabilities of its response that were no finite number
//              (core::NumberAnomalies). Those five columns came after version 1 was released and
//              are additive, so the version stayed: open() adds them to a database that lacks
//              them (every count 0), and older builds, which name their columns, still read and
//              write it
//   tokens     one row per generated token, keyed (request_id, position), WITHOUT ROWID so that
//              a scan in key order reads each request's tokens contiguously. A log probability
//              the endpoint gave no usable number for (core::k_unknown_logprob, NaN) is NULL in
//              logprob, c1_logprob and c2_logprob and null in `more`; NULL reads back as NaN
//   semantic, semantic_prompts  (only once --embeddings measured them) the embedding model and
//              threshold, and per prompt the pairwise similarity statistics
// Candidates 1 and 2 have their own columns because almost every audit asks for top-2 and the
// analysis reads millions of token rows: only candidates 3..k pay for JSON decoding.
#include "report/store/audit_database.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <utility>

#include "report/store/detail/json_columns.hpp"

namespace llmrepro::store {
namespace {

using core::Error;
using core::ErrorCode;
using core::Result;

// Assigns a Result's value to `target` or returns its error from the enclosing function.
#define LLMREPRO_ASSIGN_OR_RETURN(target, expression)                                              \
  do {                                                                                             \
    auto llmrepro_result = (expression);                                                           \
    if (!llmrepro_result) return llmrepro_result.error();                                          \
    target = std::move(*llmrepro_result);                                                          \
  } while (false)

constexpr const char* k_format = "llmrepro.audit";

constexpr const char* k_schema_sql = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE audit (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  id TEXT NOT NULL, started_ms INTEGER NOT NULL, finished_ms INTEGER NOT NULL,
  status TEXT NOT NULL, config TEXT NOT NULL, suite_source TEXT NOT NULL, errors TEXT NOT NULL);
CREATE TABLE endpoints (
  idx INTEGER PRIMARY KEY, url TEXT NOT NULL, dialect TEXT NOT NULL, model TEXT NOT NULL,
  embedded INTEGER NOT NULL);
CREATE TABLE prompts (
  idx INTEGER PRIMARY KEY, id TEXT NOT NULL, text TEXT, messages TEXT NOT NULL, max_tokens INTEGER,
  tags TEXT NOT NULL, expect TEXT NOT NULL, extract TEXT NOT NULL, response_format TEXT NOT NULL,
  source_line INTEGER NOT NULL);
CREATE TABLE requests (
  id INTEGER PRIMARY KEY,
  endpoint_index INTEGER NOT NULL, prompt_index INTEGER NOT NULL, concurrency INTEGER NOT NULL,
  probe TEXT NOT NULL, repeat INTEGER NOT NULL,
  ok INTEGER NOT NULL, http_status INTEGER NOT NULL, error TEXT NOT NULL, attempts INTEGER NOT NULL,
  started_ms INTEGER NOT NULL, finished_ms INTEGER NOT NULL,
  text TEXT NOT NULL, has_logprobs INTEGER NOT NULL, finish_reason TEXT NOT NULL,
  system_fingerprint TEXT NOT NULL, model TEXT NOT NULL, completion_tokens INTEGER NOT NULL,
  numbers_nan INTEGER NOT NULL DEFAULT 0, numbers_infinity INTEGER NOT NULL DEFAULT 0,
  numbers_negative_infinity INTEGER NOT NULL DEFAULT 0, numbers_overflow INTEGER NOT NULL DEFAULT 0,
  numbers_null INTEGER NOT NULL DEFAULT 0,
  UNIQUE (endpoint_index, prompt_index, concurrency, probe, repeat));
CREATE TABLE tokens (
  request_id INTEGER NOT NULL, position INTEGER NOT NULL, token TEXT NOT NULL, logprob REAL,
  c1_token TEXT, c1_logprob REAL, c2_token TEXT, c2_logprob REAL, more TEXT,
  PRIMARY KEY (request_id, position)) WITHOUT ROWID;
)sql";

// The requests columns holding Completion::numbers, in NumberAnomalies order; a database
// created before they existed gets them from open().
constexpr const char* k_numbers_columns[] = {"numbers_nan", "numbers_infinity",
                                             "numbers_negative_infinity", "numbers_overflow",
                                             "numbers_null"};

// Owns one prepared statement; reset after each use so that it can be cached.
class Statement {
public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* statement) : m_statement(statement) {}
  Statement(Statement&& other) noexcept : m_statement(std::exchange(other.m_statement, nullptr)) {}
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(m_statement);
      m_statement = std::exchange(other.m_statement, nullptr);
    }
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(m_statement); }

  sqlite3_stmt* get() const { return m_statement; }

private:
  sqlite3_stmt* m_statement = nullptr;
};

// Clears bindings and rewinds a cached statement whatever happened to it.
class StatementUse {
public:
  explicit StatementUse(sqlite3_stmt* statement) : m_statement(statement) {}
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;
  ~StatementUse() {
    sqlite3_reset(m_statement);
    sqlite3_clear_bindings(m_statement);
  }

private:
  sqlite3_stmt* m_statement;
};

// Text is bound without a destructor (SQLITE_STATIC): every bound string outlives the step.
void bind_text(sqlite3_stmt* statement, int index, const std::string& text) {
  sqlite3_bind_text64(statement, index, text.data(), text.size(), nullptr, SQLITE_UTF8);
}

void bind_optional_text(sqlite3_stmt* statement, int index, const std::string* text) {
  if (text == nullptr)
    sqlite3_bind_null(statement, index);
  else
    bind_text(statement, index, *text);
}

// NaN (core::k_unknown_logprob) cannot be stored as REAL: it is bound as NULL, as SQLite would
// store it anyway.
void bind_logprob(sqlite3_stmt* statement, int index, double logprob) {
  if (std::isnan(logprob))
    sqlite3_bind_null(statement, index);
  else
    sqlite3_bind_double(statement, index, logprob);
}

// NaN cannot be stored as REAL (SQLite turns it into NULL), so NULL reads back as NaN.
double column_double(sqlite3_stmt* statement, int index) {
  if (sqlite3_column_type(statement, index) == SQLITE_NULL)
    return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(statement, index);
}

std::string column_text(sqlite3_stmt* statement, int index) {
  const auto* text = sqlite3_column_text(statement, index);
  if (text == nullptr) return {};
  const int size = sqlite3_column_bytes(statement, index);
  return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(size));
}

bool column_is_null(sqlite3_stmt* statement, int index) {
  return sqlite3_column_type(statement, index) == SQLITE_NULL;
}

int column_int(sqlite3_stmt* statement, int index) { return sqlite3_column_int(statement, index); }

std::int64_t column_int64(sqlite3_stmt* statement, int index) {
  return static_cast<std::int64_t>(sqlite3_column_int64(statement, index));
}

// Defined beside load_semantic() at the end of this file.
template <typename Impl> Result<void> load_semantic_into(Impl& impl, core::AuditData& data);

} // namespace

struct AuditDatabase::Impl {
  std::string path;
  sqlite3* db = nullptr;
  mutable std::mutex mutex;
  Statement begin;
  Statement commit;
  Statement rollback;
  Statement find_request;
  Statement delete_tokens;
  Statement delete_request;
  Statement insert_request;
  Statement insert_token;
  Statement insert_token_batch; // k_token_batch rows in one statement
  // False only when an older database lacks the numbers_* columns and could not be given them
  // (a read-only file): its requests read with zero counts and are written without them.
  bool numbers_columns = true;

  Impl(std::string database_path, sqlite3* handle) : path(std::move(database_path)), db(handle) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    // Statements must be finalized before the connection closes.
    for (Statement* statement : {&begin, &commit, &rollback, &find_request, &delete_tokens,
                                 &delete_request, &insert_request, &insert_token,
                                 &insert_token_batch})
      *statement = Statement{};
    sqlite3_close(db);
  }

  std::string where() const { return "audit database '" + path + "'"; }

  Error failure(ErrorCode code, const std::string& what) const {
    return core::make_error(code, where() + ": " + what + ": " + sqlite3_errmsg(db));
  }

  Result<void> exec(const char* sql, ErrorCode code = ErrorCode::environment) const {
    char* message = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
      std::string text = message != nullptr ? message : sqlite3_errmsg(db);
      sqlite3_free(message);
      return core::make_error(code, where() + ": " + text);
    }
    return {};
  }

  Result<Statement> prepare(const char* sql, ErrorCode code = ErrorCode::environment) const {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, nullptr) !=
        SQLITE_OK) {
      sqlite3_finalize(statement);
      return failure(code, "cannot prepare a query");
    }
    return Statement(statement);
  }

  // Runs a statement that returns no rows.
  Result<void> step_done(sqlite3_stmt* statement, const char* what) const {
    const StatementUse use(statement);
    if (sqlite3_step(statement) != SQLITE_DONE) return failure(ErrorCode::environment, what);
    return {};
  }

  Result<void> configure_connection() {
    sqlite3_busy_timeout(db, 10000);
    return exec("PRAGMA synchronous=NORMAL;");
  }

  Result<void> prepare_cached() {
    LLMREPRO_ASSIGN_OR_RETURN(begin, prepare("BEGIN IMMEDIATE"));
    LLMREPRO_ASSIGN_OR_RETURN(commit, prepare("COMMIT"));
    LLMREPRO_ASSIGN_OR_RETURN(rollback, prepare("ROLLBACK"));
    LLMREPRO_ASSIGN_OR_RETURN(
        find_request,
        prepare("SELECT id FROM requests WHERE endpoint_index = ?1 AND prompt_index = ?2 AND "
                "concurrency = ?3 AND probe = ?4 AND repeat = ?5"));
    LLMREPRO_ASSIGN_OR_RETURN(delete_tokens, prepare("DELETE FROM tokens WHERE request_id = ?1"));
    LLMREPRO_ASSIGN_OR_RETURN(delete_request, prepare("DELETE FROM requests WHERE id = ?1"));
    LLMREPRO_ASSIGN_OR_RETURN(
        insert_request,
        prepare(numbers_columns
                    ? "INSERT INTO requests (endpoint_index, prompt_index, concurrency, probe, "
                      "repeat, ok, http_status, error, attempts, started_ms, finished_ms, text, "
                      "has_logprobs, finish_reason, system_fingerprint, model, completion_tokens, "
                      "numbers_nan, numbers_infinity, numbers_negative_infinity, "
                      "numbers_overflow, numbers_null) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                      "?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"
                    : "INSERT INTO requests (endpoint_index, prompt_index, concurrency, probe, "
                      "repeat, ok, http_status, error, attempts, started_ms, finished_ms, text, "
                      "has_logprobs, finish_reason, system_fingerprint, model, completion_tokens) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                      "?16, ?17)"));
    LLMREPRO_ASSIGN_OR_RETURN(
        insert_token,
        prepare("INSERT INTO tokens (request_id, position, token, logprob, c1_token, c1_logprob, "
                "c2_token, c2_logprob, more) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
    std::string batch = "INSERT INTO tokens (request_id, position, token, logprob, c1_token, "
                        "c1_logprob, c2_token, c2_logprob, more) VALUES ";
    for (int row = 0; row < k_token_batch; ++row)
      batch += row == 0 ? "(?,?,?,?,?,?,?,?,?)" : ",(?,?,?,?,?,?,?,?,?)";
    LLMREPRO_ASSIGN_OR_RETURN(insert_token_batch, prepare(batch.c_str()));
    return {};
  }

  // Token rows go in k_token_batch at a time: one statement step per batch instead of per row is
  // most of what inserting a 256-token completion costs.
  static constexpr int k_token_batch = 32;
  static constexpr int k_token_columns = 9;

  // Binds token `position` of `tokens` as row `row` of a statement of token rows; `more` holds
  // the encoded candidates beyond the second and must live until the statement steps.
  static void bind_token(sqlite3_stmt* statement, int row, sqlite3_int64 request_id,
                         std::size_t position, const core::TokenLogprob& token,
                         const std::string& more) {
    const int base = row * k_token_columns;
    const auto& top = token.top;
    sqlite3_bind_int64(statement, base + 1, request_id);
    sqlite3_bind_int64(statement, base + 2, static_cast<sqlite3_int64>(position));
    bind_text(statement, base + 3, token.token);
    bind_logprob(statement, base + 4, token.logprob);
    bind_optional_text(statement, base + 5, top.size() > 0 ? &top[0].token : nullptr);
    if (top.size() > 0) bind_logprob(statement, base + 6, top[0].logprob);
    bind_optional_text(statement, base + 7, top.size() > 1 ? &top[1].token : nullptr);
    if (top.size() > 1) bind_logprob(statement, base + 8, top[1].logprob);
    bind_optional_text(statement, base + 9, top.size() > 2 ? &more : nullptr);
  }

  // The body of record(), inside a transaction the caller opened.
  Result<void> write_record(const core::RequestRecord& record) {
    const auto& planned = record.planned;
    const auto& outcome = record.outcome;
    const std::string probe = core::to_string(planned.probe);
    {
      sqlite3_stmt* statement = find_request.get();
      const StatementUse use(statement);
      sqlite3_bind_int(statement, 1, planned.endpoint_index);
      sqlite3_bind_int(statement, 2, planned.prompt_index);
      sqlite3_bind_int(statement, 3, planned.concurrency);
      bind_text(statement, 4, probe);
      sqlite3_bind_int(statement, 5, planned.repeat);
      const int step = sqlite3_step(statement);
      if (step == SQLITE_ROW) {
        const sqlite3_int64 old_id = sqlite3_column_int64(statement, 0);
        sqlite3_bind_int64(delete_tokens.get(), 1, old_id);
        if (auto done = step_done(delete_tokens.get(), "cannot replace a record"); !done)
          return done;
        sqlite3_bind_int64(delete_request.get(), 1, old_id);
        if (auto done = step_done(delete_request.get(), "cannot replace a record"); !done)
          return done;
      } else if (step != SQLITE_DONE) {
        return failure(ErrorCode::environment, "cannot look up a record");
      }
    }
    const auto& completion = outcome.completion;
    sqlite3_stmt* statement = insert_request.get();
    sqlite3_bind_int(statement, 1, planned.endpoint_index);
    sqlite3_bind_int(statement, 2, planned.prompt_index);
    sqlite3_bind_int(statement, 3, planned.concurrency);
    bind_text(statement, 4, probe);
    sqlite3_bind_int(statement, 5, planned.repeat);
    sqlite3_bind_int(statement, 6, outcome.ok ? 1 : 0);
    sqlite3_bind_int(statement, 7, outcome.http_status);
    bind_text(statement, 8, outcome.error);
    sqlite3_bind_int(statement, 9, outcome.attempts);
    sqlite3_bind_int64(statement, 10, outcome.started_ms);
    sqlite3_bind_int64(statement, 11, outcome.finished_ms);
    bind_text(statement, 12, completion.text);
    sqlite3_bind_int(statement, 13, completion.has_logprobs ? 1 : 0);
    bind_text(statement, 14, completion.finish_reason);
    bind_text(statement, 15, completion.system_fingerprint);
    bind_text(statement, 16, completion.model);
    sqlite3_bind_int64(statement, 17, completion.completion_tokens);
    if (numbers_columns) {
      const auto& numbers = completion.numbers;
      sqlite3_bind_int(statement, 18, numbers.nan);
      sqlite3_bind_int(statement, 19, numbers.infinity);
      sqlite3_bind_int(statement, 20, numbers.negative_infinity);
      sqlite3_bind_int(statement, 21, numbers.overflow);
      sqlite3_bind_int(statement, 22, numbers.null);
    }
    if (auto done = step_done(statement, "cannot store a record"); !done) return done;
    const sqlite3_int64 id = sqlite3_last_insert_rowid(db);

    const auto& tokens = completion.tokens;
    std::vector<std::string> more(static_cast<std::size_t>(k_token_batch));
    std::size_t position = 0;
    while (position < tokens.size()) {
      const std::size_t rows = tokens.size() - position >= static_cast<std::size_t>(k_token_batch)
                                   ? static_cast<std::size_t>(k_token_batch)
                                   : 1;
      sqlite3_stmt* token_statement = rows == 1 ? insert_token.get() : insert_token_batch.get();
      for (std::size_t row = 0; row < rows; ++row) {
        const auto& token = tokens[position + row];
        more[row].clear();
        if (token.top.size() > 2) more[row] = encode_candidates(token.top, 2);
        bind_token(token_statement, static_cast<int>(row), id, position + row, token, more[row]);
      }
      if (auto done = step_done(token_statement, "cannot store a token"); !done) return done;
      position += rows;
    }
    return {};
  }

  Result<void> write_header(const core::AuditData& header) {
    const std::string config_text = encode_config(header.config);
    const std::string errors_text = encode_strings(header.errors);
    Statement statement;
    LLMREPRO_ASSIGN_OR_RETURN(statement,
                              prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?1), "
                                      "('format', ?2)"));
    const std::string version = std::to_string(k_schema_version);
    const std::string format = k_format;
    bind_text(statement.get(), 1, version);
    bind_text(statement.get(), 2, format);
    if (auto done = step_done(statement.get(), "cannot write the schema version"); !done)
      return done;

    LLMREPRO_ASSIGN_OR_RETURN(
        statement, prepare("INSERT INTO audit (singleton, id, started_ms, finished_ms, status, "
                           "config, suite_source, errors) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    bind_text(statement.get(), 1, header.info.id);
    sqlite3_bind_int64(statement.get(), 2, header.info.started_ms);
    sqlite3_bind_int64(statement.get(), 3, header.info.finished_ms);
    bind_text(statement.get(), 4, header.info.status);
    bind_text(statement.get(), 5, config_text);
    bind_text(statement.get(), 6, header.suite.source);
    bind_text(statement.get(), 7, errors_text);
    if (auto done = step_done(statement.get(), "cannot write the audit"); !done) return done;

    LLMREPRO_ASSIGN_OR_RETURN(statement,
                              prepare("INSERT INTO endpoints (idx, url, dialect, model, embedded) "
                                      "VALUES (?1, ?2, ?3, ?4, ?5)"));
    for (std::size_t i = 0; i < header.endpoints.size(); ++i) {
      const auto& endpoint = header.endpoints[i];
      sqlite3_bind_int64(statement.get(), 1, static_cast<sqlite3_int64>(i));
      bind_text(statement.get(), 2, endpoint.url);
      bind_text(statement.get(), 3, endpoint.dialect);
      bind_text(statement.get(), 4, endpoint.model);
      sqlite3_bind_int(statement.get(), 5, endpoint.embedded ? 1 : 0);
      if (auto done = step_done(statement.get(), "cannot write an endpoint"); !done) return done;
    }

    LLMREPRO_ASSIGN_OR_RETURN(
        statement,
        prepare("INSERT INTO prompts (idx, id, text, messages, max_tokens, tags, expect, extract, "
                "response_format, source_line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    for (std::size_t i = 0; i < header.suite.prompts.size(); ++i) {
      const auto& prompt = header.suite.prompts[i];
      const PromptJsonColumns columns = encode_prompt_columns(prompt);
      sqlite3_stmt* raw = statement.get();
      sqlite3_bind_int64(raw, 1, static_cast<sqlite3_int64>(i));
      bind_text(raw, 2, prompt.id);
      bind_optional_text(raw, 3, prompt.text ? &*prompt.text : nullptr);
      bind_text(raw, 4, columns.messages);
      if (prompt.max_tokens) sqlite3_bind_int(raw, 5, *prompt.max_tokens);
      bind_text(raw, 6, columns.tags);
      bind_text(raw, 7, columns.expect);
      bind_text(raw, 8, columns.extract);
      bind_text(raw, 9, prompt.response_format_json);
      sqlite3_bind_int(raw, 10, prompt.source_line);
      if (auto done = step_done(raw, "cannot write a prompt"); !done) return done;
    }
    for (const auto& record : header.records)
      if (auto done = write_record(record); !done) return done;
    return {};
  }

  // Runs `body` in one transaction: committed when it succeeds, rolled back otherwise.
  template <typename Body> Result<void> transaction(Body&& body) {
    if (auto done = step_done(begin.get(), "cannot begin a transaction"); !done) return done;
    auto result = body();
    if (!result) {
      const StatementUse use(rollback.get());
      sqlite3_step(rollback.get());
      return result;
    }
    if (auto done = step_done(commit.get(), "cannot commit"); !done) {
      const StatementUse use(rollback.get());
      sqlite3_step(rollback.get());
      return done;
    }
    return {};
  }

  // Runs `statement` to the end, handing each row to `row`; stops at the first error.
  template <typename Row>
  Result<void> for_each_row(sqlite3_stmt* statement, const char* what, Row&& row) const {
    const StatementUse use(statement);
    for (;;) {
      const int step = sqlite3_step(statement);
      if (step == SQLITE_DONE) return {};
      if (step != SQLITE_ROW) return failure(ErrorCode::input, what);
      if (auto done = row(statement); !done) return done;
    }
  }

  Error corrupt(const std::string& what) const {
    return core::make_error(ErrorCode::input, where() + ": " + what);
  }

  static Result<std::unique_ptr<Impl>> connect(const std::string& path, int flags);
  Result<void> load_header(core::AuditData& data) const;
  Result<void> load_records(core::AuditData& data) const;
  Result<void> stream_records(core::AuditData& data, const PromptRecordsVisitor& visit) const;
  Result<void> read_record(sqlite3_stmt* row, core::RequestRecord& record) const;
  Result<void> read_token(sqlite3_stmt* row, std::int64_t request_id, core::TokenLogprob& token) const;
  Result<void> load_probe_activity(core::AuditData& data) const;
  Result<std::set<std::string>> request_column_names() const;
  void add_numbers_columns();
  std::string request_columns() const;
};

Result<std::set<std::string>> AuditDatabase::Impl::request_column_names() const {
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement, prepare("PRAGMA table_info(requests)", ErrorCode::input));
  std::set<std::string> names;
  auto read = for_each_row(statement.get(), "cannot read the requests table",
                           [&](sqlite3_stmt* row) -> Result<void> {
                             names.insert(column_text(row, 1));
                             return Result<void>{};
                           });
  if (!read) return read.error();
  return names;
}

// Gives a database created before the numbers_* columns existed those columns, 0 in every
// stored request, in one transaction (another process may be adding them too: the check is
// repeated under the write lock). Where that fails (a read-only file, a writer holding the lock
// past the busy timeout), the database is used without them: counts read as 0.
void AuditDatabase::Impl::add_numbers_columns() {
  const auto missing = [&]() -> Result<std::vector<std::string>> {
    auto names = request_column_names();
    if (!names) return names.error();
    std::vector<std::string> absent;
    for (const char* column : k_numbers_columns)
      if (names->count(column) == 0) absent.emplace_back(column);
    return absent;
  };
  auto absent = missing();
  if (absent && absent->empty()) return;
  if (!exec("BEGIN IMMEDIATE")) {
    numbers_columns = false;
    return;
  }
  auto added = [&]() -> Result<void> {
    auto still_absent = missing();
    if (!still_absent) return still_absent.error();
    for (const auto& column : *still_absent) {
      const std::string sql =
          "ALTER TABLE requests ADD COLUMN " + column + " INTEGER NOT NULL DEFAULT 0";
      if (auto done = exec(sql.c_str()); !done) return done;
    }
    return exec("COMMIT");
  }();
  if (!added) {
    (void)exec("ROLLBACK");
    numbers_columns = false;
  }
}

Result<void> AuditDatabase::Impl::load_probe_activity(core::AuditData& data) const {
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement,
                            prepare("SELECT value FROM meta WHERE key = 'probe_activity'",
                                    ErrorCode::input));
  if (sqlite3_step(statement.get()) != SQLITE_ROW) return {};
  LLMREPRO_ASSIGN_OR_RETURN(data.probe_activity,
                            decode_probe_activity(column_text(statement.get(), 0),
                                                  where() + ": probe_activity"));
  return {};
}

Result<std::unique_ptr<AuditDatabase::Impl>> AuditDatabase::Impl::connect(const std::string& path,
                                                                          int flags) {
  sqlite3* handle = nullptr;
  // Every use of the connection holds Impl::mutex, so SQLite's own per-call locking is redundant.
  const int status = sqlite3_open_v2(path.c_str(), &handle, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  // The handle exists even when opening failed, and owns the message.
  auto impl = std::make_unique<Impl>(path, handle);
  if (status != SQLITE_OK) return impl->failure(ErrorCode::environment, "cannot open");
  // Before the first statement: another process may be writing (a resumed or sharded audit).
  sqlite3_busy_timeout(handle, 10000);
  return impl;
}

Result<void> AuditDatabase::Impl::load_header(core::AuditData& data) const {
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement,
                            prepare("SELECT id, started_ms, finished_ms, status, config, "
                                    "suite_source, errors FROM audit WHERE singleton = 1",
                                    ErrorCode::input));
  bool found = false;
  auto read = for_each_row(statement.get(), "cannot read the audit", [&](sqlite3_stmt* row) -> Result<void> {
    found = true;
    data.info.id = column_text(row, 0);
    data.info.started_ms = column_int64(row, 1);
    data.info.finished_ms = column_int64(row, 2);
    data.info.status = column_text(row, 3);
    LLMREPRO_ASSIGN_OR_RETURN(data.config, decode_config(column_text(row, 4), where()));
    data.suite.source = column_text(row, 5);
    LLMREPRO_ASSIGN_OR_RETURN(data.errors, decode_strings(column_text(row, 6), where() + ": errors"));
    return Result<void>{};
  });
  if (!read) return read;
  if (!found) return corrupt("holds no audit");

  LLMREPRO_ASSIGN_OR_RETURN(statement, prepare("SELECT idx, url, dialect, model, embedded FROM "
                                               "endpoints ORDER BY idx",
                                               ErrorCode::input));
  read = for_each_row(statement.get(), "cannot read the endpoints", [&](sqlite3_stmt* row) -> Result<void> {
    if (column_int64(row, 0) != static_cast<std::int64_t>(data.endpoints.size()))
      return Result<void>{corrupt("endpoint indices are not contiguous")};
    core::EndpointInfo endpoint;
    endpoint.url = column_text(row, 1);
    endpoint.dialect = column_text(row, 2);
    endpoint.model = column_text(row, 3);
    endpoint.embedded = column_int(row, 4) != 0;
    data.endpoints.push_back(std::move(endpoint));
    return Result<void>{};
  });
  if (!read) return read;

  LLMREPRO_ASSIGN_OR_RETURN(
      statement, prepare("SELECT idx, id, text, messages, max_tokens, tags, expect, extract, "
                         "response_format, source_line FROM prompts ORDER BY idx",
                         ErrorCode::input));
  return for_each_row(statement.get(), "cannot read the suite", [&](sqlite3_stmt* row) -> Result<void> {
    if (column_int64(row, 0) != static_cast<std::int64_t>(data.suite.prompts.size()))
      return Result<void>{corrupt("prompt indices are not contiguous")};
    core::Prompt prompt;
    prompt.id = column_text(row, 1);
    if (!column_is_null(row, 2)) prompt.text = column_text(row, 2);
    if (!column_is_null(row, 4)) prompt.max_tokens = column_int(row, 4);
    const PromptJsonColumns columns{column_text(row, 3), column_text(row, 5), column_text(row, 6),
                                    column_text(row, 7)};
    if (auto decoded = decode_prompt_columns(columns, prompt, where() + ": prompt '" + prompt.id +
                                                                  "'");
        !decoded)
      return decoded;
    prompt.response_format_json = column_text(row, 8);
    prompt.source_line = column_int(row, 9);
    data.suite.prompts.push_back(std::move(prompt));
    return Result<void>{};
  });
}

// The columns read_record() reads, zeros standing in for numbers_* where the database lacks them.
std::string AuditDatabase::Impl::request_columns() const {
  return std::string("id, endpoint_index, prompt_index, concurrency, probe, repeat, ok, "
                     "http_status, error, attempts, started_ms, finished_ms, text, has_logprobs, "
                     "finish_reason, system_fingerprint, model, completion_tokens, ") +
         (numbers_columns ? "numbers_nan, numbers_infinity, numbers_negative_infinity, "
                            "numbers_overflow, numbers_null"
                          : "0, 0, 0, 0, 0");
}

// One row of request_columns(), without its tokens.
Result<void> AuditDatabase::Impl::read_record(sqlite3_stmt* row, core::RequestRecord& record) const {
  record.planned.endpoint_index = column_int(row, 1);
  record.planned.prompt_index = column_int(row, 2);
  record.planned.concurrency = column_int(row, 3);
  const std::string probe = column_text(row, 4);
  auto kind = core::parse_probe_kind(probe);
  if (!kind) return corrupt("unknown probe kind '" + probe + "' in a record");
  record.planned.probe = *kind;
  record.planned.repeat = column_int(row, 5);
  auto& outcome = record.outcome;
  outcome.ok = column_int(row, 6) != 0;
  outcome.http_status = column_int(row, 7);
  outcome.error = column_text(row, 8);
  outcome.attempts = column_int(row, 9);
  outcome.started_ms = column_int64(row, 10);
  outcome.finished_ms = column_int64(row, 11);
  auto& completion = outcome.completion;
  completion.text = column_text(row, 12);
  completion.has_logprobs = column_int(row, 13) != 0;
  completion.finish_reason = column_text(row, 14);
  completion.system_fingerprint = column_text(row, 15);
  completion.model = column_text(row, 16);
  completion.completion_tokens = static_cast<long>(column_int64(row, 17));
  completion.numbers.nan = column_int(row, 18);
  completion.numbers.infinity = column_int(row, 19);
  completion.numbers.negative_infinity = column_int(row, 20);
  completion.numbers.overflow = column_int(row, 21);
  completion.numbers.null = column_int(row, 22);
  return {};
}

// Columns token, logprob, c1_token, c1_logprob, c2_token, c2_logprob, more from column 2 on.
Result<void> AuditDatabase::Impl::read_token(sqlite3_stmt* row, std::int64_t request_id,
                                             core::TokenLogprob& token) const {
  token.token = column_text(row, 2);
  token.logprob = column_double(row, 3);
  token.top.reserve(2);
  if (!column_is_null(row, 4)) token.top.push_back({column_text(row, 4), column_double(row, 5)});
  if (!column_is_null(row, 6)) token.top.push_back({column_text(row, 6), column_double(row, 7)});
  if (column_is_null(row, 8)) return {};
  return decode_candidates(column_text(row, 8), token.top,
                           where() + ": candidates of request " + std::to_string(request_id));
}

Result<void> AuditDatabase::Impl::load_records(core::AuditData& data) const {
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(
      statement, prepare(("SELECT " + request_columns() + " FROM requests ORDER BY id").c_str(),
                         ErrorCode::input));
  std::vector<std::int64_t> ids;
  auto read = for_each_row(statement.get(), "cannot read the records", [&](sqlite3_stmt* row) -> Result<void> {
    core::RequestRecord record;
    ids.push_back(column_int64(row, 0));
    if (auto done = read_record(row, record); !done) return done;
    data.records.push_back(std::move(record));
    return Result<void>{};
  });
  if (!read) return read;

  // Both scans run in id order, so each request's tokens are matched with one forward walk.
  LLMREPRO_ASSIGN_OR_RETURN(
      statement, prepare("SELECT request_id, position, token, logprob, c1_token, c1_logprob, "
                         "c2_token, c2_logprob, more FROM tokens ORDER BY request_id, position",
                         ErrorCode::input));
  std::size_t current = 0;
  return for_each_row(statement.get(), "cannot read the tokens", [&](sqlite3_stmt* row) -> Result<void> {
    const std::int64_t request_id = column_int64(row, 0);
    while (current < ids.size() && ids[current] < request_id) ++current;
    if (current == ids.size() || ids[current] != request_id)
      return Result<void>{corrupt("token rows of a missing request " + std::to_string(request_id))};
    auto& tokens = data.records[current].outcome.completion.tokens;
    if (column_int64(row, 1) != static_cast<std::int64_t>(tokens.size()))
      return Result<void>{corrupt("token positions of request " + std::to_string(request_id) +
                                  " are not contiguous")};
    core::TokenLogprob token;
    if (auto done = read_token(row, request_id, token); !done) return done;
    tokens.push_back(std::move(token));
    return Result<void>{};
  });
}

// Requests in (prompt, id) order; each prompt's tokens are read by request (a primary-key range
// of the tokens table) just before the prompt is handed over, then dropped.
Result<void> AuditDatabase::Impl::stream_records(core::AuditData& data,
                                                 const PromptRecordsVisitor& visit) const {
  Statement requests;
  LLMREPRO_ASSIGN_OR_RETURN(
      requests,
      prepare(("SELECT " + request_columns() + " FROM requests ORDER BY prompt_index, id").c_str(),
              ErrorCode::input));
  Statement tokens;
  LLMREPRO_ASSIGN_OR_RETURN(
      tokens, prepare("SELECT request_id, position, token, logprob, c1_token, c1_logprob, "
                      "c2_token, c2_logprob, more FROM tokens WHERE request_id = ? "
                      "ORDER BY position",
                      ErrorCode::input));
  const core::AuditData& header = data; // records are added only once every prompt is visited
  std::vector<std::pair<std::int64_t, core::RequestRecord>> kept; // (id, trimmed record)
  std::vector<core::RequestRecord> group;
  std::vector<std::int64_t> group_ids;
  int group_prompt = 0;

  const auto flush = [&]() -> Result<void> {
    if (group.empty()) return {};
    for (std::size_t i = 0; i < group.size(); ++i) {
      const std::int64_t request_id = group_ids[i];
      auto& out = group[i].outcome.completion.tokens;
      out.reserve(static_cast<std::size_t>(std::max(0L, group[i].outcome.completion.completion_tokens)));
      sqlite3_bind_int64(tokens.get(), 1, request_id);
      auto read = for_each_row(tokens.get(), "cannot read the tokens", [&](sqlite3_stmt* row) -> Result<void> {
        if (column_int64(row, 1) != static_cast<std::int64_t>(out.size()))
          return Result<void>{corrupt("token positions of request " + std::to_string(request_id) +
                                      " are not contiguous")};
        core::TokenLogprob token;
        if (auto done = read_token(row, request_id, token); !done) return done;
        out.push_back(std::move(token));
        return Result<void>{};
      });
      if (!read) return read;
    }
    if (auto visited = visit(header, group_prompt, group); !visited) return visited;
    for (std::size_t i = 0; i < group.size(); ++i) {
      auto& completion = group[i].outcome.completion;
      // Assigned fresh: `= {}` would clear but keep the capacity.
      completion.text = std::string();
      completion.tokens = std::vector<core::TokenLogprob>();
      kept.emplace_back(group_ids[i], std::move(group[i]));
    }
    group.clear();
    group_ids.clear();
    return {};
  };

  auto read = for_each_row(requests.get(), "cannot read the records", [&](sqlite3_stmt* row) -> Result<void> {
    core::RequestRecord record;
    if (auto done = read_record(row, record); !done) return done;
    if (!group.empty() && record.planned.prompt_index != group_prompt)
      if (auto flushed = flush(); !flushed) return flushed;
    group_prompt = record.planned.prompt_index;
    group_ids.push_back(column_int64(row, 0));
    group.push_back(std::move(record));
    return Result<void>{};
  });
  if (!read) return read;
  if (auto flushed = flush(); !flushed) return flushed;

  // Recorded order, as load() without a visitor gives it.
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  data.records.reserve(kept.size());
  for (auto& entry : kept) data.records.push_back(std::move(entry.second));
  return {};
}

AuditDatabase::AuditDatabase(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
AuditDatabase::AuditDatabase(AuditDatabase&& other) noexcept = default;
AuditDatabase& AuditDatabase::operator=(AuditDatabase&& other) noexcept = default;
AuditDatabase::~AuditDatabase() = default;

const std::string& AuditDatabase::path() const { return m_impl->path; }

Result<AuditDatabase> AuditDatabase::create(const std::string& path,
                                            const core::AuditData& header) {
  auto connected = Impl::connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!connected) return connected.error();
  auto impl = std::move(*connected);

  // An empty file is an empty SQLite database; anything with tables belongs to something else.
  {
    auto statement = impl->prepare("SELECT count(*), sum(name = 'meta') FROM sqlite_master",
                                   ErrorCode::input);
    if (!statement || sqlite3_step(statement->get()) != SQLITE_ROW) {
      if (sqlite3_errcode(impl->db) == SQLITE_NOTADB)
        return impl->corrupt("is not an SQLite database");
      return impl->failure(ErrorCode::environment, "cannot read");
    }
    if (sqlite3_column_int(statement->get(), 1) > 0) return impl->corrupt("already holds an audit");
    if (sqlite3_column_int(statement->get(), 0) > 0)
      return impl->corrupt("holds another program's tables, not an audit");
  }
  {
    // WAL: readers (`report` while an audit runs) never block the writer, and a commit is one
    // append to the log.
    auto statement = impl->prepare("PRAGMA journal_mode=WAL");
    if (!statement) return statement.error();
    if (sqlite3_step(statement->get()) != SQLITE_ROW || column_text(statement->get(), 0) != "wal")
      return impl->failure(ErrorCode::environment, "cannot switch to WAL mode");
  }
  if (auto done = impl->configure_connection(); !done) return done.error();
  if (auto done = impl->exec("BEGIN IMMEDIATE"); !done) return done.error();
  auto written = [&]() -> Result<void> {
    if (auto done = impl->exec(k_schema_sql); !done) return done;
    if (auto done = impl->prepare_cached(); !done) return done;
    if (auto done = impl->write_header(header); !done) return done;
    return impl->exec("COMMIT");
  }();
  if (!written) {
    (void)impl->exec("ROLLBACK");
    return written.error();
  }
  return AuditDatabase(std::move(impl));
}

Result<AuditDatabase> AuditDatabase::open(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    return core::make_error(ErrorCode::input, "no audit database at '" + path + "'");
  auto connected = Impl::connect(path, SQLITE_OPEN_READWRITE);
  if (!connected) return connected.error();
  auto impl = std::move(*connected);
  {
    sqlite3_stmt* raw = nullptr;
    const int prepared = sqlite3_prepare_v2(
        impl->db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &raw, nullptr);
    const Statement statement(raw);
    if (prepared != SQLITE_OK) {
      if (sqlite3_errcode(impl->db) == SQLITE_NOTADB)
        return impl->corrupt("is not an SQLite database");
      return impl->corrupt("is not an llmrepro audit database (no meta table)");
    }
    const int step = sqlite3_step(raw);
    if (step != SQLITE_ROW) {
      if (step == SQLITE_DONE) return impl->corrupt("has no schema version");
      return impl->failure(ErrorCode::input, "cannot read the schema version");
    }
    const std::string version = column_text(raw, 0);
    if (version != std::to_string(k_schema_version))
      return impl->corrupt("has schema version " + version + "; this build reads version " +
                           std::to_string(k_schema_version));
  }
  if (auto done = impl->configure_connection(); !done) return done.error();
  impl->add_numbers_columns();
  if (auto done = impl->prepare_cached(); !done) return done.error();
  return AuditDatabase(std::move(impl));
}

Result<core::AuditData> AuditDatabase::load(const PromptRecordsVisitor& visit) const {
  const std::lock_guard lock(m_impl->mutex);
  // One read transaction: a snapshot even while another process records.
  if (auto done = m_impl->exec("BEGIN"); !done) return done.error();
  core::AuditData data;
  auto loaded = m_impl->load_header(data);
  if (loaded) loaded = visit ? m_impl->stream_records(data, visit) : m_impl->load_records(data);
  if (loaded) loaded = m_impl->load_probe_activity(data);
  if (loaded) loaded = load_semantic_into(*m_impl, data);
  (void)m_impl->exec("COMMIT");
  if (!loaded) return loaded.error();

  std::vector<std::set<std::string>> fingerprints(data.endpoints.size());
  for (const auto& record : data.records) {
    const auto index = static_cast<std::size_t>(record.planned.endpoint_index);
    const auto& fingerprint = record.outcome.completion.system_fingerprint;
    if (record.outcome.ok && !fingerprint.empty() && index < fingerprints.size())
      fingerprints[index].insert(fingerprint);
  }
  for (std::size_t i = 0; i < data.endpoints.size(); ++i)
    data.endpoints[i].fingerprints.assign(fingerprints[i].begin(), fingerprints[i].end());
  return data;
}

Result<void> AuditDatabase::record(const core::RequestRecord& record) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&] { return m_impl->write_record(record); });
}

Result<void> AuditDatabase::record_batch(const std::vector<core::RequestRecord>& records) {
  if (records.empty()) return {};
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&]() -> Result<void> {
    for (const auto& record : records)
      if (auto done = m_impl->write_record(record); !done) return done;
    return {};
  });
}

Result<std::vector<core::PlannedRequest>> AuditDatabase::recorded_successes() const {
  const std::lock_guard lock(m_impl->mutex);
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement,
                            m_impl->prepare("SELECT endpoint_index, prompt_index, concurrency, "
                                            "probe, repeat FROM requests WHERE ok = 1 ORDER BY id",
                                            ErrorCode::input));
  std::vector<core::PlannedRequest> keys;
  auto read = m_impl->for_each_row(statement.get(), "cannot read the records", [&](sqlite3_stmt* row) -> Result<void> {
    core::PlannedRequest key;
    key.endpoint_index = column_int(row, 0);
    key.prompt_index = column_int(row, 1);
    key.concurrency = column_int(row, 2);
    const std::string probe = column_text(row, 3);
    auto kind = core::parse_probe_kind(probe);
    if (!kind) return Result<void>{m_impl->corrupt("unknown probe kind '" + probe + "'")};
    key.probe = *kind;
    key.repeat = column_int(row, 4);
    keys.push_back(key);
    return Result<void>{};
  });
  if (!read) return read.error();
  return keys;
}

Result<void> AuditDatabase::set_status(const std::string& status, std::int64_t finished_ms) {
  if (status != "partial" && status != "complete")
    return core::make_error(ErrorCode::internal,
                            "audit status '" + status + "' is neither partial nor complete");
  const std::lock_guard lock(m_impl->mutex);
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement, m_impl->prepare("UPDATE audit SET status = ?1, "
                                                       "finished_ms = ?2 WHERE singleton = 1"));
  bind_text(statement.get(), 1, status);
  sqlite3_bind_int64(statement.get(), 2, finished_ms);
  if (auto done = m_impl->step_done(statement.get(), "cannot store the status"); !done) return done;
  if (sqlite3_changes(m_impl->db) != 1) return m_impl->corrupt("holds no audit");
  return {};
}

Result<void> AuditDatabase::store_probe_activity(const std::vector<core::ProbeActivity>& activity) {
  const std::lock_guard lock(m_impl->mutex);
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement,
                            m_impl->prepare("INSERT OR REPLACE INTO meta (key, value) VALUES "
                                            "('probe_activity', ?1)"));
  const std::string encoded = encode_probe_activity(activity); // bound without a copy
  bind_text(statement.get(), 1, encoded);
  return m_impl->step_done(statement.get(), "cannot store the probe activity");
}

Result<void> AuditDatabase::update_endpoint(int index, const core::EndpointInfo& endpoint) {
  const std::lock_guard lock(m_impl->mutex);
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement, m_impl->prepare("UPDATE endpoints SET url = ?2, dialect = "
                                                       "?3, model = ?4, embedded = ?5 WHERE idx "
                                                       "= ?1"));
  sqlite3_bind_int(statement.get(), 1, index);
  bind_text(statement.get(), 2, endpoint.url);
  bind_text(statement.get(), 3, endpoint.dialect);
  bind_text(statement.get(), 4, endpoint.model);
  sqlite3_bind_int(statement.get(), 5, endpoint.embedded ? 1 : 0);
  if (auto done = m_impl->step_done(statement.get(), "cannot store the endpoint"); !done)
    return done;
  if (sqlite3_changes(m_impl->db) != 1)
    return core::make_error(ErrorCode::internal,
                            m_impl->where() + ": no endpoint " + std::to_string(index));
  return {};
}

Result<void> AuditDatabase::update_config(const core::AuditConfig& config) {
  const std::lock_guard lock(m_impl->mutex);
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement,
                            m_impl->prepare("UPDATE audit SET config = ?1 WHERE singleton = 1"));
  const std::string encoded = encode_config(config);
  bind_text(statement.get(), 1, encoded);
  if (auto done = m_impl->step_done(statement.get(), "cannot store the configuration"); !done)
    return done;
  if (sqlite3_changes(m_impl->db) != 1) return m_impl->corrupt("holds no audit");
  return {};
}

namespace {
constexpr const char* k_semantic_sql = R"sql(
CREATE TABLE IF NOT EXISTS semantic (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1), model TEXT NOT NULL, threshold REAL NOT NULL);
CREATE TABLE IF NOT EXISTS semantic_prompts (
  prompt_index INTEGER PRIMARY KEY, distinct_count INTEGER NOT NULL, pairs INTEGER NOT NULL,
  mean REAL NOT NULL, std REAL NOT NULL, min REAL NOT NULL);
DELETE FROM semantic; DELETE FROM semantic_prompts;
)sql";
} // namespace

Result<void> AuditDatabase::store_semantic(const core::SemanticAgreement& agreement) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&]() -> Result<void> {
    if (auto done = m_impl->exec(k_semantic_sql); !done) return done;
    Statement statement;
    LLMREPRO_ASSIGN_OR_RETURN(statement, m_impl->prepare("INSERT INTO semantic (singleton, model, "
                                                         "threshold) VALUES (1, ?1, ?2)"));
    bind_text(statement.get(), 1, agreement.model);
    sqlite3_bind_double(statement.get(), 2, agreement.threshold);
    if (auto done = m_impl->step_done(statement.get(), "cannot store the semantic agreement"); !done)
      return done;
    LLMREPRO_ASSIGN_OR_RETURN(statement,
                              m_impl->prepare("INSERT INTO semantic_prompts (prompt_index, "
                                              "distinct_count, pairs, mean, std, min) VALUES "
                                              "(?1, ?2, ?3, ?4, ?5, ?6)"));
    for (const auto& prompt : agreement.prompts) {
      sqlite3_bind_int(statement.get(), 1, prompt.prompt_index);
      sqlite3_bind_int(statement.get(), 2, prompt.distinct);
      sqlite3_bind_int(statement.get(), 3, prompt.pairs);
      sqlite3_bind_double(statement.get(), 4, prompt.mean);
      sqlite3_bind_double(statement.get(), 5, prompt.std);
      sqlite3_bind_double(statement.get(), 6, prompt.min);
      if (auto done = m_impl->step_done(statement.get(), "cannot store a prompt's similarity"); !done)
        return done;
    }
    return {};
  });
}

namespace {
// The stored semantic agreement, read through `impl` (AuditDatabase::Impl, deduced so that this
// file-local function may use it) whose lock the caller holds; empty when none was measured.
template <typename Impl>
Result<std::optional<core::SemanticAgreement>> read_semantic(Impl& impl) {
  Statement statement;
  LLMREPRO_ASSIGN_OR_RETURN(statement, impl.prepare("SELECT count(*) FROM sqlite_master WHERE "
                                                       "name = 'semantic'",
                                                       ErrorCode::input));
  int tables = 0;
  auto read = impl.for_each_row(statement.get(), "cannot read the tables", [&](sqlite3_stmt* row) {
    tables = column_int(row, 0);
    return Result<void>{};
  });
  if (!read) return read.error();
  if (tables == 0) return std::optional<core::SemanticAgreement>{};

  core::SemanticAgreement agreement;
  bool found = false;
  LLMREPRO_ASSIGN_OR_RETURN(statement, impl.prepare("SELECT model, threshold FROM semantic",
                                                       ErrorCode::input));
  read = impl.for_each_row(statement.get(), "cannot read the semantic agreement", [&](sqlite3_stmt* row) {
    found = true;
    agreement.model = column_text(row, 0);
    agreement.threshold = sqlite3_column_double(row, 1);
    return Result<void>{};
  });
  if (!read) return read.error();
  if (!found) return std::optional<core::SemanticAgreement>{};
  LLMREPRO_ASSIGN_OR_RETURN(statement,
                            impl.prepare("SELECT prompt_index, distinct_count, pairs, mean, std, "
                                            "min FROM semantic_prompts ORDER BY prompt_index",
                                            ErrorCode::input));
  read = impl.for_each_row(statement.get(), "cannot read the semantic agreement", [&](sqlite3_stmt* row) {
    core::PromptSemantics prompt;
    prompt.prompt_index = column_int(row, 0);
    prompt.distinct = column_int(row, 1);
    prompt.pairs = column_int(row, 2);
    prompt.mean = sqlite3_column_double(row, 3);
    prompt.std = sqlite3_column_double(row, 4);
    prompt.min = sqlite3_column_double(row, 5);
    prompt.agrees = prompt.min >= agreement.threshold;
    agreement.prompts.push_back(prompt);
    return Result<void>{};
  });
  if (!read) return read.error();
  core::summarize(agreement);
  return std::optional<core::SemanticAgreement>{std::move(agreement)};
}

// Fills data.semantic from the database (load() calls it inside its read transaction).
template <typename Impl> Result<void> load_semantic_into(Impl& impl, core::AuditData& data) {
  auto semantic = read_semantic(impl);
  if (!semantic) return semantic.error();
  data.semantic = std::move(*semantic);
  return {};
}
} // namespace

Result<std::optional<core::SemanticAgreement>> AuditDatabase::load_semantic() const {
  const std::lock_guard lock(m_impl->mutex);
  return read_semantic(*m_impl);
}

} // namespace llmrepro::store
