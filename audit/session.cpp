#include "audit/session.hpp"

#include "audit/read_ahead.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib> // defines __GLIBC__ where the C library is glibc
#include <optional>
#include <thread>
#include <utility>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace llmrepro::audit {

namespace {

// Records read ahead of the analysis at most: a few records' tokens (80 bytes a token), and the
// reader wakes once every half of them.
constexpr std::size_t k_read_ahead_depth = 8;

// Gives the pages of freed memory back to the system. The scan's token lists (reused record after
// record) and the completions the analyses kept are freed when it ends, in the middle of malloc's
// heap, where the summary's buffers that come next do not fit; glibc keeps such pages resident,
// so the report's peak would be the scan's lists and the summary's buffers together.
void return_freed_pages() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

} // namespace

core::Result<store::AuditDatabase> open_audit_database(const std::string& path,
                                                       const Notify& notify) {
  auto database = store::AuditDatabase::open(path);
  if (!database) return database;
  // A record outside the stored plan (an edited or damaged file) never counts toward the verdict.
  database->check_records_against_plan();
  const auto& older = database->older_schema();
  if (!older || !notify) return database;
  if (older->upgraded)
    notify(fmt::format("llmrepro: upgraded audit database '{}' in place from schema version {} to "
                       "{} ({} {})\n",
                       path, older->version, store::AuditDatabase::k_schema_version,
                       older->token_rows_packed,
                       older->version == 1 ? "token rows packed" : "tokens repacked"));
  else
    notify(fmt::format("llmrepro: reading audit database '{}' of schema version {} as it is (the "
                       "file is read-only, so it was not upgraded to version {})\n",
                       path, older->version, store::AuditDatabase::k_schema_version));
  return database;
}

core::Result<Session> load_session(const store::AuditDatabase& database,
                                   const SessionOptions& options) {
  std::shared_ptr<core::PromptDetails> details;
  if (options.lean) LLMREPRO_TRY_ASSIGN(details, core::PromptDetails::create());
  std::optional<core::AuditReportBuilder> builder;
  const auto emplace = [&](const core::AuditData& header) {
    builder.emplace(header);
    if (details) builder->keep_details(details);
  };
  const auto start = [&](const core::AuditData& stored) -> core::Result<void> {
    if (!options.adjust) {
      emplace(stored);
      return {};
    }
    core::AuditData header = stored; // no records: the configuration, endpoints and suite
    LLMREPRO_TRY(options.adjust(header));
    emplace(header);
    return {};
  };
  Session session;
  std::vector<std::size_t> kept;
  const bool read_ahead = options.read_ahead && std::thread::hardware_concurrency() >= 2;
  // Each record's tokens are read as the analyses take it, a few records ahead of them.
  auto loaded = database.load_streamed(
      [&](const core::AuditData& stored, int prompt_index,
          const std::vector<core::RequestRecord>& records,
          core::RecordTokens& tokens) -> core::Result<void> {
        if (!builder) LLMREPRO_TRY(start(stored));
        kept.clear();
        for (std::size_t i = 0; i < records.size(); ++i) {
          const core::RequestRecord& record = records[i];
          if (!options.keep || options.keep(record)) kept.push_back(i);
          const auto prompt = static_cast<std::size_t>(record.planned.prompt_index);
          if (!record.outcome.ok || record.planned.prompt_index < 0) continue;
          if (prompt >= session.successes.size()) session.successes.resize(prompt + 1, 0);
          ++session.successes[prompt];
        }
        if (!read_ahead) return builder->add_streamed_prompt(prompt_index, records, kept, tokens);
        ReadAhead ahead(tokens, k_read_ahead_depth, &records);
        return ahead.run([&](core::RecordTokens& read) {
          return builder->add_streamed_prompt(prompt_index, records, kept, read);
        });
      },
      options.lean ? store::AuditDatabase::KeptRecords::failures
                   : store::AuditDatabase::KeptRecords::all);
  if (!loaded) return loaded.error();
  return_freed_pages();
  if (details) LLMREPRO_TRY(details->error());
  session.data = std::make_unique<core::AuditData>(std::move(*loaded));
  session.successes.resize(std::max(session.successes.size(), session.data->suite.prompts.size()),
                           0);
  if (options.adjust) LLMREPRO_TRY(options.adjust(*session.data));
  if (!builder) emplace(*session.data); // an audit with no records yet
  session.report = options.judge ? builder->finish(options.tool, *session.data)
                                 : builder->finish_unjudged(options.tool, *session.data);
  return session;
}

core::Result<Session> load_session(const std::string& path, const SessionOptions& options,
                                   const Notify& notify) {
  auto database = open_audit_database(path, notify);
  if (!database) return database.error();
  return load_session(*database, options);
}

} // namespace llmrepro::audit
