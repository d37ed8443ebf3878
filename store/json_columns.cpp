#include "store/detail/json_columns.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/result.hpp"

namespace llmrepro::store::detail {
namespace {

using core::Error;
using core::ErrorCode;
using core::Result;
using Json = nlohmann::json;

// Logprobs inside the `more` JSON: an unknown one (core::k_unknown_logprob, NaN) is null, as
// its REAL column is NULL; JSON has no infinities, so those become strings.
Json logprob_to_json(double logprob) {
  if (std::isfinite(logprob)) return logprob;
  if (std::isnan(logprob)) return nullptr;
  return logprob > 0 ? "inf" : "-inf";
}

// Reads the JSON documents stored in the database; every missing or mistyped field is an error
// naming it and the document it belongs to.
class JsonReader {
public:
  JsonReader(std::string where) : m_where(std::move(where)) {}

  Error error(const std::string& field, const char* expected) const {
    return core::make_error(ErrorCode::input,
                            m_where + ": field '" + field + "' is missing or not " + expected);
  }

  const Json* find(const Json& object, const std::string& field) const {
    if (!object.is_object()) return nullptr;
    const auto it = object.find(field);
    return it == object.end() ? nullptr : &*it;
  }

  Result<std::string> string(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr || !value->is_string()) return error(field, "a string");
    return value->get<std::string>();
  }

  Result<std::int64_t> integer(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr || !value->is_number_integer()) return error(field, "an integer");
    if (value->is_number_unsigned() &&
        value->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      return error(field, "an integer in range");
    return value->get<std::int64_t>();
  }

  Result<int> small_integer(const Json& object, const std::string& field) const {
    std::int64_t value = 0;
    LLMREPRO_TRY_ASSIGN(value, integer(object, field));
    if (value < INT32_MIN || value > INT32_MAX) return error(field, "an integer in range");
    return static_cast<int>(value);
  }

  Result<std::uint64_t> unsigned_integer(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr || !value->is_number_unsigned())
      return error(field, "an unsigned integer");
    return value->get<std::uint64_t>();
  }

  Result<double> number(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr || !value->is_number()) return error(field, "a number");
    return value->get<double>();
  }

  Result<bool> boolean(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr || !value->is_boolean()) return error(field, "a boolean");
    return value->get<bool>();
  }

  // Present and either null or of the type; null is the absent optional.
  Result<std::optional<int>> optional_int(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr) return error(field, "null or an integer");
    if (value->is_null()) return std::optional<int>{};
    int parsed = 0;
    LLMREPRO_TRY_ASSIGN(parsed, small_integer(object, field));
    return std::optional<int>{parsed};
  }

  Result<std::optional<long>> optional_long(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr) return error(field, "null or an integer");
    if (value->is_null()) return std::optional<long>{};
    std::int64_t parsed = 0;
    LLMREPRO_TRY_ASSIGN(parsed, integer(object, field));
    return std::optional<long>{static_cast<long>(parsed)};
  }

  Result<std::optional<double>> optional_number(const Json& object,
                                                const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr) return error(field, "null or a number");
    if (value->is_null()) return std::optional<double>{};
    if (!value->is_number()) return error(field, "null or a number");
    return std::optional<double>{value->get<double>()};
  }

  Result<const Json*> array(const Json& object, const std::string& field) const {
    const Json* value = find(object, field);
    if (value == nullptr || !value->is_array()) return error(field, "an array");
    return value;
  }

private:
  std::string m_where;
};

