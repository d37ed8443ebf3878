#include "store/detail/run_meta.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
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
                       {"basis", core::to_string(prompt.basis)},
                       {"basis_reason", prompt.basis_reason}});
  }
  Json contradicted = Json::array();
  for (const auto& [concurrency, contradiction] : outcome.contradicted)
    contradicted.push_back({{"concurrency", concurrency},
                            {"look", contradiction.look},
                            {"reason", contradiction.reason}});
  return {
      {"initial_runs", config.initial_runs},
      {"max_runs", config.max_runs},
      {"epsilon", config.epsilon},
      {"confidence", config.confidence},
      {"max_unique", config.max_unique ? Json(*config.max_unique) : Json()},
      {"max_logprob_drift", config.max_logprob_drift ? Json(*config.max_logprob_drift) : Json()},
      {"min_tara", config.min_tara ? Json(*config.min_tara) : Json()},
      {"fragile_p", config.fragile_p ? Json(*config.fragile_p) : Json()},
      {"fragile_window", config.fragile_window},
      {"assumption", core::to_string(config.assumption)},
      {"contradicted", contradicted},
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
  // Absent from outcomes stored before the noise model was checked: nothing assumed, nothing
  // contradicted, no reason given.
  if (json.contains("assumption")) {
    auto assumption = core::parse_adaptive_assumption(json.at("assumption").get<std::string>());
    if (!assumption) return assumption.error();
    config.assumption = *assumption;
  }
  if (json.contains("contradicted"))
    for (const Json& item : json.at("contradicted"))
      outcome.contradicted[item.at("concurrency").get<int>()] = core::NoiseModelContradiction{
          item.at("look").get<int>(), item.at("reason").get<std::string>()};
  // Absent in outcomes stored before the stops waited for these gates: none was waited for.
  if (json.contains("max_logprob_drift") && !json.at("max_logprob_drift").is_null())
    config.max_logprob_drift = json.at("max_logprob_drift").get<double>();
  if (json.contains("min_tara") && !json.at("min_tara").is_null())
    config.min_tara = json.at("min_tara").get<double>();
  if (json.contains("fragile_p") && !json.at("fragile_p").is_null())
    config.fragile_p = json.at("fragile_p").get<double>();
  if (json.contains("fragile_window")) config.fragile_window = json.at("fragile_window").get<int>();
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
    if (item.contains("basis_reason"))
      prompt.basis_reason = item.at("basis_reason").get<std::string>();
    outcome.prompts.push_back(std::move(prompt));
  }
  return outcome;
}

// One meta row: `value` stored under `key`, replacing what was there; `what` names it in the error.
Result<void> write_meta(const Connection& connection, const std::string& key,
                        const std::string& value, const std::string& what) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("INSERT OR REPLACE INTO meta (key, value) "
                                                    "VALUES (?1, ?2)"));
  bind_text(statement.get(), 1, key);
  bind_text(statement.get(), 2, value);
  const std::string message = "cannot store " + what;
  return connection.step_done(statement.get(), message.c_str());
}

// The value of the meta row `key`, or none when the audit has no such row.
Result<std::optional<std::string>> read_meta(const Connection& connection, const std::string& key) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(
      statement, connection.prepare("SELECT value FROM meta WHERE key = ?1", ErrorCode::input));
  bind_text(statement.get(), 1, key);
  if (sqlite3_step(statement.get()) != SQLITE_ROW) return std::optional<std::string>{};
  return std::optional<std::string>{column_text(statement.get(), 0)};
}

} // namespace

Result<void> write_adaptive(const Connection& connection, const core::AdaptiveOutcome& outcome) {
  return write_meta(connection, "adaptive", to_json(outcome).dump(), "the adaptive decisions");
}

Result<std::optional<core::AdaptiveOutcome>> read_adaptive(const Connection& connection) {
  std::optional<std::string> value;
  LLMREPRO_TRY_ASSIGN(value, read_meta(connection, "adaptive"));
  if (!value) return std::optional<core::AdaptiveOutcome>{};
  const std::string where = connection.where() + ": meta 'adaptive'";
  try {
    auto outcome = from_json(Json::parse(*value));
    if (!outcome) return core::make_error(ErrorCode::input, where + ": " + outcome.error().message);
    return std::optional<core::AdaptiveOutcome>{std::move(*outcome)};
  } catch (const Json::exception& error) {
    return core::make_error(ErrorCode::input, where + ": unreadable (" + error.what() + ")");
  }
}

