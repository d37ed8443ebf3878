// The audit database's facade: opening and creating the file, the connection's settings, the lock
// that serialises every call, and the transactions. The work is done by the pieces it delegates
// to: the SQLite wrapper (sqlite.cpp), the tables and their version (schema.cpp, which describes
// the layout), the record writer and reader, and the semantic tables.
#include "store/audit_database.hpp"

#include <filesystem>
#include <mutex>
#include <utility>

#include "core/result.hpp"
#include "store/detail/record_reader.hpp"
#include "store/detail/record_writer.hpp"
#include "store/detail/schema.hpp"
#include "store/detail/run_meta.hpp"
#include "store/detail/semantic_tables.hpp"
#include "store/detail/sqlite.hpp"

namespace llmrepro::store {

using core::ErrorCode;
using core::Result;

struct AuditDatabase::Impl {
  // First, so that it closes after every statement below is finalized.
  detail::Connection connection;
  mutable std::mutex mutex;
  detail::Statement begin;
  detail::Statement commit;
  detail::Statement rollback;
  // False only where an older database lacks those columns and could not be given them (a
  // read-only file): its requests read with zero counts or no reasoning, written without them.
  detail::LaterColumns later_columns;
  // Older only for a file of an older version that could not be upgraded (read-only): read,
  // never written.
  int schema_version = k_schema_version;
  std::optional<OlderSchema> older_schema;
  bool plan_check = false; // check_records_against_plan()
  detail::RecordWriter writer;

  explicit Impl(detail::Connection opened) : connection(std::move(opened)), writer(connection) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  detail::RecordReader reader() const {
    return detail::RecordReader(connection, later_columns, schema_version);
  }

  // Records need the current tables: an older file left as it was is read only.
  Result<void> check_writable() const {
    if (schema_version == k_schema_version) return {};
    return connection.corrupt("is schema version " + std::to_string(schema_version) +
                              " and read-only: records cannot be added");
  }

  // Another process's lock is waited for up to 10 s. synchronous=NORMAL: in WAL mode a commit
  // survives a crash of the process (kill -9 loses only the requests in flight) without an fsync
  // per commit.
  Result<void> configure_connection() {
    sqlite3_busy_timeout(connection.handle(), 10000);
    return connection.exec("PRAGMA synchronous=NORMAL;");
  }

  // The statements used again and again: the transaction's and, where records can be written,
  // the record writer's.
  Result<void> prepare_cached() {
    LLMREPRO_TRY_ASSIGN(begin, connection.prepare("BEGIN IMMEDIATE"));
    LLMREPRO_TRY_ASSIGN(commit, connection.prepare("COMMIT"));
    LLMREPRO_TRY_ASSIGN(rollback, connection.prepare("ROLLBACK"));
    if (schema_version != k_schema_version) return {};
    return writer.prepare(later_columns);
  }