Json config_to_json(const core::AuditConfig& config) {
  Json probes = Json::array();
  for (const auto probe : config.plan.probes) probes.push_back(core::to_string(probe));
  const auto& gates = config.gates;
  Json gates_json = {
      {"fail_on", core::to_string(gates.fail_on)},
      {"max_unique", gates.max_unique ? Json(*gates.max_unique) : Json(nullptr)},
      {"max_unstable_rate",
       gates.max_unstable_rate ? Json(*gates.max_unstable_rate) : Json(nullptr)},
      {"min_tara", gates.min_tara ? Json(*gates.min_tara) : Json(nullptr)},
      {"min_modal_share", gates.min_modal_share ? Json(*gates.min_modal_share) : Json(nullptr)},
      {"max_logprob_drift",
       gates.max_logprob_drift ? Json(*gates.max_logprob_drift) : Json(nullptr)},
      {"max_failed_rate", gates.max_failed_rate},
  };
  Json engine = nullptr;
  if (config.plan.engine)
    engine = Json{{"max_num_seqs", config.plan.engine->max_num_seqs},
                  {"batch_invariant", config.plan.engine->batch_invariant},
                  {"prefix_cache", config.plan.engine->prefix_cache},
                  {"seed", config.plan.engine->seed}};
  // Names only: a header's value may be a secret and never reaches the database.
  const Json header_names =
      config.plan.header_names ? Json(*config.plan.header_names) : Json(nullptr);
  return Json{
      {"api", config.plan.api},
      {"model", config.plan.model},
      {"runs", config.plan.runs},
      {"levels", config.plan.levels},
      {"probes", probes},
      {"max_tokens", config.plan.max_tokens},
      {"top_logprobs", config.plan.top_logprobs},
      {"seed", config.plan.seed},
      {"stream", config.plan.stream},
      {"logprobs_form", config.plan.logprobs_form},
      {"temperature", core::to_string(config.plan.temperature)},
      {"timeout_s", config.requests.timeout_s},
      {"retries", config.requests.retries},
      {"fragile_gap", config.analysis.fragile_gap},
      {"fragile_window", config.analysis.fragile_window},
      {"fragile_p", config.analysis.fragile_p ? Json(*config.analysis.fragile_p) : Json(nullptr)},
      {"compare_on", core::to_string(config.analysis.compare_on)},
      {"price",
       config.analysis.price ? Json(core::to_string(*config.analysis.price)) : Json(nullptr)},
      {"max_requests",
       config.budget.max_requests ? Json(*config.budget.max_requests) : Json(nullptr)},
      {"max_tokens_total",
       config.budget.max_tokens_total ? Json(*config.budget.max_tokens_total) : Json(nullptr)},
      {"max_cost", config.budget.max_cost ? Json(*config.budget.max_cost) : Json(nullptr)},
      {"stop_after", config.plan.stop_after ? Json(*config.plan.stop_after) : Json(nullptr)},
      {"adaptive", config.adaptive.enabled},
      {"adaptive_initial", config.adaptive.initial},
      {"adaptive_epsilon", config.adaptive.epsilon},
      {"adaptive_assume", core::to_string(config.adaptive.assume)},
      {"rate_limit", config.requests.rate_limit},
      {"serial_runs", config.plan.serial_runs ? Json(*config.plan.serial_runs) : Json(nullptr)},
      {"serial_spacing_s", config.requests.serial_spacing_s},
      {"shard_index", config.plan.shard_index},
      {"shard_count", config.plan.shard_count},
      {"profile", core::to_string(config.plan.profile)},
      {"gates", gates_json},
      {"engine", engine},
      {"header_names", header_names}};
}

