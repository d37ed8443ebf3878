#include "core/replay_import.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <utility>

#include "core/json_value.hpp"
#include "core/tool_calls.hpp"

namespace llmrepro::core {

const char* to_string(ReplayFormat format) {
  switch (format) {
  case ReplayFormat::jsonl: return "jsonl";
  case ReplayFormat::chain_determinism: return "chain-determinism";
  }
  return "jsonl";
}

Result<ReplayFormat> parse_replay_format(const std::string& text) {
  if (text == "jsonl") return ReplayFormat::jsonl;
  if (text == "chain-determinism") return ReplayFormat::chain_determinism;
  return make_error(ErrorCode::usage,
                    "unknown --format '" + text + "' (expected jsonl or chain-determinism)");
}

namespace {

using Type = JsonValue::Type;

Error field_error(const std::string& field, const std::string& expected) {
  return make_error(ErrorCode::input, "`" + field + "` must be " + expected);
}

// The member `name` of `object`, which must be present (of any type).
Result<const JsonValue*> required(const JsonValue& object, const std::string& name) {
  const JsonValue* value = object.find(name);
  if (value == nullptr) return make_error(ErrorCode::input, "missing `" + name + "`");
  return value;
}

Result<std::string> string_field(const JsonValue& object, const std::string& name) {
  const JsonValue* value = nullptr;
  LLMREPRO_TRY_ASSIGN(value, required(object, name));
  if (value->type != Type::string || value->string.empty())
    return field_error(name, "a non-empty string");
  return value->string;
}

// A whole number in [0, max] (a count, an index), written without a fraction.
Result<int> index_value(const JsonValue& value, const std::string& name, int min) {
  if (value.type != Type::number || !value.integer || value.number < min || value.number > 1e9)
    return field_error(name, "an integer of at least " + std::to_string(min));
  return static_cast<int>(value.number);
}

Result<int> index_field(const JsonValue& object, const std::string& name, int min) {
  const JsonValue* value = nullptr;
  LLMREPRO_TRY_ASSIGN(value, required(object, name));
  return index_value(*value, name, min);
}

// An optional non-negative duration in milliseconds from `name` (in `unit_ms` per unit).
Result<std::int64_t> duration_field(const JsonValue& object, const std::string& name,
                                    double unit_ms) {
  const JsonValue* value = object.find(name);
  if (value == nullptr || value->type == Type::null) return std::int64_t{0};
  if (value->type != Type::number || !(value->number >= 0.0) || value->number > 1e9)
    return field_error(name, "a non-negative number");
  return static_cast<std::int64_t>(std::llround(value->number * unit_ms));
}

// The error of a row: absent or null for a success, else a non-empty string.
Result<std::optional<std::string>> error_field(const JsonValue& object, const std::string& name) {
  const JsonValue* value = object.find(name);
  if (value == nullptr || value->type == Type::null) return std::optional<std::string>{};
  if (value->type != Type::string || value->string.empty())
    return field_error(name, "null or a non-empty string");
  return std::optional<std::string>(value->string);
}

// One call: a string `name` and the arguments under `arguments_key` (absent: null).
Result<ToolCall> tool_call(const JsonValue& value, const std::string& where,
                           const std::string& arguments_key) {
  if (value.type != Type::object) return field_error(where, "an object");
  const JsonValue* name = value.find("name");
  if (name == nullptr || name->type != Type::string || name->string.empty())
    return field_error(where + ".name", "a non-empty string");
  ToolCall call;
  call.name = name->string;
  if (const JsonValue* arguments = value.find(arguments_key); arguments != nullptr) {
    auto canonical = canonical_json(*arguments);
    if (!canonical)
      return make_error(ErrorCode::input,
                        "`" + where + "." + arguments_key + "`: " + canonical.error().message);
    call.arguments = std::move(*canonical);
  }
  return call;
}

Result<std::vector<ToolCall>> tool_calls_field(const JsonValue& object, const std::string& name,
                                               const std::string& arguments_key, bool needed) {
  const JsonValue* value = object.find(name);
  if (value == nullptr || value->type == Type::null) {
    if (needed) return make_error(ErrorCode::input, "missing `" + name + "`");
    return std::vector<ToolCall>{};
  }
  if (value->type != Type::array) return field_error(name, "an array");
  std::vector<ToolCall> calls;
  for (std::size_t i = 0; i < value->array.size(); ++i) {
    ToolCall call;
    LLMREPRO_TRY_ASSIGN(
        call, tool_call(value->array[i], name + "[" + std::to_string(i) + "]", arguments_key));
    calls.push_back(std::move(call));
  }
  return calls;
}

// A logprob: a number, or null for one the recording did not know.
Result<double> logprob_value(const JsonValue* value, const std::string& where) {
  if (value == nullptr || value->type == Type::null) return k_unknown_logprob;
  if (value->type != Type::number) return field_error(where, "a number or null");
  return value->number;
}

Result<std::vector<TokenLogprob>> tokens_field(const JsonValue& object) {
  const JsonValue* value = object.find("tokens");
  if (value == nullptr || value->type == Type::null) return std::vector<TokenLogprob>{};
  if (value->type != Type::array) return field_error("tokens", "an array");
  std::vector<TokenLogprob> tokens;
  for (std::size_t i = 0; i < value->array.size(); ++i) {
    const std::string where = "tokens[" + std::to_string(i) + "]";
    const JsonValue& entry = value->array[i];
    if (entry.type != Type::object) return field_error(where, "an object");
    const JsonValue* token = entry.find("token");
    if (token == nullptr || token->type != Type::string)
      return field_error(where + ".token", "a string");
    TokenLogprob out;
    out.token = token->string;
    LLMREPRO_TRY_ASSIGN(out.logprob, logprob_value(entry.find("logprob"), where + ".logprob"));
    if (const JsonValue* top = entry.find("top"); top != nullptr && top->type != Type::null) {
      if (top->type != Type::array) return field_error(where + ".top", "an array");
      for (std::size_t c = 0; c < top->array.size(); ++c) {
        const std::string at = where + ".top[" + std::to_string(c) + "]";
        const JsonValue& candidate = top->array[c];
        const JsonValue* text = candidate.find("token");
        if (candidate.type != Type::object || text == nullptr || text->type != Type::string)
          return field_error(at + ".token", "a string");
        TokenCandidate next{text->string, 0.0};
        LLMREPRO_TRY_ASSIGN(next.logprob,
                            logprob_value(candidate.find("logprob"), at + ".logprob"));
        out.top.push_back(std::move(next));
      }
    }
    tokens.push_back(std::move(out));
  }
  return tokens;
}

// The outcome of a row: a failure carrying `error`, else a success holding `completion`.
RequestOutcome outcome_of(const std::optional<std::string>& error, Completion completion,
                          std::int64_t latency_ms) {
  RequestOutcome outcome;
  outcome.attempts = 1;
  outcome.finished_ms = latency_ms; // moved onto the importer's clock by ReplayImport::add
  if (error) {
    outcome.ok = false;
    outcome.error = *error;
    return outcome;
  }
  outcome.ok = true;
  outcome.http_status = 200;
  outcome.completion = std::move(completion);
  return outcome;
}

Result<ReplayRow> jsonl_row(const JsonValue& root) {
  ReplayRow row;
  LLMREPRO_TRY_ASSIGN(row.prompt_id, string_field(root, "prompt_id"));
  row.prompt_text = row.prompt_id;
  if (const JsonValue* prompt = root.find("prompt"); prompt != nullptr) {
    if (prompt->type != Type::string) return field_error("prompt", "a string");
    row.prompt_text = prompt->string;
  }
  if (const JsonValue* model = root.find("model"); model != nullptr) {
    if (model->type != Type::string) return field_error("model", "a string");
    row.model = model->string;
  }
  if (const JsonValue* level = root.find("level"); level != nullptr)
    LLMREPRO_TRY_ASSIGN(row.level, index_value(*level, "level", 1));
  LLMREPRO_TRY_ASSIGN(row.repeat, index_field(root, "repeat", 0));
  std::optional<std::string> error;
  LLMREPRO_TRY_ASSIGN(error, error_field(root, "error"));
  std::int64_t latency = 0;
  LLMREPRO_TRY_ASSIGN(latency, duration_field(root, "latency_ms", 1.0));
  Completion completion;
  if (!error) {
    LLMREPRO_TRY_ASSIGN(completion.tool_calls,
                        tool_calls_field(root, "tool_calls", "arguments", false));
    const JsonValue* text = root.find("text");
    if (text == nullptr && completion.tool_calls.empty())
      return make_error(ErrorCode::input, "missing `text` (or `tool_calls`, or an `error`)");
    if (text != nullptr) {
      if (text->type != Type::string) return field_error("text", "a string");
      completion.text = text->string;
    }
    LLMREPRO_TRY_ASSIGN(completion.tokens, tokens_field(root));
    completion.has_logprobs = !completion.tokens.empty();
    completion.completion_tokens = static_cast<long>(completion.tokens.size());
    completion.model = row.model;
    if (const JsonValue* finish = root.find("finish_reason"); finish != nullptr) {
      if (finish->type != Type::string) return field_error("finish_reason", "a string");
      completion.finish_reason = finish->string;
    }
    sort_candidates(completion);
  }
  row.outcome = outcome_of(error, std::move(completion), latency);
  return row;
}

// chain-determinism-bench v1 (tests/data/chain-determinism-bench-v1/DATASHEET.md):
// `final_answer_norm` is a string, a number or a list; `tool_call_sequence` items are
// {name, args, bound_to?, error?}, of which the call is the name and args (bound_to names the
// harness's variable, error the tool's result).
Result<ReplayRow> chain_row(const JsonValue& root) {
  ReplayRow row;
  LLMREPRO_TRY_ASSIGN(row.model, string_field(root, "model"));
  LLMREPRO_TRY_ASSIGN(row.prompt_id, string_field(root, "query_id"));
  row.prompt_text = row.prompt_id; // the raw files carry no prompt text
  LLMREPRO_TRY_ASSIGN(row.repeat, index_field(root, "run_idx", 0));
  std::optional<std::string> error;
  LLMREPRO_TRY(required(root, "error_category"));
  LLMREPRO_TRY_ASSIGN(error, error_field(root, "error_category"));
  std::int64_t latency = 0;
  LLMREPRO_TRY_ASSIGN(latency, duration_field(root, "latency_s", 1000.0));
  Completion completion;
  completion.model = row.model;
  LLMREPRO_TRY_ASSIGN(completion.tool_calls,
                      tool_calls_field(root, "tool_call_sequence", "args", true));
  const JsonValue* answer = nullptr;
  LLMREPRO_TRY_ASSIGN(answer, required(root, "final_answer_norm"));
  if (answer->type == Type::string) {
    completion.text = answer->string;
  } else {
    auto text = canonical_json(*answer);
    if (!text) return make_error(ErrorCode::input, "`final_answer_norm`: " + text.error().message);
    completion.text = std::move(*text);
  }
  row.outcome = outcome_of(error, std::move(completion), latency);
  return row;
}

} // namespace

Result<ReplayRow> parse_replay_line(ReplayFormat format, std::string_view line) {
  JsonValue root;
  LLMREPRO_TRY_ASSIGN(root, parse_json(line));
  if (root.type != Type::object) return make_error(ErrorCode::input, "expected a JSON object");
  return format == ReplayFormat::jsonl ? jsonl_row(root) : chain_row(root);
}

ReplayImport::ReplayImport(std::string source, ReplayFormat format) : m_format(format) {
  EndpointInfo endpoint;
  endpoint.url = std::move(source);
  endpoint.dialect = std::string("import:") + to_string(format);
  m_data.endpoints.push_back(std::move(endpoint));
}

Result<void> ReplayImport::add(ReplayRow row, const std::string& where) {
  EndpointInfo& endpoint = m_data.endpoints.front();
  if (!row.model.empty()) {
    if (m_model_where.empty()) {
      endpoint.model = row.model;
      m_model_where = where;
    } else if (row.model != endpoint.model) {
      return make_error(ErrorCode::input, where + ": model '" + row.model + "' where " +
                                              m_model_where + " named '" + endpoint.model +
                                              "': import each model into a database of its own");
    }
  }
  auto [found, added] =
      m_prompt_index.emplace(row.prompt_id, static_cast<int>(m_data.suite.prompts.size()));
  if (added) {
    Prompt prompt;
    prompt.id = row.prompt_id;
    prompt.text = row.prompt_text;
    m_data.suite.prompts.push_back(std::move(prompt));
  }
  const int prompt_index = found->second;
  const auto key = std::make_tuple(prompt_index, row.level, row.repeat);
  if (auto [seen, fresh] = m_seen.emplace(key, where); !fresh)
    return make_error(ErrorCode::input, where + ": prompt '" + row.prompt_id + "' level " +
                                            std::to_string(row.level) + " repeat " +
                                            std::to_string(row.repeat) + " was recorded at " +
                                            seen->second + " already");
  RequestRecord record;
  record.planned.prompt_index = prompt_index;
  record.planned.concurrency = row.level;
  record.planned.repeat = row.repeat;
  record.outcome = std::move(row.outcome);
  // Each row on one clock, one after another: the latencies, not the times, were recorded.
  const std::int64_t latency = record.outcome.finished_ms;
  const std::int64_t start = m_data.records.empty() ? 0 : m_data.records.back().outcome.finished_ms;
  record.outcome.started_ms = start;
  record.outcome.finished_ms = start + latency;
  m_data.records.push_back(std::move(record));
  return {};
}

Result<AuditData> ReplayImport::finish(std::int64_t now_ms) && {
  if (m_data.records.empty()) return make_error(ErrorCode::input, "no recorded response to import");
  std::set<int> levels;
  int runs = 0;
  for (const RequestRecord& record : m_data.records) {
    levels.insert(record.planned.concurrency);
    runs = std::max(runs, record.planned.repeat + 1);
  }
  AuditConfig& config = m_data.config;
  config.plan.api = std::string("import:") + to_string(m_format);
  config.plan.model = m_data.endpoints.front().model;
  config.plan.runs = runs;
  config.plan.levels.assign(levels.begin(), levels.end());
  config.plan.probes = {ProbeKind::sweep};
  config.requests.retries = 0;
  const std::size_t planned =
      m_data.suite.prompts.size() * levels.size() * static_cast<std::size_t>(runs);
  m_data.info.id = "import-" + std::to_string(now_ms);
  m_data.info.started_ms = now_ms;
  m_data.info.finished_ms = now_ms;
  m_data.info.status = m_data.records.size() == planned ? "complete" : "partial";
  m_data.suite.source = m_data.endpoints.front().url;
  return std::move(m_data);
}

Result<void> add_replay_file(const std::string& path, ReplayFormat format, ReplayImport& import) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::input, "cannot read '" + path + "'");
  char magic[2] = {0, 0};
  in.read(magic, 2);
  if (in.gcount() == 2 && static_cast<unsigned char>(magic[0]) == 0x1f &&
      static_cast<unsigned char>(magic[1]) == 0x8b)
    return make_error(ErrorCode::input, "'" + path +
                                            "' is gzip-compressed: decompress it first (gunzip -k "
                                            "FILE) and import the .jsonl");
  in.clear();
  in.seekg(0);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(number);
    auto row = parse_replay_line(format, line);
    if (!row) return make_error(ErrorCode::input, where + ": " + row.error().message);
    LLMREPRO_TRY(import.add(std::move(*row), where));
  }
  if (in.bad()) return make_error(ErrorCode::input, "cannot read '" + path + "'");
  return {};
}

} // namespace llmrepro::core