  // Runs `body` in one transaction: committed when it succeeds, rolled back otherwise.
  template <typename Body> Result<void> transaction(Body&& body) {
    LLMREPRO_TRY(connection.step_done(begin.get(), "cannot begin a transaction"));
    auto result = body();
    if (!result) {
      const detail::StatementUse use(rollback.get());
      sqlite3_step(rollback.get());
      writer.transaction_ended(false);
      return result;
    }
    if (auto done = connection.step_done(commit.get(), "cannot commit"); !done) {
      const detail::StatementUse use(rollback.get());
      sqlite3_step(rollback.get());
      writer.transaction_ended(false);
      return done;
    }
    writer.transaction_ended(true);
    return {};
  }
};

AuditDatabase::AuditDatabase(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
AuditDatabase::AuditDatabase(AuditDatabase&& other) noexcept = default;
AuditDatabase& AuditDatabase::operator=(AuditDatabase&& other) noexcept = default;
AuditDatabase::~AuditDatabase() = default;

const std::string& AuditDatabase::path() const { return m_impl->connection.path(); }

Result<AuditDatabase> AuditDatabase::create(const std::string& path,
                                            const core::AuditData& header) {
  auto connected = detail::Connection::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!connected) return connected.error();
  auto impl = std::make_unique<Impl>(std::move(*connected));
  const detail::Connection& connection = impl->connection;
  LLMREPRO_TRY(detail::check_new_file(connection));
  // 16 KiB pages: a request's packed tokens (2.5 KiB for 256 top-2 tokens) is one row, and a
  // 4 KiB page holds one such row, a third of it left empty; a 16 KiB page holds six.
  LLMREPRO_TRY(connection.exec("PRAGMA page_size=16384"));
  {
    // WAL: readers (`report` while an audit runs) never block the writer, and a commit is one
    // append to the log.
    detail::Statement statement;
    LLMREPRO_TRY_ASSIGN(statement, connection.prepare("PRAGMA journal_mode=WAL"));
    if (sqlite3_step(statement.get()) != SQLITE_ROW ||
        detail::column_text(statement.get(), 0) != "wal")
      return connection.failure(ErrorCode::environment, "cannot switch to WAL mode");
  }
  LLMREPRO_TRY(impl->configure_connection());
  LLMREPRO_TRY(connection.exec("BEGIN IMMEDIATE"));
  auto written = [&]() -> Result<void> {
    LLMREPRO_TRY(detail::create_tables(connection));
    LLMREPRO_TRY(impl->prepare_cached());
    LLMREPRO_TRY(detail::write_schema_version(connection));
    LLMREPRO_TRY(impl->writer.write_header(header));
    LLMREPRO_TRY(detail::write_agent_prompts(connection, header.suite));
    for (std::size_t e = 0; e < header.endpoints.size(); ++e)
      LLMREPRO_TRY(
          detail::write_endpoint_meta(connection, static_cast<int>(e), header.endpoints[e]));
    return connection.exec("COMMIT");
  }();
  if (!written) {
    (void)connection.exec("ROLLBACK");
    return written.error();
  }
  impl->writer.transaction_ended(true);
  return AuditDatabase(std::move(impl));
}

Result<AuditDatabase> AuditDatabase::open(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    return core::make_error(ErrorCode::input, "no audit database at '" + path + "'");
  auto connected = detail::Connection::open(path, SQLITE_OPEN_READWRITE);
  if (!connected) return connected.error();
  auto impl = std::make_unique<Impl>(std::move(*connected));
  int version = 0;
  LLMREPRO_TRY_ASSIGN(version, detail::check_schema_version(impl->connection));
  LLMREPRO_TRY(impl->configure_connection());
  impl->later_columns = detail::add_later_columns(impl->connection, version);
  if (version < k_schema_version) {
    // Upgraded in place when the file can be written; otherwise read as it is.
    if (sqlite3_db_readonly(impl->connection.handle(), "main") == 1) {
      impl->schema_version = version;
      impl->older_schema = OlderSchema{version, false, 0};
      LLMREPRO_TRY(impl->prepare_cached());
      return AuditDatabase(std::move(impl));
    }
    std::int64_t packed = 0;
    LLMREPRO_TRY_ASSIGN(packed, detail::upgrade_schema(impl->connection));
    impl->older_schema = OlderSchema{version, true, packed};
    // The upgraded file has every later column (add_later_columns ran before).
    impl->later_columns = detail::add_later_columns(impl->connection, k_schema_version);
  }
  LLMREPRO_TRY(impl->prepare_cached());
  return AuditDatabase(std::move(impl));
}

namespace {

// The first of `requests` outside the plan of `header`, as a corrupt-database error.
Result<void> check_in_plan(const detail::Connection& connection, const core::AuditData& header,
                           const std::vector<core::PlannedRequest>& requests) {
  const core::PlanConfig plan =
      core::plan_config_of(header.config, static_cast<int>(header.endpoints.size()));
  for (const core::PlannedRequest& request : requests) {
    if (core::plan_contains(plan, header.suite.prompts.size(), request)) continue;
    const auto prompt = static_cast<std::size_t>(request.prompt_index);
    const std::string prompt_name =
        request.prompt_index >= 0 && prompt < header.suite.prompts.size()
            ? "'" + header.suite.prompts[prompt].id + "'"
            : "index " + std::to_string(request.prompt_index);
    return connection.corrupt("is corrupt: it holds a record outside its plan (endpoint " +
                              std::to_string(request.endpoint_index) + ", prompt " + prompt_name +
                              ", concurrency " + std::to_string(request.concurrency) + ", probe " +
                              core::to_string(request.probe) + ", repeat " +
                              std::to_string(request.repeat) +
                              "); it was edited or damaged, so no verdict is given from it");
  }
  return {};
}

std::vector<core::PlannedRequest> keys_of(const std::vector<core::RequestRecord>& records) {
  std::vector<core::PlannedRequest> keys;
  keys.reserve(records.size());
  for (const auto& record : records) keys.push_back(record.planned);
  return keys;
}

} // namespace

void AuditDatabase::check_records_against_plan() { m_impl->plan_check = true; }

Result<core::AuditData> AuditDatabase::load(const PromptRecordsVisitor& visit,
                                            KeptRecords kept) const {
  if (!visit) return load_records(nullptr, kept);
  const PromptStreamVisitor read_whole = [&visit](const core::AuditData& header, int prompt_index,
                                                  const std::vector<core::RequestRecord>& records,
                                                  core::RecordTokens& tokens) -> Result<void> {
    for (std::size_t i = 0; i < records.size(); ++i) LLMREPRO_TRY(tokens.read(i));
    return visit(header, prompt_index, records);
  };
  return load_records(&read_whole, kept);
}

Result<core::AuditData> AuditDatabase::load_streamed(const PromptStreamVisitor& visit,
                                                     KeptRecords kept) const {
  return load_records(visit ? &visit : nullptr, kept);
}

Result<core::AuditData> AuditDatabase::load_records(const PromptStreamVisitor* visit,
                                                    KeptRecords kept) const {
  const std::lock_guard lock(m_impl->mutex);
  const detail::Connection& connection = m_impl->connection;
  const detail::RecordReader reader = m_impl->reader();
  // One read transaction: a snapshot even while another process records.
  LLMREPRO_TRY(connection.exec("BEGIN"));
  core::AuditData data;
  auto loaded = reader.read_header(data);
  if (loaded) loaded = detail::read_agent_prompts(connection, data.suite);
  std::function<bool(const core::RequestRecord&)> keep;
  core::PlanConfig plan;
  if (loaded && kept == KeptRecords::failures) {
    plan = core::plan_config_of(data.config, static_cast<int>(data.endpoints.size()));
    const bool plan_check = m_impl->plan_check;
    keep = [&plan, &data, plan_check](const core::RequestRecord& record) {
      return !record.outcome.ok ||
             (plan_check && !core::plan_contains(plan, data.suite.prompts.size(), record.planned));
    };
  }
  if (loaded)
    loaded = visit ? reader.stream_records(data, *visit, keep) : reader.read_records(data);
  if (loaded && m_impl->plan_check) loaded = check_in_plan(connection, data, keys_of(data.records));
  if (loaded) loaded = reader.read_probe_activity(data);
  if (loaded) {
    auto budget_stop = detail::read_budget_stop(connection);
    if (budget_stop)
      data.budget_stop = std::move(*budget_stop);
    else
      loaded = budget_stop.error();
  }
  for (std::size_t e = 0; loaded && e < data.endpoints.size(); ++e) {
    loaded = detail::read_endpoint_meta(connection, static_cast<int>(e), data.endpoints[e]);
  }
  if (loaded) {
    auto adaptive = detail::read_adaptive(connection);
    if (adaptive)
      data.adaptive = std::move(*adaptive);
    else
      loaded = adaptive.error();
  }
  if (loaded) {
    auto semantic = detail::read_semantic(connection);
    if (semantic)
      data.semantic = std::move(*semantic);
    else
      loaded = semantic.error();
  }
  (void)connection.exec("COMMIT");
  if (!loaded) return loaded.error();
  detail::derive_fingerprints(data);
  return data;
}

const std::optional<AuditDatabase::OlderSchema>& AuditDatabase::older_schema() const {
  return m_impl->older_schema;
}

Result<void> AuditDatabase::record(const core::RequestRecord& record) {
  const std::lock_guard lock(m_impl->mutex);
  LLMREPRO_TRY(m_impl->check_writable());
  return m_impl->transaction([&] { return m_impl->writer.write_record(record); });
}

Result<void> AuditDatabase::record_batch(const std::vector<core::RequestRecord>& records) {
  if (records.empty()) return {};
  const std::lock_guard lock(m_impl->mutex);
  LLMREPRO_TRY(m_impl->check_writable());
  return m_impl->transaction([&]() -> Result<void> {
    for (const auto& record : records) LLMREPRO_TRY(m_impl->writer.write_record(record));
    return {};
  });
}

Result<std::vector<core::PlannedRequest>> AuditDatabase::recorded_successes() const {
  const std::lock_guard lock(m_impl->mutex);
  auto successes = m_impl->reader().read_successes();
  if (!successes || !m_impl->plan_check) return successes;
  core::AuditData header;
  LLMREPRO_TRY(m_impl->reader().read_header(header));
  LLMREPRO_TRY(check_in_plan(m_impl->connection, header, *successes));
  return successes;
}

Result<void> AuditDatabase::set_status(const std::string& status, std::int64_t finished_ms) {
  if (status != "partial" && status != "complete")
    return core::make_error(ErrorCode::internal,
                            "audit status '" + status + "' is neither partial nor complete");
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->writer.write_status(status, finished_ms);
}

Result<void> AuditDatabase::store_outcome(const RunOutcome& outcome) {
  if (outcome.status != "partial" && outcome.status != "complete")
    return core::make_error(ErrorCode::internal, "audit status '" + outcome.status +
                                                     "' is neither partial nor complete");
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&]() -> Result<void> {
    LLMREPRO_TRY(m_impl->writer.write_status(outcome.status, outcome.finished_ms));
    LLMREPRO_TRY(detail::write_budget_stop(m_impl->connection, outcome.budget_stop));
    if (outcome.adaptive)
      LLMREPRO_TRY(detail::write_adaptive(m_impl->connection, *outcome.adaptive));
    if (outcome.semantic)
      LLMREPRO_TRY(detail::write_semantic(m_impl->connection, *outcome.semantic));
    return {};
  });
}