Result<core::AuditConfig> config_from_json(const Json& json, const std::string& where) {
  const JsonReader read(where + ": config");
  core::AuditConfig config;
  LLMREPRO_TRY_ASSIGN(config.plan.api, read.string(json, "api"));
  LLMREPRO_TRY_ASSIGN(config.plan.model, read.string(json, "model"));
  LLMREPRO_TRY_ASSIGN(config.plan.runs, read.small_integer(json, "runs"));
  const Json* levels = nullptr;
  LLMREPRO_TRY_ASSIGN(levels, read.array(json, "levels"));
  config.plan.levels.clear();
  for (const auto& level : *levels) {
    if (!level.is_number_integer()) return read.error("levels", "an array of integers");
    config.plan.levels.push_back(level.get<int>());
  }
  const Json* probes = nullptr;
  LLMREPRO_TRY_ASSIGN(probes, read.array(json, "probes"));
  config.plan.probes.clear();
  for (const auto& probe : *probes) {
    if (!probe.is_string()) return read.error("probes", "an array of probe names");
    auto kind = core::parse_probe_kind(probe.get<std::string>());
    if (!kind) return read.error("probes", "an array of probe names");
    config.plan.probes.push_back(*kind);
  }
  LLMREPRO_TRY_ASSIGN(config.plan.max_tokens, read.small_integer(json, "max_tokens"));
  LLMREPRO_TRY_ASSIGN(config.plan.top_logprobs, read.small_integer(json, "top_logprobs"));
  LLMREPRO_TRY_ASSIGN(config.plan.seed, read.unsigned_integer(json, "seed"));
  LLMREPRO_TRY_ASSIGN(config.plan.stream, read.boolean(json, "stream"));
  // Absent from audits stored before --logprobs-form existed: by host, as they were sent.
  if (read.find(json, "logprobs_form") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.plan.logprobs_form, read.string(json, "logprobs_form"));
  // Absent from audits stored before --temperature existed: greedy, as they were sent.
  if (read.find(json, "temperature") != nullptr) {
    std::string temperature;
    LLMREPRO_TRY_ASSIGN(temperature, read.string(json, "temperature"));
    auto mode = core::parse_temperature_mode(temperature);
    if (!mode) return read.error("temperature", "\"0\" or \"default\"");
    config.plan.temperature = *mode;
  }
  LLMREPRO_TRY_ASSIGN(config.requests.timeout_s, read.number(json, "timeout_s"));
  LLMREPRO_TRY_ASSIGN(config.requests.retries, read.small_integer(json, "retries"));
  LLMREPRO_TRY_ASSIGN(config.analysis.fragile_gap, read.number(json, "fragile_gap"));
  LLMREPRO_TRY_ASSIGN(config.analysis.fragile_window, read.small_integer(json, "fragile_window"));
  // Absent from audits stored before --fragile-p existed: the gap rule.
  if (read.find(json, "fragile_p") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.analysis.fragile_p, read.optional_number(json, "fragile_p"));
  // Absent from audits stored before --compare-on existed: both parts.
  if (const Json* compare_on = read.find(json, "compare_on"); compare_on != nullptr) {
    const char* expected = "\"answer\", \"reasoning\" or \"both\"";
    if (!compare_on->is_string()) return read.error("compare_on", expected);
    auto parsed = core::parse_compare_on(compare_on->get<std::string>());
    if (!parsed) return read.error("compare_on", expected);
    config.analysis.compare_on = *parsed;
  }
  // Absent from audits stored before --price existed: no price.
  if (const Json* price = read.find(json, "price"); price != nullptr && !price->is_null()) {
    if (!price->is_string()) return read.error("price", "\"input=X,output=Y\" or null");
    auto parsed = core::parse_price(price->get<std::string>());
    if (!parsed) return read.error("price", "\"input=X,output=Y\" or null");
    config.analysis.price = *parsed;
  }
  // Absent from audits stored before the budgets and --stop-after existed: none.
  if (read.find(json, "max_requests") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.budget.max_requests, read.optional_long(json, "max_requests"));
  if (read.find(json, "max_tokens_total") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.budget.max_tokens_total,
                        read.optional_long(json, "max_tokens_total"));
  if (read.find(json, "max_cost") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.budget.max_cost, read.optional_number(json, "max_cost"));
  if (read.find(json, "stop_after") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.plan.stop_after, read.optional_int(json, "stop_after"));
  // Absent from audits stored before --adaptive existed: a fixed plan.
  if (read.find(json, "adaptive") != nullptr) {
    LLMREPRO_TRY_ASSIGN(config.adaptive.enabled, read.boolean(json, "adaptive"));
    LLMREPRO_TRY_ASSIGN(config.adaptive.initial, read.small_integer(json, "adaptive_initial"));
    LLMREPRO_TRY_ASSIGN(config.adaptive.epsilon, read.number(json, "adaptive_epsilon"));
  }
  // Absent from audits stored before --adaptive-assume existed: nothing assumed.
  if (const Json* assume = read.find(json, "adaptive_assume"); assume != nullptr) {
    const char* expected = "\"none\" or \"greedy-shared-noise\"";
    if (!assume->is_string()) return read.error("adaptive_assume", expected);
    auto parsed = core::parse_adaptive_assumption(assume->get<std::string>());
    if (!parsed) return read.error("adaptive_assume", expected);
    config.adaptive.assume = *parsed;
  }
  LLMREPRO_TRY_ASSIGN(config.requests.rate_limit, read.number(json, "rate_limit"));
  // Absent from audits stored before --profile adi existed: the same runs at every level, and
  // no spacing.
  if (read.find(json, "serial_runs") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.plan.serial_runs, read.optional_int(json, "serial_runs"));
  if (read.find(json, "serial_spacing_s") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.requests.serial_spacing_s, read.number(json, "serial_spacing_s"));
  LLMREPRO_TRY_ASSIGN(config.plan.shard_index, read.small_integer(json, "shard_index"));
  LLMREPRO_TRY_ASSIGN(config.plan.shard_count, read.small_integer(json, "shard_count"));
  // Absent from audits stored before --profile existed: the standard profile.
  if (const Json* profile = read.find(json, "profile"); profile != nullptr) {
    const char* expected = "\"standard\", \"deterministic\" or \"adi\"";
    if (!profile->is_string()) return read.error("profile", expected);
    auto parsed = core::parse_audit_profile(profile->get<std::string>());
    if (!parsed) return read.error("profile", expected);
    config.plan.profile = *parsed;
  }
  const Json* gates = read.find(json, "gates");
  if (gates == nullptr || !gates->is_object()) return read.error("gates", "an object");
  const JsonReader read_gates(where + ": config.gates");
  std::string fail_on;
  LLMREPRO_TRY_ASSIGN(fail_on, read_gates.string(*gates, "fail_on"));
  auto parsed_fail_on = core::parse_fail_on(fail_on);
  if (!parsed_fail_on)
    return read_gates.error("fail_on",
                            "none, or a comma list of unstable, fragile, disagree, shift");
  config.gates.fail_on = *parsed_fail_on;
  LLMREPRO_TRY_ASSIGN(config.gates.max_unique, read_gates.optional_int(*gates, "max_unique"));
  LLMREPRO_TRY_ASSIGN(config.gates.max_unstable_rate,
                      read_gates.optional_number(*gates, "max_unstable_rate"));
  LLMREPRO_TRY_ASSIGN(config.gates.min_tara, read_gates.optional_number(*gates, "min_tara"));
  // Absent from audits stored before it existed: no such gate.
  if (read_gates.find(*gates, "min_modal_share") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.gates.min_modal_share,
                        read_gates.optional_number(*gates, "min_modal_share"));
  // Absent from audits stored before the failure gate existed: its default, 0.
  std::optional<double> max_failed_rate;
  LLMREPRO_TRY_ASSIGN(max_failed_rate, read_gates.optional_number(*gates, "max_failed_rate"));
  config.gates.max_failed_rate = max_failed_rate.value_or(0.0);
  // Absent from audits stored before the logprob drift gate existed: unset.
  if (read_gates.find(*gates, "max_logprob_drift") != nullptr)
    LLMREPRO_TRY_ASSIGN(config.gates.max_logprob_drift,
                        read_gates.optional_number(*gates, "max_logprob_drift"));
  // Absent (or null) from audits stored before the engine's settings and the header names were,
  // and for an audit of HTTP endpoints: --resume then compares nothing of them.
  if (const Json* engine = read.find(json, "engine"); engine != nullptr && !engine->is_null()) {
    if (!engine->is_object()) return read.error("engine", "an object or null");
    const JsonReader read_engine(where + ": config.engine");
    core::EngineSettings settings;
    LLMREPRO_TRY_ASSIGN(settings.max_num_seqs, read_engine.small_integer(*engine, "max_num_seqs"));
    LLMREPRO_TRY_ASSIGN(settings.batch_invariant, read_engine.boolean(*engine, "batch_invariant"));
    LLMREPRO_TRY_ASSIGN(settings.prefix_cache, read_engine.boolean(*engine, "prefix_cache"));
    LLMREPRO_TRY_ASSIGN(settings.seed, read_engine.unsigned_integer(*engine, "seed"));
    config.plan.engine = settings;
  }
  if (const Json* names = read.find(json, "header_names"); names != nullptr && !names->is_null()) {
    if (!names->is_array()) return read.error("header_names", "an array of strings or null");
    std::vector<std::string> list;
    for (const auto& name : *names) {
      if (!name.is_string()) return read.error("header_names", "an array of strings or null");
      list.push_back(name.get<std::string>());
    }
    config.plan.header_names = std::move(list);
  }
  return config;
}