Result<void> write_budget_stop(const Connection& connection, const std::string& line) {
  if (line.empty()) {
    Statement statement;
    LLMREPRO_TRY_ASSIGN(statement,
                        connection.prepare("DELETE FROM meta WHERE key = 'budget_stop'"));
    return connection.step_done(statement.get(), "cannot clear the budget stop");
  }
  return write_meta(connection, "budget_stop", line, "the budget stop");
}

Result<std::string> read_budget_stop(const Connection& connection) {
  std::optional<std::string> value;
  LLMREPRO_TRY_ASSIGN(value, read_meta(connection, "budget_stop"));
  return value.value_or(std::string());
}

Result<void> write_budget_charge(const Connection& connection, const core::BudgetCharge& charge) {
  const Json encoded{{"requests", charge.requests},
                     {"prompt_tokens", charge.prompt_tokens},
                     {"completion_tokens", charge.completion_tokens}};
  return write_meta(connection, "budget_charge", encoded.dump(), "the budget's count");
}

Result<std::optional<core::BudgetCharge>> read_budget_charge(const Connection& connection) {
  std::optional<std::string> value;
  LLMREPRO_TRY_ASSIGN(value, read_meta(connection, "budget_charge"));
  if (!value) return std::optional<core::BudgetCharge>{};
  try {
    const Json json = Json::parse(*value);
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

namespace {

// Removes meta row `key` (what it held, for the error: "a server description").
Result<void> delete_meta(const Connection& connection, const std::string& key, const char* what) {
  Statement statement;
  LLMREPRO_TRY_ASSIGN(statement, connection.prepare("DELETE FROM meta WHERE key = ?1"));
  bind_text(statement.get(), 1, key);
  const std::string message = std::string("cannot clear ") + what;
  return connection.step_done(statement.get(), message.c_str());
}

} // namespace

Result<void> write_server(const Connection& connection, int index,
                          const core::ServerDescription& description) {
  const std::string key = "server:" + std::to_string(index);
  if (!description.known()) return delete_meta(connection, key, "a server description");
  Json facts = Json::array();
  for (const core::ServerFact& fact : description.facts) facts.push_back({fact.name, fact.value});
  const Json encoded{{"kind", description.kind},
                     {"version", description.version},
                     {"summary", description.summary},
                     {"facts", facts}};
  return write_meta(connection, key, encoded.dump(), "a server description");
}

Result<core::ServerDescription> read_server(const Connection& connection, int index) {
  const std::string key = "server:" + std::to_string(index);
  std::optional<std::string> value;
  LLMREPRO_TRY_ASSIGN(value, read_meta(connection, key));
  if (!value) return core::ServerDescription{};
  try {
    const Json json = Json::parse(*value);
    core::ServerDescription description;
    description.kind = json.at("kind").get<std::string>();
    description.version = json.at("version").get<std::string>();
    description.summary = json.at("summary").get<std::string>();
    for (const Json& fact : json.at("facts"))
      description.facts.push_back({fact.at(0).get<std::string>(), fact.at(1).get<std::string>()});
    return description;
  } catch (const Json::exception& error) {
    return core::make_error(ErrorCode::input, connection.where() + ": meta '" + key +
                                                  "': unreadable (" + error.what() + ")");
  }
}

namespace {

Json check_json(const core::CapabilityCheck& check) {
  return Json::array({core::to_string(check.outcome), check.detail});
}

core::CapabilityCheck check_from_json(const Json& json) {
  auto outcome = core::parse_capability_outcome(json.at(0).get<std::string>());
  if (!outcome) throw std::invalid_argument(outcome.error().message);
  return {*outcome, json.at(1).get<std::string>()};
}

} // namespace

Result<void> write_capabilities(const Connection& connection, int index,
                                const core::EndpointCapabilities& capabilities) {
  const std::string key = "capabilities:" + std::to_string(index);
  if (!capabilities.checked()) return delete_meta(connection, key, "a capability preflight");
  const Json encoded{{"requests", capabilities.requests},
                     {"model", capabilities.model},
                     {"requested", core::to_string(capabilities.requested)},
                     {"in_effect", core::to_string(capabilities.in_effect)},
                     {"temperature", check_json(capabilities.temperature)},
                     {"logprobs", check_json(capabilities.logprobs)},
                     {"candidates", Json::array({capabilities.candidates_requested,
                                                 capabilities.candidates_returned})},
                     {"seed", check_json(capabilities.seed)},
                     {"failure", capabilities.failure}};
  return write_meta(connection, key, encoded.dump(), "a capability preflight");
}

Result<core::EndpointCapabilities> read_capabilities(const Connection& connection, int index) {
  const std::string key = "capabilities:" + std::to_string(index);
  std::optional<std::string> value;
  LLMREPRO_TRY_ASSIGN(value, read_meta(connection, key));
  if (!value) return core::EndpointCapabilities{};
  const auto mode = [](const Json& json) {
    auto parsed = core::parse_temperature_mode(json.get<std::string>());
    if (!parsed) throw std::invalid_argument(parsed.error().message);
    return *parsed;
  };
  try {
    const Json json = Json::parse(*value);
    core::EndpointCapabilities capabilities;
    capabilities.requests = json.at("requests").get<int>();
    capabilities.model = json.at("model").get<std::string>();
    capabilities.requested = mode(json.at("requested"));
    capabilities.in_effect = mode(json.at("in_effect"));
    capabilities.temperature = check_from_json(json.at("temperature"));
    capabilities.logprobs = check_from_json(json.at("logprobs"));
    capabilities.candidates_requested = json.at("candidates").at(0).get<int>();
    capabilities.candidates_returned = json.at("candidates").at(1).get<int>();
    capabilities.seed = check_from_json(json.at("seed"));
    capabilities.failure = json.at("failure").get<std::string>();
    return capabilities;
  } catch (const std::exception& error) {
    return core::make_error(ErrorCode::input, connection.where() + ": meta '" + key +
                                                  "': unreadable (" + error.what() + ")");
  }
}

Result<void> write_endpoint_meta(const Connection& connection, int index,
                                 const core::EndpointInfo& endpoint) {
  LLMREPRO_TRY(write_server(connection, index, endpoint.server));
  return write_capabilities(connection, index, endpoint.capabilities);
}

Result<void> read_endpoint_meta(const Connection& connection, int index,
                                core::EndpointInfo& endpoint) {
  LLMREPRO_TRY_ASSIGN(endpoint.server, read_server(connection, index));
  LLMREPRO_TRY_ASSIGN(endpoint.capabilities, read_capabilities(connection, index));
  return {};
}

Result<void> write_agent_prompts(const Connection& connection, const core::Suite& suite) {
  Json prompts = Json::object();
  for (std::size_t i = 0; i < suite.prompts.size(); ++i) {
    const core::Prompt& prompt = suite.prompts[i];
    if (prompt.tools_json.empty()) continue;
    Json results = Json::array();
    for (const core::ToolResult& result : prompt.tool_results)
      results.push_back({result.name, result.arguments, result.result});
    prompts[std::to_string(i)] = {
        {"tools", prompt.tools_json}, {"tool_results", results}, {"max_steps", prompt.max_steps}};
  }
  if (prompts.empty()) return {};
  return write_meta(connection, "agent_prompts", prompts.dump(), "the prompts' tools");
}

Result<void> read_agent_prompts(const Connection& connection, core::Suite& suite) {
  std::optional<std::string> value;
  LLMREPRO_TRY_ASSIGN(value, read_meta(connection, "agent_prompts"));
  if (!value) return {};
  try {
    const Json json = Json::parse(*value);
    for (const auto& [index, agent] : json.items()) {
      const std::size_t i = std::stoul(index);
      if (i >= suite.prompts.size()) throw std::out_of_range("prompt " + index);
      core::Prompt& prompt = suite.prompts[i];
      prompt.tools_json = agent.at("tools").get<std::string>();
      prompt.max_steps = agent.at("max_steps").get<int>();
      for (const Json& result : agent.at("tool_results"))
        prompt.tool_results.push_back({result.at(0).get<std::string>(),
                                       result.at(1).get<std::string>(),
                                       result.at(2).get<std::string>()});
    }
    return {};
  } catch (const std::exception& error) {
    return core::make_error(ErrorCode::input, connection.where() +
                                                  ": meta 'agent_prompts': unreadable (" +
                                                  error.what() + ")");
  }
}

} // namespace llmrepro::store::detail
