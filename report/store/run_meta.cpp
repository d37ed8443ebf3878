#include "report/store/detail/run_meta.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace llmrepro::store::detail {
namespace {

using core::ErrorCode;
using core::Result;
using Json = nlohmann::json;

Json to_json(const core::AdaptiveOutcome& outcome) {
  const core::AdaptiveConfig& config = outcome.config;
  Json prompts = Json::array();
  for (const auto& prompt : outcome.prompts) {
    Json planned = Json::array();
    for (const auto& [concurrency, runs] : prompt.planned) planned.push_back({concurrency, runs});
    prompts.push_back({{"prompt_index", prompt.prompt_index},
                       {"id", prompt.id},
                       {"stop", core::to_string(prompt.stop)},
                       {"look", prompt.stopped_at_look},
                       {"planned", planned},
                       {"p_flip_bound", prompt.p_flip_bound ? Json(*prompt.p_flip_bound) : Json()},
                       {"basis", core::to_string(prompt.basis)}});
  }
  return {{"initial_runs", config.initial_runs},
          {"max_runs", config.max_runs},
          {"epsilon", config.epsilon},
          {"confidence", config.confidence},
          {"max_unique", config.max_unique ? Json(*config.max_unique) : Json()},
          {"looks", outcome.looks},
          {"finished", outcome.finished},
          {"prompts", prompts}};
}

Result<core::AdaptiveOutcome> from_json(const Json& json) {
  core::AdaptiveOutcome outcome;
  core::AdaptiveConfig& config = outcome.config;
  config.initial_runs = json.at("initial_runs").get<int>();
  config.max_runs = json.at("max_runs").get<int>();
  config.epsilon = json.at("epsilon").get<double>();
  config.confidence = json.at("confidence").get<double>();
  if (!json.at("max_unique").is_null()) config.max_unique = json.at("max_unique").get<int>();
  outcome.looks = json.at("looks").get<int>();
  outcome.finished = json.at("finished").get<bool>();
  for (const Json& item : json.at("prompts")) {
    core::AdaptivePrompt prompt;
    prompt.prompt_index = item.at("prompt_index").get<int>();
    prompt.id = item.at("id").get<std::string>();
    auto stop = core::parse_adaptive_stop(item.at("stop").get<std::string>());
    if (!stop) return stop.error();
    prompt.stop = *stop;
    prompt.stopped_at_look = item.at("look").get<int>();
    for (const Json& level : item.at("planned"))
      prompt.planned[level.at(0).get<int>()] = level.at(1).get<int>();
    if (!item.at("p_flip_bound").is_null())
      prompt.p_flip_bound = item.at("p_flip_bound").get<double>();
    auto basis = core::parse_bound_basis(item.at("basis").get<std::string>());
    if (!basis) return basis.error();
    prompt.basis = *basis;
    outcome.prompts.push_back(std::move(prompt));
  }
  return outcome;
}

} // namespace

Result<void> write_adaptive(const Connection& connection, const core::AdaptiveOutcome& outcome) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("INSERT OR REPLACE INTO meta (key, value) "
                                                    "VALUES ('adaptive', ?1)"));
  const std::string encoded = to_json(outcome).dump();
  bind_text(statement.get(), 1, encoded);
  return connection.step_done(statement.get(), "cannot store the adaptive decisions");
}

Result<std::optional<core::AdaptiveOutcome>> read_adaptive(const Connection& connection) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("SELECT value FROM meta WHERE key = "
                                                    "'adaptive'",
                                                    ErrorCode::input));
  if (sqlite3_step(statement.get()) != SQLITE_ROW) return std::optional<core::AdaptiveOutcome>{};
  const std::string where = connection.where() + ": meta 'adaptive'";
  try {
    auto outcome = from_json(Json::parse(column_text(statement.get(), 0)));
    if (!outcome) return core::make_error(ErrorCode::input, where + ": " + outcome.error().message);
    return std::optional<core::AdaptiveOutcome>{std::move(*outcome)};
  } catch (const Json::exception& error) {
    return core::make_error(ErrorCode::input, where + ": unreadable (" + error.what() + ")");
  }
}

Result<void> write_budget_stop(const Connection& connection, const std::string& line) {
  Statement statement;
  if (line.empty()) {
    LLMREPRO_TRY_ASSIGN(statement,
                        connection.prepare("DELETE FROM meta WHERE key = 'budget_stop'"));
    return connection.step_done(statement.get(), "cannot clear the budget stop");
  }
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("INSERT OR REPLACE INTO meta (key, value) "
                                                    "VALUES ('budget_stop', ?1)"));
  bind_text(statement.get(), 1, line);
  return connection.step_done(statement.get(), "cannot store the budget stop");
}

Result<std::string> read_budget_stop(const Connection& connection) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("SELECT value FROM meta WHERE key = "
                                                    "'budget_stop'",
                                                    ErrorCode::input));
  if (sqlite3_step(statement.get()) != SQLITE_ROW) return std::string();
  return column_text(statement.get(), 0);
}

Result<void> write_budget_charge(const Connection& connection, const core::BudgetCharge& charge) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("INSERT OR REPLACE INTO meta (key, value) "
                                                    "VALUES ('budget_charge', ?1)"));
  const std::string encoded = Json{
      {"requests", charge.requests},
      {"prompt_tokens", charge.prompt_tokens},
      {"completion_tokens",
       charge.completion_tokens}}.dump();
  bind_text(statement.get(), 1, encoded);
  return connection.step_done(statement.get(), "cannot store the budget's count");
}

Result<std::optional<core::BudgetCharge>> read_budget_charge(const Connection& connection) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("SELECT value FROM meta WHERE key = "
                                                    "'budget_charge'",
                                                    ErrorCode::input));
  if (sqlite3_step(statement.get()) != SQLITE_ROW) return std::optional<core::BudgetCharge>{};
  try {
    const Json json = Json::parse(column_text(statement.get(), 0));
    core::BudgetCharge charge;
    charge.requests = json.at("requests").get<long>();
    charge.prompt_tokens = json.at("prompt_tokens").get<long>();
    charge.completion_tokens = json.at("completion_tokens").get<long>();
    return std::optional<core::BudgetCharge>{charge};
  } catch (const Json::exception& error) {
    return core::make_error(ErrorCode::input, connection.where() +
                                                  ": meta 'budget_charge': unreadable (" +
                                                  error.what() + ")");
  }
}

} // namespace llmrepro::store::detail