template <typename Kind>
Result<Kind> parse_kind(const std::string& text, Kind last, const JsonReader& read,
                        const char* field) {
  for (int value = 0; value <= static_cast<int>(last); ++value) {
    const auto kind = static_cast<Kind>(value);
    if (text == core::to_string(kind)) return kind;
  }
  return read.error(field, "a known kind");
}

// Tokens from any endpoint went through a JSON parser, so they are valid UTF-8; the replace
// handler only keeps a malformed byte from aborting the audit.
std::string dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Parses a stored document; a malformed one is an input error naming it.
Result<Json> parse(const std::string& text, const std::string& where) {
  try {
    return Json::parse(text);
  } catch (const Json::exception& error) {
    return core::make_error(ErrorCode::input, where + ": malformed JSON (" + error.what() + ")");
  }
}

double logprob_from_json(const Json& json, bool& ok) {
  ok = true;
  if (json.is_number()) return json.get<double>();
  if (json.is_null()) return core::k_unknown_logprob;
  if (json.is_string()) {
    const auto text = json.get<std::string>();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "nan") return core::k_unknown_logprob; // as written before null was
  }
  ok = false;
  return 0.0;
}

} // namespace

std::string encode_config(const core::AuditConfig& config) { return dump(config_to_json(config)); }

