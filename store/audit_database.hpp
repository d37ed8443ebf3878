// The audit database: one SQLite file per audit, committed request by request so that a crash
// loses at most the requests in flight, and complete enough that `report` and `--resume` need
// nothing else (configuration, suite and endpoints are stored beside the records).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/budget.hpp"
#include "core/plan.hpp"
#include "core/record_tokens.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"
#include "core/semantic_agreement.hpp"

namespace llmrepro::store {

// How a run ended, saved once at its end (AuditDatabase::store_outcome), so that no crash can
// leave one part of it from this run beside another from an earlier one.
struct RunOutcome {
  std::string status;           // "partial" or "complete"
  std::int64_t finished_ms = 0; // when the run ended
  std::string budget_stop;      // this run's budget stop line (core::RunFacts); empty clears it
  // The adaptive decisions as the run's last look left them; empty: not an adaptive audit.
  std::optional<core::AdaptiveOutcome> adaptive;
  // The semantic agreement measured after the run (--embeddings); empty: none measured, the
  // stored one (if any) is kept.
  std::optional<core::SemanticAgreement> semantic;
};

class AuditDatabase {
public:
  // The version of the table layout this build writes and reads. open() also takes versions 1
  // (a row per token) and 2 (packed tokens in blob format 1, every completion text stored),
  // upgrading them in place, and refuses any other.
  static constexpr int k_schema_version = 3;

  // What open() did with a database of an older schema version.
  struct OlderSchema {
    int version = 1;
    // True: upgraded in place to k_schema_version. False: the file is read-only, so it is read as
    // it is, and record() and record_batch() refuse.
    bool upgraded = false;
    // By the upgrade (0 when another process upgraded it): the token rows packed (from version 1)
    // or the tokens repacked (from version 2).
    std::int64_t token_rows_packed = 0;
  };

  // Creates a new audit database at `path` (the file may be absent or an empty SQLite file)
  // and stores the header: info, config, suite, endpoints and any records and errors it holds.
  // ErrorCode::input when the file already holds an audit or is not an SQLite database;
  // ErrorCode::environment when the file cannot be created or written.
  static core::Result<AuditDatabase> create(const std::string& path, const core::AuditData& header);

  // Opens an existing audit database for reading, recording and resuming. A version 1 or 2
  // database is upgraded in place first, in one transaction (older_schema() says so), or, when
  // the file is read-only, read as it is. ErrorCode::input when the file is missing, not an
  // SQLite database, not an audit, of another schema version, or holds unreadable tokens;
  // ErrorCode::environment when an older file cannot be upgraded (locked by another writer).
  static core::Result<AuditDatabase> open(const std::string& path);

  AuditDatabase(AuditDatabase&& other) noexcept;
  AuditDatabase& operator=(AuditDatabase&& other) noexcept;
  AuditDatabase(const AuditDatabase&) = delete;
  AuditDatabase& operator=(const AuditDatabase&) = delete;
  ~AuditDatabase();

  // Receives the audit's header (everything but the records) and every record of one prompt
  // (all endpoints and probe kinds, in recorded order, with completion text and tokens);
  // prompts come in ascending index order.
  using PromptRecordsVisitor = std::function<core::Result<void>(
      const core::AuditData& header, int prompt_index, const std::vector<core::RequestRecord>&)>;

  // Everything stored, records in the order they were recorded (a replaced record counts as
  // recorded when it was replaced). Each endpoint's fingerprints are the distinct non-empty
  // system_fingerprint values of its successful records, sorted.
  // With `visit`, the records are streamed instead: each prompt's records are read, handed to
  // `visit`, and kept in the result without their completion text and tokens, so memory holds
  // one prompt's tokens at a time however large the audit. An error from `visit` stops the load.
  // KeptRecords::failures keeps only the failed records (and any outside the plan, which the
  // plan check refuses), counting the others in AuditData::records_not_kept, so that memory does
  // not grow with the records either.
  enum class KeptRecords { all, failures };
  core::Result<core::AuditData> load(const PromptRecordsVisitor& visit = {},
                                     KeptRecords kept = KeptRecords::all) const;

  // Receives the header and every record of one prompt, as PromptRecordsVisitor does, before
  // their tokens are read: `tokens` reads a record's tokens (and the text the file spells by
  // them) when the visitor asks, and drops them again, so that memory need hold only the tokens
  // of the record being read. A record the visitor does not read is kept without them as any.
  using PromptStreamVisitor = std::function<core::Result<void>(
      const core::AuditData& header, int prompt_index, const std::vector<core::RequestRecord>&,
      core::RecordTokens& tokens)>;
  // load() with `visit` reading each record's tokens as it goes.
  core::Result<core::AuditData> load_streamed(const PromptStreamVisitor& visit,
                                              KeptRecords kept = KeptRecords::all) const;

