#include "store/detail/semantic_tables.hpp"

#include <utility>

#include "core/result.hpp"

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;

constexpr const char* k_semantic_sql = R"sql(
CREATE TABLE IF NOT EXISTS semantic (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1), model TEXT NOT NULL, threshold REAL NOT NULL);
CREATE TABLE IF NOT EXISTS semantic_prompts (
  prompt_index INTEGER PRIMARY KEY, distinct_count INTEGER NOT NULL, pairs INTEGER NOT NULL,
  mean REAL NOT NULL, std REAL NOT NULL, min REAL NOT NULL);
DELETE FROM semantic; DELETE FROM semantic_prompts;
)sql";

} // namespace

Result<void> write_semantic(const Connection& connection,
                            const core::SemanticAgreement& agreement) {
  LLMREPRO_TRY(connection.exec(k_semantic_sql));
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("INSERT INTO semantic (singleton, "
                                                    "model, threshold) VALUES (1, ?1, ?2)"));
  bind_text(statement.get(), 1, agreement.model);
  sqlite3_bind_double(statement.get(), 2, agreement.threshold);
  if (auto done = connection.step_done(statement.get(), "cannot store the semantic agreement");
      !done)
    return done;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("INSERT INTO semantic_prompts (prompt_index, "
                                                    "distinct_count, pairs, mean, std, min) VALUES "
                                                    "(?1, ?2, ?3, ?4, ?5, ?6)"));
  for (const auto& prompt : agreement.prompts) {
    sqlite3_bind_int(statement.get(), 1, prompt.prompt_index);
    sqlite3_bind_int(statement.get(), 2, prompt.distinct);
    sqlite3_bind_int(statement.get(), 3, prompt.pairs);
    sqlite3_bind_double(statement.get(), 4, prompt.mean);
    sqlite3_bind_double(statement.get(), 5, prompt.std);
    sqlite3_bind_double(statement.get(), 6, prompt.min);
    if (auto done = connection.step_done(statement.get(), "cannot store a prompt's similarity");
        !done)
      return done;
  }
  return {};
}

Result<std::optional<core::SemanticAgreement>> read_semantic(const Connection& connection) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(
      statement, connection.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'semantic'",
                                    ErrorCode::input));
  int tables = 0;
  LLMREPRO_TRY(
      connection.for_each_row(statement.get(), "cannot read the tables", [&](sqlite3_stmt* row) {
        tables = column_int(row, 0);
        return Result<void>{};
      }));
  if (tables == 0) return std::optional<core::SemanticAgreement>{};

  core::SemanticAgreement agreement;
  bool found = false;
  LLMREPRO_TRY_ASSIGN(
      statement, connection.prepare("SELECT model, threshold FROM semantic", ErrorCode::input));
  LLMREPRO_TRY(connection.for_each_row(statement.get(), "cannot read the semantic agreement",
                                       [&](sqlite3_stmt* row) {
                                         found = true;
                                         agreement.model = column_text(row, 0);
                                         agreement.threshold = sqlite3_column_double(row, 1);
                                         return Result<void>{};
                                       }));
  if (!found) return std::optional<core::SemanticAgreement>{};
  LLMREPRO_TRY_ASSIGN(statement,
                      connection.prepare("SELECT prompt_index, distinct_count, pairs, mean, "
                                         "std, min FROM semantic_prompts ORDER BY "
                                         "prompt_index",
                                         ErrorCode::input));
  LLMREPRO_TRY(connection.for_each_row(statement.get(), "cannot read the semantic agreement",
                                       [&](sqlite3_stmt* row) {
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
                                       }));
  core::summarize(agreement);
  return std::optional<core::SemanticAgreement>{std::move(agreement)};
}

} // namespace llmrepro::store::detail