Result<core::AuditConfig> decode_config(const std::string& text, const std::string& where) {
  Json json;
  LLMREPRO_TRY_ASSIGN(json, parse(text, where + ": config"));
  return config_from_json(json, where);
}

PromptJsonColumns encode_prompt_columns(const core::Prompt& prompt) {
  Json messages = Json::array();
  for (const auto& message : prompt.messages)
    messages.push_back({{"role", message.role}, {"content", message.content}});
  const auto& expect = prompt.expect;
  const Json expect_json = {{"kind", core::to_string(expect.kind)},
                            {"value", expect.value},
                            {"path", expect.path},
                            {"number", expect.number},
                            {"tolerance", expect.tolerance}};
  const Json extract_json = {{"kind", core::to_string(prompt.extract.kind)},
                             {"pattern", prompt.extract.pattern}};
  return {dump(messages), dump(Json(prompt.tags)), dump(expect_json), dump(extract_json)};
}

Result<void> decode_prompt_columns(const PromptJsonColumns& columns, core::Prompt& prompt,
                                   const std::string& where) {
  const JsonReader read(where);
  Json messages;
  LLMREPRO_TRY_ASSIGN(messages, parse(columns.messages, where + ": messages"));
  if (!messages.is_array()) return read.error("messages", "an array");
  prompt.messages.clear();
  const JsonReader read_message(where + ": messages[]");
  for (const auto& message : messages) {
    core::Message decoded;
    LLMREPRO_TRY_ASSIGN(decoded.role, read_message.string(message, "role"));
    LLMREPRO_TRY_ASSIGN(decoded.content, read_message.string(message, "content"));
    prompt.messages.push_back(std::move(decoded));
  }
  LLMREPRO_TRY_ASSIGN(prompt.tags, decode_strings(columns.tags, where + ": tags"));

  Json expect;
  LLMREPRO_TRY_ASSIGN(expect, parse(columns.expect, where + ": expect"));
  const JsonReader read_expect(where + ": expect");
  std::string kind;
  LLMREPRO_TRY_ASSIGN(kind, read_expect.string(expect, "kind"));
  LLMREPRO_TRY_ASSIGN(prompt.expect.kind,
                      parse_kind(kind, core::Expectation::Kind::number, read_expect, "kind"));
  LLMREPRO_TRY_ASSIGN(prompt.expect.value, read_expect.string(expect, "value"));
  LLMREPRO_TRY_ASSIGN(prompt.expect.path, read_expect.string(expect, "path"));
  LLMREPRO_TRY_ASSIGN(prompt.expect.number, read_expect.number(expect, "number"));
  LLMREPRO_TRY_ASSIGN(prompt.expect.tolerance, read_expect.number(expect, "tolerance"));

  Json extract;
  LLMREPRO_TRY_ASSIGN(extract, parse(columns.extract, where + ": extract"));
  const JsonReader read_extract(where + ": extract");
  LLMREPRO_TRY_ASSIGN(kind, read_extract.string(extract, "kind"));
  LLMREPRO_TRY_ASSIGN(prompt.extract.kind,
                      parse_kind(kind, core::Extraction::Kind::last_line, read_extract, "kind"));
  LLMREPRO_TRY_ASSIGN(prompt.extract.pattern, read_extract.string(extract, "pattern"));
  return {};
}