  // Stores one finished request with its tokens in one transaction. A record whose key
  // (endpoint, prompt, concurrency, probe, repeat) is already stored replaces the old record and
  // its tokens, so every planned request is stored exactly once. Safe to call from any thread.
  core::Result<void> record(const core::RequestRecord& record);

  // Stores `records` in order, each as record() would, in one transaction: all are committed
  // or none is. Empty: nothing happens.
  core::Result<void> record_batch(const std::vector<core::RequestRecord>& records);

  // The keys of the successful records, in recorded order: what --resume need not send again.
  core::Result<std::vector<core::PlannedRequest>> recorded_successes() const;

  // Marks the audit "partial" or "complete" and stores when it finished. ErrorCode::internal for
  // any other status.
  core::Result<void> set_status(const std::string& status, std::int64_t finished_ms);

  // Stores how a run ended, every part of `outcome` in one transaction: all or nothing.
  // ErrorCode::internal for a status other than "partial" or "complete".
  core::Result<void> store_outcome(const RunOutcome& outcome);

  // Stores what the probes of the run that just ended did beside the audited requests (filler
  // and priming requests, cache flushes), so that `report` renders what the audit did.
  core::Result<void> store_probe_activity(const std::vector<core::ProbeActivity>& activity);

  // Replaces the stored decisions of an adaptive audit (--adaptive) with `outcome`: after every
  // look, so that an interrupted audit keeps what was decided.
  core::Result<void> store_adaptive(const core::AdaptiveOutcome& outcome);

  // Stores the error line of a run a budget stopped (core::RunFacts::budget_stop), so that
  // `report` judges the audit as the run did; an empty line clears it (a later run was not
  // stopped by a budget).
  core::Result<void> store_budget_stop(const std::string& line);

  // Stores what the budgets have charged (core::BudgetLedger::charged), committed at once: the
  // ledger's journal calls it before each send, so that kill -9 and --resume never exceed a
  // budget. Safe to call from any thread.
  core::Result<void> store_budget_charge(const core::BudgetCharge& charge);

  // The charge the last budgeted run stored; empty when none did.
  core::Result<std::optional<core::BudgetCharge>> load_budget_charge() const;

  // Replaces what is known about endpoint `index` (the dialect and model are learned at run time).
  // Fingerprints are not stored: load() derives them from the records. Its server description
  // replaces the stored one (meta 'server:<index>'), an unknown one removing it.
  // ErrorCode::internal when no endpoint has that index.
  core::Result<void> update_endpoint(int index, const core::EndpointInfo& endpoint);

  // Replaces the stored configuration (the judging flags given on --resume), so that a later
  // `report` judges the audit as the last run did. ErrorCode::input when no audit is stored.
  core::Result<void> update_config(const core::AuditConfig& config);

  // Stores the semantic agreement measured after the run (`--embeddings`), replacing any stored
  // before, in one transaction.
  core::Result<void> store_semantic(const core::SemanticAgreement& agreement);

  // The stored semantic agreement, summarized; empty when none was measured. ErrorCode::input
  // when its rows are unreadable.
  core::Result<std::optional<core::SemanticAgreement>> load_semantic() const;

  // Set when open() found an older schema version: whether it upgraded the file or reads it as
  // it is. Callers say which (one line), since the file changed under the user's feet.
  const std::optional<OlderSchema>& older_schema() const;

  // From now on, load() and recorded_successes() check every record against the stored plan
  // (core::plan_contains over the stored configuration, suite and endpoints): a record outside it
  // makes the database corrupt, ErrorCode::input naming the database and the first such record,
  // so that it never counts toward completeness. Every command opens its databases so.
  void check_records_against_plan();

  // The file this database was opened or created at, for messages.
  const std::string& path() const;

private:
  struct Impl;
  explicit AuditDatabase(std::unique_ptr<Impl> impl);
  // load() and load_streamed(): every record whole where `visit` is null.
  core::Result<core::AuditData> load_records(const PromptStreamVisitor* visit,
                                             KeptRecords kept) const;
  std::unique_ptr<Impl> m_impl;
};

} // namespace llmrepro::store
