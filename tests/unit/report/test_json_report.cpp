#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/support/audit_report_fixture.hpp"
#include "tests/support/audit_sections_fixture.hpp"
#include "report/detail/iso_time.hpp"
#include "report/json_report.hpp"

using namespace llmrepro;
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

namespace {

Json load_schema() {
  std::ifstream in(std::string(LLMREPRO_SOURCE_DIR) + "/schemas/llmrepro.audit.v1.schema.json");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

bool has_type(const Json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  if (type == "string") return value.is_string();
  if (type == "array") return value.is_array();
  if (type == "object") return value.is_object();
  return false;
}

// The subset of JSON Schema 2020-12 our schema uses; returns the first violation, empty if none.
// (End-to-end tests validate with a full implementation; this keeps the unit tests offline.)
std::string violation(const Json& value, const Json& schema, const Json& root,
                      const std::string& at) {
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    REQUIRE(ref.rfind("#/$defs/", 0) == 0);
    return violation(value, root["$defs"][ref.substr(8)], root, at);
  }
  if (schema.contains("const") && value != schema["const"]) return at + ": not the constant";
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& option : schema["enum"]) found = found || option == value;
    if (!found) return at + ": not in the enum";
  }
  if (schema.contains("type")) {
    bool ok = false;
    if (schema["type"].is_string())
      ok = has_type(value, schema["type"]);
    else
      for (const auto& type : schema["type"]) ok = ok || has_type(value, type);
    if (!ok) return at + ": wrong type";
  }
  if (schema.contains("oneOf")) {
    int matches = 0;
    for (const auto& option : schema["oneOf"])
      matches += violation(value, option, root, at).empty();
    if (matches != 1) return at + ": matches " + std::to_string(matches) + " of oneOf";
  }
  if (schema.contains("pattern") && value.is_string() &&
      !std::regex_search(value.get<std::string>(),
                         std::regex(schema["pattern"].get<std::string>())))
    return at + ": does not match the pattern";
  if (schema.contains("minimum") && value.is_number() && value.get<double>() < schema["minimum"])
    return at + ": below the minimum";
  if (value.is_array() && schema.contains("items"))
    for (std::size_t i = 0; i < value.size(); ++i)
      if (auto v = violation(value[i], schema["items"], root, at + "[" + std::to_string(i) + "]");
          !v.empty())
        return v;
  if (value.is_object()) {
    if (schema.contains("required"))
      for (const auto& key : schema["required"])
        if (!value.contains(key)) return at + ": missing " + key.get<std::string>();
    for (const auto& [key, item] : value.items()) {
      if (schema.contains("propertyNames"))
        if (auto v = violation(key, schema["propertyNames"], root, at + "." + key); !v.empty())
          return v;
      if (schema.contains("properties") && schema["properties"].contains(key)) {
        if (auto v = violation(item, schema["properties"][key], root, at + "." + key); !v.empty())
          return v;
      } else if (schema.contains("additionalProperties")) {
        const Json& extra = schema["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) return at + ": unexpected " + key;
        if (extra.is_object())
          if (auto v = violation(item, extra, root, at + "." + key); !v.empty()) return v;
      }
    }
  }
  return {};
}

std::vector<std::string> keys_of(const OrderedJson& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

} // namespace