namespace {

Json filler_levels_json(const std::vector<core::FillerLevel>& levels) {
  Json out = Json::array();
  for (const core::FillerLevel& level : levels)
    out.push_back({{"level", level.level},
                   {"sampled", level.sampled},
                   {"sent", level.sent},
                   {"refused", level.refused},
                   {"shortened", level.shortened},
                   {"unfit", level.unfit},
                   {"refusal", level.refusal}});
  return out;
}

Result<std::vector<core::FillerLevel>> decode_filler_levels(const Json& json,
                                                            const std::string& where) {
  if (!json.is_array())
    return core::make_error(ErrorCode::input, where + ": field 'filler_levels' must be an array");
  std::vector<core::FillerLevel> levels;
  for (const Json& item : json) {
    core::FillerLevel level;
    const std::string at = where + ": filler_levels[" + std::to_string(levels.size()) + "]";
    if (!item.is_object()) return core::make_error(ErrorCode::input, at + " must be an object");
    for (auto [name, field] : {std::pair{"level", &level.level},
                               {"sent", &level.sent},
                               {"refused", &level.refused},
                               {"shortened", &level.shortened}}) {
      const auto found = item.find(name);
      if (found == item.end() || !found->is_number_integer())
        return core::make_error(ErrorCode::input, at + ": field '" + name + "' must be an integer");
      *field = found->get<int>();
    }
    const auto unfit = item.find("unfit");
    const auto refusal = item.find("refusal");
    if (unfit == item.end() || !unfit->is_boolean() || refusal == item.end() ||
        !refusal->is_string())
      return core::make_error(ErrorCode::input,
                              at + ": fields 'unfit' (a boolean) and 'refusal' (a string) are "
                                   "required");
    level.unfit = unfit->get<bool>();
    level.refusal = refusal->get<std::string>();
    // Stored since the mixed-sampling probe; absent in older audits, whose fillers were greedy.
    if (const auto sampled = item.find("sampled"); sampled != item.end()) {
      if (!sampled->is_boolean())
        return core::make_error(ErrorCode::input, at + ": field 'sampled' must be a boolean");
      level.sampled = sampled->get<bool>();
    }
    levels.push_back(std::move(level));
  }
  return levels;
}

} // namespace

std::string encode_probe_activity(const std::vector<core::ProbeActivity>& activity) {
  Json out = Json::array();
  for (const auto& a : activity)
    out.push_back({{"filler_sent", a.filler_sent},
                   {"filler_failed", a.filler_failed},
                   {"sampled_filler_sent", a.sampled_filler_sent},
                   {"sampled_filler_failed", a.sampled_filler_failed},
                   {"primes_sent", a.primes_sent},
                   {"primes_failed", a.primes_failed},
                   {"flushes_sent", a.flushes_sent},
                   {"flushes_failed", a.flushes_failed},
                   {"flush_looked_up", a.flush_looked_up},
                   {"flush_route", a.flush_route},
                   {"cold_per_request", a.cold_per_request},
                   {"filler_levels", filler_levels_json(a.filler_levels)},
                   {"long_shortened", a.long_shortened},
                   {"long_context_words_min", a.long_context_words_min},
                   {"prefix_shortened", a.prefix_shortened},
                   {"prefix_words", a.prefix_words},
                   {"restarts_run", a.restarts_run},
                   {"restarts_failed", a.restarts_failed},
                   {"restart_ready_ms_max", a.restart_ready_ms_max}});
  return dump(out);
}