Result<void> AuditDatabase::store_probe_activity(const std::vector<core::ProbeActivity>& activity) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->writer.write_probe_activity(activity);
}

Result<void> AuditDatabase::update_endpoint(int index, const core::EndpointInfo& endpoint) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&]() -> Result<void> {
    LLMREPRO_TRY(m_impl->writer.write_endpoint(index, endpoint));
    return detail::write_endpoint_meta(m_impl->connection, index, endpoint);
  });
}

Result<void> AuditDatabase::update_config(const core::AuditConfig& config) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->writer.write_config(config);
}

Result<void> AuditDatabase::store_semantic(const core::SemanticAgreement& agreement) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&] { return detail::write_semantic(m_impl->connection, agreement); });
}

Result<void> AuditDatabase::store_adaptive(const core::AdaptiveOutcome& outcome) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&] { return detail::write_adaptive(m_impl->connection, outcome); });
}

Result<void> AuditDatabase::store_budget_stop(const std::string& line) {
  const std::lock_guard lock(m_impl->mutex);
  return m_impl->transaction([&] { return detail::write_budget_stop(m_impl->connection, line); });
}

Result<void> AuditDatabase::store_budget_charge(const core::BudgetCharge& charge) {
  const std::lock_guard lock(m_impl->mutex);
  return detail::write_budget_charge(m_impl->connection, charge);
}

Result<std::optional<core::BudgetCharge>> AuditDatabase::load_budget_charge() const {
  const std::lock_guard lock(m_impl->mutex);
  return detail::read_budget_charge(m_impl->connection);
}

Result<std::optional<core::SemanticAgreement>> AuditDatabase::load_semantic() const {
  const std::lock_guard lock(m_impl->mutex);
  return detail::read_semantic(m_impl->connection);
}

} // namespace llmrepro::store