TEST_CASE("format_iso_utc_ms") {
  CHECK(report::format_iso_utc_ms(0) == "1970-01-01T00:00:00.000Z");
  CHECK(report::format_iso_utc_ms(1700000000123) == "2023-11-14T22:13:20.123Z");
  CHECK(report::format_iso_utc_ms(951782400999) == "2000-02-29T00:00:00.999Z");
  CHECK(report::format_iso_utc_ms(-1) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("render_json") {
  const auto fixture = test::make_report_fixture();
  const std::string text = report::render_json(fixture->report);
  const OrderedJson json = OrderedJson::parse(text);

  SUBCASE("layout: 2-space indent, documented key order, trailing newline") {
    CHECK(text.rfind("{\n  \"schema\": \"llmrepro.audit.v1\",\n  \"tool\": {\n    \"version\": "
                     "\"0.1.0\",",
                     0) == 0);
    CHECK(text.back() == '\n');
    CHECK(keys_of(json) == std::vector<std::string>{"schema", "tool", "audit", "endpoints",
                                                    "config", "summary", "warnings", "prompts",
                                                    "errors", "probe", "probes", "comparison",
                                                    "semantic", "adaptive"});
    CHECK(keys_of(json["audit"]) == std::vector<std::string>{"id", "started", "finished", "status",
                                                             "planned_requests",
                                                             "recorded_requests"});
    CHECK(keys_of(json["summary"]) == std::vector<std::string>{"prompts",
                                                               "requests",
                                                               "failed_requests",
                                                               "failure_reasons",
                                                               "stable_prompts",
                                                               "unstable_prompts",
                                                               "inconclusive_prompts",
                                                               "unstable_rate",
                                                               "bitwise_stable_prompts",
                                                               "max_logprob_drift",
                                                               "prompts_with_two_completions",
                                                               "fragile_prompts",
                                                               "fragility_unknown_prompts",
                                                               "prompts_without_logprobs",
                                                               "non_greedy_prompts",
                                                               "token_text_mismatch_prompts",
                                                               "min_candidates",
                                                               "numbers",
                                                               "lone_surrogates",
                                                               "reasoning",
                                                               "usage",
                                                               "tarr",
                                                               "tara",
                                                               "predictor",
                                                               "flip_calibration",
                                                               "checks",
                                                               "distribution",
                                                               "by_concurrency",
                                                               "cache_state",
                                                               "determinism",
                                                               "adi",
                                                               "verdict"});
    // The standard profile runs no determinism check, and reports no adi figures.
    CHECK(json["summary"]["determinism"].is_null());
    CHECK(json["summary"]["adi"].is_null());
    CHECK(json["config"]["profile"] == "standard");
    CHECK(json["config"]["price"] == "input=2,output=8");
    CHECK(json["summary"]["usage"] == OrderedJson{{"requests", 17},
                                                  {"requests_with_prompt_usage", 16},
                                                  {"prompt_tokens", 400},
                                                  {"completion_tokens", 170},
                                                  {"reasoning_tokens", 30},
                                                  {"requests_with_cache_state", 0},
                                                  {"warm_requests", 0},
                                                  {"cost", (400 * 2.0 + 170 * 8.0) / 1e6}});
    CHECK(keys_of(json["summary"]["verdict"]) ==
          std::vector<std::string>{"status", "headline", "stability_gated", "errors", "gates"});
    CHECK(keys_of(json["prompts"][0]) == std::vector<std::string>{"id",
                                                                  "status",
                                                                  "tier",
                                                                  "logprob_drift",
                                                                  "runs",
                                                                  "failed",
                                                                  "unique_completions",
                                                                  "first_divergence",
                                                                  "divergence_unit",
                                                                  "divergence_kind",
                                                                  "text_divergence",
                                                                  "fingerprints",
                                                                  "modal_completion_share",
                                                                  "gap_at_divergence",
                                                                  "min_gap",
                                                                  "min_gap_position",
                                                                  "fragile",
                                                                  "fragility_reason",
                                                                  "fragile_by_gap",
                                                                  "p_flip",
                                                                  "p_flip_reason",
                                                                  "unstable",
                                                                  "has_logprobs",
                                                                  "token_text_mismatch",
                                                                  "non_greedy_tokens",
                                                                  "min_candidates",
                                                                  "numbers",
                                                                  "lone_surrogates",
                                                                  "candidates_at_divergence",
                                                                  "tool_call_divergence",
                                                                  "answers",
                                                                  "answer_failures",
                                                                  "answers_agree",
                                                                  "modal",
                                                                  "shifted",
                                                                  "passes",
                                                                  "checked_runs",
                                                                  "by_concurrency",
                                                                  "completions"});
    CHECK(keys_of(json["prompts"][0]["completions"][0]) ==
          std::vector<std::string>{"text", "count", "reference", "divergence", "divergence_kind",
                                   "count_by_concurrency", "finish_reasons", "models",
                                   "fingerprints", "tokens"});
  }
  SUBCASE("the prompts are spliced in whole: the document equals one dumped at once") {
    // write_json streams the prompts into a skeleton; nothing else may differ from a plain dump.
    CHECK(text == json.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n");
  }
  SUBCASE("tool, audit and endpoints") {
    CHECK(json["tool"] == OrderedJson{{"version", "0.1.0"},
                                      {"build", "g++ 12, RelWithDebInfo"},
                                      {"cuda", "not compiled"}});
    CHECK(json["audit"]["id"] == "audit-1700000000123");
    CHECK(json["audit"]["started"] == "2023-11-14T22:13:20.123Z");
    CHECK(json["audit"]["finished"] == "2023-11-14T22:14:20.456Z");
    CHECK(json["audit"]["status"] == "complete");
    CHECK(json["audit"]["planned_requests"] == 18);
    CHECK(json["audit"]["recorded_requests"] == 2);
    REQUIRE(json["endpoints"].size() == 1);
    CHECK(json["endpoints"][0] ==
          OrderedJson{{"url", "http://127.0.0.1:8000"},
                      {"dialect", "openai-chat"},
                      {"model", "tiny-model"},
                      {"embedded", false},
                      {"fingerprints", {"fp1", "fp2"}},
                      {"models_seen", {{"evil\x1b[2J", 1}, {"tiny-model", 16}}},
                      {"fingerprints_seen", {{"fp1", 9}, {"fp2", 8}}},
                      {"server", nullptr},
                      {"capabilities", nullptr}});
    CHECK(
        text.find("\"models_seen\": {\n        \"evil\\u001b[2J\": 1,\n        \"tiny-model\": 16\n"
                  "      },") != std::string::npos);
  }
  SUBCASE("a partial audit has no finish time") {
    fixture->data.info.status = "partial";
    const auto partial = OrderedJson::parse(report::render_json(fixture->report));
    CHECK(partial["audit"]["status"] == "partial");
    CHECK(partial["audit"]["finished"].is_null());
  }
  SUBCASE("config, with absent gates as null") {
    const auto& config = json["config"];
    CHECK(config["model"] == "tiny");
    CHECK(config["concurrency"] == OrderedJson{1, 8});
    CHECK(config["probes"] == OrderedJson{"sweep"});
    CHECK(config["seed"] == 42);
    CHECK(config["shard"] == "1/2"); // 1-based, as --shard takes it
    CHECK(config["timeout_s"] == 120.0);
    CHECK(config["gates"] == OrderedJson{{"fail_on", "unstable"},
                                         {"max_unique", 2},
                                         {"max_unstable_rate", nullptr},
                                         {"min_tara", nullptr},
                                         {"min_modal_share", nullptr},
                                         {"max_logprob_drift", nullptr},
                                         {"max_failed_rate", 0.1}});
    fixture->data.config.plan.shard_index = 1;
    fixture->data.config.gates.fail_on.fragile = true;
    fixture->data.config.gates.fail_on.disagree = true;
    const auto again = OrderedJson::parse(report::render_json(fixture->report));
    CHECK(again["config"]["shard"] == "2/2");
    CHECK(again["config"]["gates"]["fail_on"] == "unstable,fragile,disagree");
    fixture->data.config.gates.max_logprob_drift = 0.0;
    CHECK(OrderedJson::parse(
              report::render_json(fixture->report))["config"]["gates"]["max_logprob_drift"] == 0.0);
  }
  SUBCASE("summary: exact doubles, nulls for absent and non-finite values") {
    const auto& summary = json["summary"];
    CHECK(summary["tarr"].get<double>() == 1.0 / 3.0);
    CHECK(summary["tara"].is_null());
    CHECK(summary["checks"].is_null());
    CHECK(summary["predictor"] == OrderedJson{{"true_positive", 1},
                                              {"false_positive", 1},
                                              {"false_negative", 1},
                                              {"true_negative", 0},
                                              {"precision", 0.5},
                                              {"recall", nullptr}});
    REQUIRE(summary["by_concurrency"].size() == 2);
    CHECK(summary["by_concurrency"][0]["tokens_per_second"] == 812.5);
    CHECK(summary["by_concurrency"][1]["tokens_per_second"].is_null());
    CHECK(summary["by_concurrency"][1] ==
          OrderedJson{
              {"concurrency", 8},
              {"runs", 8},
              {"unique_completions", 5},
              {"unstable_prompts", 2},
              {"inconclusive_prompts", 1},
              {"differs_from_serial_prompts", 1},
              {"failed", 1},
              {"tokens_per_second", nullptr},
              {"mean_latency_ms", 95.0},
              {"median_latency_ms", 90.0},
              {"p95_latency_ms", 140.0},
              {"usage",
               {{"requests", 8},
                {"requests_with_prompt_usage", 7},
                {"prompt_tokens", 184},
                {"completion_tokens", 80},
                {"reasoning_tokens", 12},
                {"requests_with_cache_state", 0},
                {"warm_requests", 0},
                {"cost", (184 * 2.0 + 80 * 8.0) / 1e6}}},
              {"logprob_drift",
               {{"max_abs", 1.0 / 3.0}, {"max_abs_gap", 0.0625}, {"positions_compared", 100}}},
              {"noise", OrderedJson::parse(R"({
      "positions": 100, "nonzero": 10, "left_out": 0, "median": 0.0, "p90": 0.0625, "p99": 0.25, "max": 0.25,
      "decades": [{"upper": 0, "count": 90}, {"upper": 1e-06, "count": 0},
                  {"upper": 1e-05, "count": 0}, {"upper": 0.0001, "count": 0},
                  {"upper": 0.001, "count": 0}, {"upper": 0.01, "count": 2},
                  {"upper": 0.1, "count": 4}, {"upper": 1.0, "count": 4},
                  {"upper": null, "count": 0}]})")}});
    const OrderedJson& calibration = summary["flip_calibration"];
    CHECK(keys_of(calibration) == std::vector<std::string>{"prompts", "unstable", "p_flip",
                                                           "gap_rule", "reliability",
                                                           "recommended_tau"});
    CHECK(calibration["p_flip"] == OrderedJson{{"brier", 0.0625}, {"auc", nullptr}});
    CHECK(calibration["gap_rule"] == OrderedJson{{"brier", 0.0}, {"auc", nullptr}});
    CHECK(calibration["recommended_tau"] == 0.25);
    REQUIRE(calibration["reliability"].size() == 10);
    CHECK(calibration["reliability"][7] == OrderedJson{{"lower", 0.7},
                                                       {"upper", 0.8},
                                                       {"prompts", 1},
                                                       {"unstable", 1},
                                                       {"mean_predicted", 0.75},
                                                       {"observed_rate", 1.0}});
    CHECK(calibration["reliability"][0]["mean_predicted"].is_null());
    CHECK(summary["failure_reasons"] ==
          OrderedJson{{{"reason", "HTTP 503: queue full"}, {"count", 1}}});
    CHECK(summary["stable_prompts"] == 0);
    CHECK(summary["unstable_prompts"] == 2);
    CHECK(summary["inconclusive_prompts"] == 1);
    CHECK(summary["bitwise_stable_prompts"] == 0);
    CHECK(summary["max_logprob_drift"].get<double>() == 1.0 / 3.0);
    CHECK(summary["prompts_with_two_completions"] == 3);
    CHECK(summary["fragile_prompts"] == 2);
    CHECK(summary["fragility_unknown_prompts"] == 1);
    CHECK(summary["non_greedy_prompts"] == 1);
    CHECK(summary["token_text_mismatch_prompts"] == 0);
    CHECK(summary["min_candidates"] == 1);
    CHECK(summary["numbers"] ==
          OrderedJson{
              {"nan", 2}, {"infinity", 0}, {"negative_infinity", 0}, {"overflow", 0}, {"null", 1}});
  }
  SUBCASE("tiers and drift: bitwise and token prompts, no compared position as null") {
    auto& analysis = fixture->report.analysis;
    analysis.prompts[1].status = core::PromptStatus::stable;
    analysis.prompts[1].tier = core::StabilityTier::token;
    analysis.summary.stable_prompts = 1;
    analysis.summary.bitwise_stable_prompts = 0;
    auto again = OrderedJson::parse(report::render_json(fixture->report));
    CHECK(again["prompts"][1]["tier"] == "token");
    analysis.prompts[1].tier = core::StabilityTier::bitwise;
    analysis.prompts[1].logprob_drift = {0.0, 0.0, 12};
    analysis.summary.bitwise_stable_prompts = 1;
    analysis.summary.max_logprob_drift.reset();
    again = OrderedJson::parse(report::render_json(fixture->report));
    CHECK(again["prompts"][1]["tier"] == "bitwise");
    CHECK(again["summary"]["bitwise_stable_prompts"] == 1);
    CHECK(again["summary"]["max_logprob_drift"].is_null());
    const Json schema = load_schema();
    CHECK(violation(Json::parse(report::render_json(fixture->report)), schema, schema, "$") == "");
  }
  SUBCASE("the verdict: status, headline, errors and every gate with its scope") {
    const auto& verdict = json["summary"]["verdict"];
    CHECK(verdict["status"] == "fail");
    CHECK(verdict["headline"] == test::k_fixture_headline);
    CHECK(verdict["stability_gated"] == true);
    CHECK(verdict["errors"] == OrderedJson::array());
    REQUIRE(verdict["gates"].size() == 3);
    CHECK(verdict["gates"][0]["scope"] ==
          OrderedJson{{"endpoint", nullptr}, {"probe", nullptr}, {"level", nullptr}});
    CHECK(verdict["gates"][0]["figure"].get<double>() == 1.0 / 18.0);
    CHECK(verdict["gates"][0]["passed"] == true);
    CHECK(verdict["gates"][2] ==
          OrderedJson{{"name", "max_unique"},
                      {"flag", "--max-unique"},
                      {"scope", {{"endpoint", 0}, {"probe", "sweep"}, {"level", nullptr}}},
                      {"figure", 3.0},
                      {"limit", 2.0},
                      {"passed", false},
                      {"message", "most distinct completions: 3 (prompt queens), limit 2 "
                                  "(--max-unique)"}});
    fixture->report.verdict.status = core::VerdictStatus::error;
    fixture->report.verdict.errors = {"incomplete: 2 of 18 planned requests recorded"};
    fixture->report.verdict.headline =
        "ERROR: the audit could not be judged: incomplete: 2 of 18 planned requests recorded";
    fixture->report.verdict.gates[2].figure = std::nullopt;
    const auto error = OrderedJson::parse(report::render_json(fixture->report));
    CHECK(error["summary"]["verdict"]["status"] == "error");
    CHECK(error["summary"]["verdict"]["errors"] ==
          OrderedJson{"incomplete: 2 of 18 planned requests recorded"});
    CHECK(error["summary"]["verdict"]["headline"] == fixture->report.verdict.headline);
    CHECK(error["summary"]["verdict"]["gates"][2]["figure"].is_null());
  }
  SUBCASE("warnings: every line, in order") {
    REQUIRE(json["warnings"].size() == 2);
    CHECK(json["warnings"][0] == fixture->report.warnings[0]);
    CHECK(json["warnings"][1] == fixture->report.warnings[1]);
  }
  SUBCASE("prompts with divergence, candidates and distinct completions") {
    REQUIRE(json["prompts"].size() == 3);
    const auto& queens = json["prompts"][0];
    CHECK(queens["first_divergence"] == 102);
    CHECK(queens["gap_at_divergence"].get<double>() == 0.0123456789012345678);
    CHECK(queens["candidates_at_divergence"][0]["logprob"].get<double>() == -0.6931471805599453);
    CHECK(queens["candidates_at_divergence"][1]["token"] == " Manhattan");
    CHECK(queens["passes"].is_null());
    CHECK(queens["status"] == "unstable");
    CHECK(queens["divergence_unit"] == "token");
    CHECK(queens["divergence_kind"] == "token");
    CHECK(queens["fragile"] == true);
    CHECK(queens["fragility_reason"].is_null());
    CHECK(queens["non_greedy_tokens"] == 2);
    CHECK(queens["token_text_mismatch"] == 0);
    CHECK(queens["min_candidates"] == 1);
    CHECK(queens["numbers"]["nan"] == 2);
    CHECK(queens["numbers"]["null"] == 1);
    CHECK(queens["by_concurrency"][0] ==
          OrderedJson{{"concurrency", 1},
                      {"status", "stable"},
                      {"runs", 3},
                      {"failed", 0},
                      {"unique_completions", 1},
                      {"first_divergence", nullptr},
                      {"text_divergence", nullptr},
                      {"differs_from_serial", false},
                      {"logprob_drift",
                       {{"max_abs", 0.0}, {"max_abs_gap", 0.0}, {"positions_compared", 40}}},
                      {"p_flip", 0.0},
                      {"distribution",
                       {{"modal",
                         {{"answer", nullptr},
                          {"count", 0},
                          {"runs", 0},
                          {"share", 0.0},
                          {"low", 0.0},
                          {"high", 1.0}}},
                        {"distinct_answers", 0},
                        {"shift", nullptr}}}});
    CHECK(queens["by_concurrency"][1]["p_flip"] == 0.5);
    CHECK(queens["p_flip"] == 0.75);
    CHECK(queens["p_flip_reason"].is_null());
    CHECK(queens["fragile_by_gap"] == true);
    CHECK(queens["by_concurrency"][1]["first_divergence"] == 102);
    CHECK(queens["by_concurrency"][1]["logprob_drift"] == OrderedJson{{"max_abs", 1.0 / 3.0},
                                                                      {"max_abs_gap", 0.0625},
                                                                      {"positions_compared", 100}});
    CHECK(queens["tier"] == "unstable");
    CHECK(queens["logprob_drift"] == OrderedJson{{"max_abs", 1.0 / 3.0},
                                                 {"max_abs_gap", 0.0625},
                                                 {"positions_compared", 101}});
    CHECK(queens["by_concurrency"][1]["status"] == "unstable");
    CHECK(queens["by_concurrency"][1]["differs_from_serial"] == true);
    REQUIRE(queens["completions"].size() == 2);
    CHECK(queens["completions"][0]["reference"] == true);
    CHECK(queens["completions"][0]["divergence"].is_null());
    CHECK(queens["completions"][0]["divergence_kind"].is_null());
    CHECK(queens["completions"][0]["finish_reasons"] == OrderedJson{{"stop", 4}});
    CHECK(queens["completions"][0]["models"] == OrderedJson{{"tiny-model", 4}});
    CHECK(queens["completions"][0]["fingerprints"] == OrderedJson{{"fp1", 3}, {"fp2", 1}});
    CHECK(queens["completions"][1]["divergence_kind"] == "token");
    CHECK(queens["completions"][1]["finish_reasons"] == OrderedJson{{"length", 1}, {"stop", 1}});
    CHECK(queens["completions"][1]["models"] == OrderedJson{{"evil\x1b[2J", 1}, {"tiny-model", 1}});
    CHECK(queens["completions"][0]["count_by_concurrency"] == OrderedJson{{"1", 3}, {"8", 1}});
    CHECK(queens["completions"][0]["tokens"][0] ==
          OrderedJson{{"token", "Born"},
                      {"logprob", -0.01},
                      {"top",
                       {{{"token", "Born"}, {"logprob", -0.01}},
                        {{"token", "Raised"}, {"logprob", -4.5}}}}});
    CHECK(queens["completions"][1]["divergence"] == 102);
    const auto& stable = json["prompts"][1];
    CHECK(stable["first_divergence"].is_null());
    CHECK(stable["gap_at_divergence"].is_null());
    CHECK(stable["min_gap_position"] == 7);
    CHECK(stable["passes"] == 5);
    CHECK(stable["answers"] == OrderedJson{{{"answer", "42"}, {"count", 5}}});
    CHECK(stable["status"] == "inconclusive"); // a request failed
    CHECK(stable["tier"] == "inconclusive");
    CHECK(stable["logprob_drift"] ==
          OrderedJson{{"max_abs", 0.5}, {"max_abs_gap", 0.25}, {"positions_compared", 12}});
    CHECK(stable["divergence_kind"].is_null());
    CHECK(stable["by_concurrency"][1]["status"] == "inconclusive");
    CHECK(stable["numbers"] ==
          OrderedJson{
              {"nan", 0}, {"infinity", 0}, {"negative_infinity", 0}, {"overflow", 0}, {"null", 0}});
    const auto& hostile = json["prompts"][2];
    CHECK(hostile["divergence_unit"] == "char");
    CHECK(hostile["tier"] == "unstable");
    CHECK(hostile["logprob_drift"] ==
          OrderedJson{{"max_abs", 0.0}, {"max_abs_gap", 0.0}, {"positions_compared", 0}});
    CHECK(hostile["divergence_kind"] == "length");
    CHECK(hostile["fragile"].is_null());
    CHECK(hostile["fragility_reason"] == "text mode: a completion came back without tokens");
    CHECK(hostile["token_text_mismatch"] == 1);
    CHECK(hostile["min_candidates"].is_null());
    CHECK(hostile["completions"][0]["finish_reasons"] == OrderedJson{{"", 6}});
    CHECK(hostile["completions"][0]["fingerprints"] == OrderedJson::object());
  }
  SUBCASE("model text: control characters JSON-escaped, invalid UTF-8 replaced") {
    CHECK(text.find("\x1b") == std::string::npos);
    CHECK(text.find("\"text\": \"\\u001b[31mred\\r\\n\xef\xbf\xbd\"") != std::string::npos);
    CHECK(json["prompts"][2]["id"] == "hostile\x1b[2J\x1b]0;pwned\x07");
  }
  SUBCASE("errors: the failed records of the analysed endpoint") {
    REQUIRE(json["errors"].size() == 1);
    CHECK(json["errors"][0] == OrderedJson{{"prompt", "stable"},
                                           {"concurrency", 8},
                                           {"probe", "sweep"},
                                           {"repeat", 2},
                                           {"http_status", 503},
                                           {"attempts", 4},
                                           {"error", "HTTP 503: queue full"}});
  }
}

TEST_CASE("llmrepro.audit.v1.schema.json") {
  const Json schema = load_schema();
  CHECK(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  CHECK(schema["additionalProperties"] == false);

  const auto fixture = test::make_report_fixture();
  Json rendered = Json::parse(report::render_json(fixture->report));
  SUBCASE("the fixture's report validates") {
    CHECK(violation(rendered, schema, schema, "$") == "");
  }
  SUBCASE("a partial report with checks validates") {
    fixture->data.info.status = "partial";
    core::CheckerSummary checks;
    checks.prompts_checked = 1;
    checks.per_run = {{1, 0, 1, 1, 1.0}};
    fixture->report.analysis.summary.checks = checks;
    fixture->report.tara = 0.5;
    const Json partial = Json::parse(report::render_json(fixture->report));
    CHECK(violation(partial, schema, schema, "$") == "");
  }
  SUBCASE("a report with probe kinds, a comparison and semantic agreement validates") {
    test::add_audit_sections(*fixture);
    const Json full = Json::parse(report::render_json(fixture->report));
    CHECK(violation(full, schema, schema, "$") == "");
    Json broken = full;
    broken["semantic"]["prompts"][0].erase("min");
    CHECK(violation(broken, schema, schema, "$") == "$.semantic: matches 0 of oneOf");
  }
  SUBCASE("a comparison with a shift between endpoints validates, with every figure") {
    test::add_audit_sections(*fixture);
    core::EndpointComparison& comparison = *fixture->report.comparison;
    core::EndpointDivergence& other = comparison.prompts[0].endpoints[0];
    other.shift = core::ShiftTest{"Bye", 0, 16, 16, 16, 0.125};
    other.shift_p_adjusted = 0.25;
    other.answer_distance = 1.0;
    other.shifted = true;
    comparison.prompts[0].shifted = true;
    comparison.shifted_prompts = 1;
    comparison.shift_tests = 2;
    const Json shifted = Json::parse(report::render_json(fixture->report));
    CHECK(violation(shifted, schema, schema, "$") == "");
    CHECK(shifted["comparison"]["shifted_prompts"] == 1);
    CHECK(shifted["comparison"]["shift_tests"] == 2);
    CHECK(shifted["comparison"]["prompts"][0]["shifted"] == true);
    CHECK(shifted["comparison"]["prompts"][0]["endpoints"][0]["shift"] ==
          Json::parse(R"({"answer": "Bye", "base_count": 0, "base_answers": 16, "count": 16,
                          "answers": 16, "p": 0.125, "p_adjusted": 0.25, "distance": 1.0,
                          "shifted": true})"));
    CHECK(shifted["comparison"]["prompts"][1]["endpoints"][0]["shift"].is_null());
    Json broken = shifted;
    broken["comparison"]["prompts"][0]["endpoints"][0]["shift"].erase("base_count");
    CHECK(violation(broken, schema, schema, "$") == "$.comparison: matches 0 of oneOf");
  }
  SUBCASE("an error verdict with unknown fragility and an empty failure list validates") {
    fixture->report.verdict.status = core::VerdictStatus::error;
    fixture->report.verdict.errors = {"interrupted"};
    fixture->report.verdict.gates.clear();
    fixture->report.warnings.clear();
    fixture->report.analysis.summary.failure_reasons.clear();
    fixture->report.analysis.summary.min_candidates = std::nullopt;
    fixture->report.analysis.prompts[0].fragile = std::nullopt;
    const Json error = Json::parse(report::render_json(fixture->report));
    CHECK(violation(error, schema, schema, "$") == "");
  }
  SUBCASE("the new fields are checked too") {
    Json wrong = rendered;
    wrong["summary"]["verdict"]["status"] = "nogate";
    CHECK(violation(wrong, schema, schema, "$") == "$.summary.verdict.status: not in the enum");
    wrong = rendered;
    wrong["prompts"][0]["status"] = "flaky";
    CHECK(violation(wrong, schema, schema, "$") == "$.prompts[0].status: not in the enum");
    wrong = rendered;
    wrong["prompts"][0]["tier"] = "bitwiser";
    CHECK(violation(wrong, schema, schema, "$") == "$.prompts[0].tier: not in the enum");
    wrong = rendered;
    wrong["prompts"][0]["by_concurrency"][1]["logprob_drift"]["max_abs"] = -0.5;
    CHECK(violation(wrong, schema, schema, "$") ==
          "$.prompts[0].by_concurrency[1].logprob_drift.max_abs: below the minimum");
    wrong = rendered;
    wrong["prompts"][0]["completions"][0]["models"]["m"] = "many";
    CHECK(violation(wrong, schema, schema, "$") ==
          "$.prompts[0].completions[0].models.m: wrong type");
    wrong = rendered;
    wrong["summary"]["verdict"]["gates"][0]["scope"].erase("level");
    CHECK(violation(wrong, schema, schema, "$") ==
          "$.summary.verdict.gates[0].scope: missing level");
    wrong = rendered;
    wrong["config"]["gates"]["fail_on"] = "fragile,unstable";
    CHECK(violation(wrong, schema, schema, "$") ==
          "$.config.gates.fail_on: does not match the pattern");
    wrong = rendered;
    wrong["config"]["shard"] = "0/2";
    CHECK(violation(wrong, schema, schema, "$") == "$.config.shard: does not match the pattern");
    wrong = rendered;
    wrong["summary"]["by_concurrency"][0].erase("differs_from_serial_prompts");
    CHECK(violation(wrong, schema, schema, "$") ==
          "$.summary.by_concurrency[0]: missing differs_from_serial_prompts");
  }
  SUBCASE("a report with a server description validates; an unknown kind does not") {
    fixture->data.endpoints[0].server = {
        "TGI", "3.3.6", {{"model id", "m"}, {"max total tokens", "4096"}}, "TGI 3.3.6, m"};
    Json described = Json::parse(report::render_json(fixture->report));
    CHECK(violation(described, schema, schema, "$") == "");
    described["endpoints"][0]["server"]["kind"] = "nginx";
    CHECK(violation(described, schema, schema, "$") == "$.endpoints[0].server: matches 0 of oneOf");
  }
  SUBCASE("an unknown field is rejected") {
    rendered["summary"]["predictor"]["f1"] = 0.5;
    CHECK(violation(rendered, schema, schema, "$") == "$.summary.predictor: unexpected f1");
  }
  SUBCASE("a missing field is rejected") {
    rendered["prompts"][0].erase("min_gap");
    CHECK(violation(rendered, schema, schema, "$") == "$.prompts[0]: missing min_gap");
  }
  SUBCASE("a wrongly typed field is rejected") {
    rendered["audit"]["status"] = "done";
    CHECK(violation(rendered, schema, schema, "$") == "$.audit.status: not in the enum");
  }
}

TEST_CASE("render_json semantic agreement") {
  const auto fixture = test::make_report_fixture();
  CHECK(OrderedJson::parse(report::render_json(fixture->report))["semantic"].is_null());
  test::add_audit_sections(*fixture);
  const OrderedJson json = OrderedJson::parse(report::render_json(fixture->report));
  CHECK(json["semantic"] ==
        OrderedJson::parse(R"({"model": "embed<x>", "threshold": 0.9, "agreeing_share": 0.5,
          "prompts": [
            {"id": "queens", "distinct": 3, "pairs": 3, "mean": 0.8125, "std": 0.0625,
             "min": 0.75, "agrees": false},
            {"id": "stable", "distinct": 1, "pairs": 0, "mean": 1.0, "std": 0.0, "min": 1.0,
             "agrees": true}]})"));
  CHECK(json["probes"][2]["activity"]["flush_route"] == "/reset_prefix_cache");
  CHECK(json["probes"][1]["prompts"][0]["status"] == "unstable");
  CHECK(json["probes"][1]["prompts"][1]["status"] == "stable");
  CHECK(keys_of(json["probes"][1]["summary"]) ==
        std::vector<std::string>{"prompts", "requests", "failed_requests", "stable_prompts",
                                 "unstable_prompts", "inconclusive_prompts", "fragile_prompts",
                                 "fragility_unknown_prompts", "bitwise_stable_prompts",
                                 "max_logprob_drift", "tarr", "tara", "reasoning", "usage",
                                 "flip_calibration", "by_concurrency"});
  // Each probe kind's tiers and drift, as the HTML panel and the terminal line show them.
  CHECK(json["probes"][0]["summary"]["bitwise_stable_prompts"] == 2);
  CHECK(json["probes"][0]["summary"]["max_logprob_drift"] == 0.0);
  CHECK(json["probes"][1]["summary"]["bitwise_stable_prompts"] == 1);
  CHECK(json["probes"][1]["summary"]["max_logprob_drift"] == 0.0625);
  CHECK(json["comparison"]["endpoints"][1]["summary"]["by_concurrency"][1]
            ["differs_from_serial_prompts"] == 1);
  CHECK(json["probes"][2]["activity"]["flushes_sent"] == 5);
}