Result<std::vector<core::ProbeActivity>> decode_probe_activity(const std::string& text,
                                                               const std::string& where) {
  Json json;
  LLMREPRO_TRY_ASSIGN(json, parse(text, where));
  if (!json.is_array()) return core::make_error(ErrorCode::input, where + ": not an array");
  std::vector<core::ProbeActivity> activity;
  for (const auto& item : json) {
    core::ProbeActivity a;
    const auto integer = [&](const char* name, int& field) -> Result<void> {
      const auto found = item.find(name);
      if (found == item.end() || !found->is_number_integer())
        return core::make_error(ErrorCode::input,
                                where + ": field '" + name + "' must be an integer");
      field = found->get<int>();
      return {};
    };
    for (auto [name, field] : {std::pair{"filler_sent", &a.filler_sent},
                               {"filler_failed", &a.filler_failed},
                               {"primes_sent", &a.primes_sent},
                               {"primes_failed", &a.primes_failed},
                               {"flushes_sent", &a.flushes_sent},
                               {"flushes_failed", &a.flushes_failed}})
      LLMREPRO_TRY(integer(name, *field));
    const auto looked_up = item.find("flush_looked_up");
    const auto route = item.find("flush_route");
    if (looked_up == item.end() || !looked_up->is_boolean() || route == item.end() ||
        !route->is_string())
      return core::make_error(ErrorCode::input,
                              where + ": fields 'flush_looked_up' and 'flush_route' are required");
    a.flush_looked_up = looked_up->get<bool>();
    a.flush_route = route->get<std::string>();
    // Stored since the per-request cold mode; absent in older audits, which had none.
    if (const auto cold = item.find("cold_per_request"); cold != item.end()) {
      if (!cold->is_boolean())
        return core::make_error(ErrorCode::input,
                                where + ": field 'cold_per_request' must be a boolean");
      a.cold_per_request = cold->get<bool>();
    }
    // Stored since the fillers and long prompts were sized to the server's context; absent in
    // older audits, which counted none.
    if (const auto levels = item.find("filler_levels"); levels != item.end())
      LLMREPRO_TRY_ASSIGN(a.filler_levels, decode_filler_levels(*levels, where));
    // Stored since the shared prefix was sized; absent in older audits, which never cut it.
    if (const auto cut = item.find("prefix_shortened"); cut != item.end()) {
      if (!cut->is_boolean())
        return core::make_error(ErrorCode::input,
                                where + ": field 'prefix_shortened' must be a boolean");
      a.prefix_shortened = cut->get<bool>();
    }
    // The sampled fillers' counts are stored since the mixed-sampling probe, the long probe's
    // since it was sized, the restarts since the restart probe, the prefix's words since it was
    // sized; absent in older audits, which sent none.
    for (auto [name, field] : {std::pair{"long_shortened", &a.long_shortened},
                               {"long_context_words_min", &a.long_context_words_min},
                               {"sampled_filler_sent", &a.sampled_filler_sent},
                               {"sampled_filler_failed", &a.sampled_filler_failed},
                               {"restarts_run", &a.restarts_run},
                               {"restarts_failed", &a.restarts_failed},
                               {"restart_ready_ms_max", &a.restart_ready_ms_max},
                               {"prefix_words", &a.prefix_words}})
      if (item.contains(name)) LLMREPRO_TRY(integer(name, *field));
    activity.push_back(std::move(a));
  }
  return activity;
}

std::string encode_strings(const std::vector<std::string>& strings) { return dump(Json(strings)); }

Result<std::vector<std::string>> decode_strings(const std::string& text, const std::string& where) {
  Json json;
  LLMREPRO_TRY_ASSIGN(json, parse(text, where));
  if (!json.is_array())
    return core::make_error(ErrorCode::input, where + ": not an array of strings");
  std::vector<std::string> strings;
  for (const auto& item : json) {
    if (!item.is_string())
      return core::make_error(ErrorCode::input, where + ": not an array of strings");
    strings.push_back(item.get<std::string>());
  }
  return strings;
}

std::string encode_candidates(const core::TokenCandidates& top, std::size_t first) {
  Json rest = Json::array();
  for (std::size_t i = first; i < top.size(); ++i)
    rest.push_back(Json::array({top[i].token, logprob_to_json(top[i].logprob)}));
  return dump(rest);
}

Result<void> decode_candidates(const std::string& text, core::TokenCandidates& top,
                               const std::string& where) {
  Json json;
  LLMREPRO_TRY_ASSIGN(json, parse(text, where));
  const auto bad = [&] {
    return core::make_error(ErrorCode::input, where + ": not an array of [token, logprob] pairs");
  };
  if (!json.is_array()) return bad();
  for (const auto& pair : json) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string()) return bad();
    bool ok = false;
    const double logprob = logprob_from_json(pair[1], ok);
    if (!ok) return bad();
    top.push_back({pair[0].get<std::string>(), logprob});
  }
  return {};
}

} // namespace llmrepro::store::detail
