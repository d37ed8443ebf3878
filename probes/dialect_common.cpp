#include <algorithm>
#include <cmath>
#include <optional>

#include "core/logprob_floor.hpp"
#include "probes/detail/dialect_adapters.hpp"
#include "probes/sse_parser.hpp"

#include "core/json_value.hpp"
#include "core/tool_calls.hpp"

namespace llmrepro::probes::detail {

int effective_max_tokens(const core::Prompt& prompt, const GenerationParams& params) {
  return prompt.max_tokens ? *prompt.max_tokens : params.max_tokens;
}

void put_temperature(Json& place, const GenerationParams& params, const char* top_p_key) {
  if (params.sampled) {
    place["temperature"] = 1.0;
    if (top_p_key != nullptr) place[top_p_key] = 1.0;
  } else if (!params.provider_temperature) {
    place["temperature"] = 0.0;
  }
}

void put_seed(Json& place, const GenerationParams& params) {
  if (params.send_seed) place["seed"] = params.seed;
}

core::ToolCall tool_call_of(std::string name, std::string_view arguments, std::string id) {
  core::ToolCall call;
  call.name = std::move(name);
  call.id = std::move(id);
  if (auto canonical = core::canonical_json(arguments.empty() ? "null" : arguments)) {
    call.arguments = std::move(*canonical);
  } else {
    call.arguments.clear();
    core::append_json_string(call.arguments, arguments);
  }
  return call;
}

Json prompt_tools(const core::Prompt& prompt) {
  if (prompt.tools_json.empty()) return nullptr;
  return Json::parse(prompt.tools_json);
}

std::vector<Json> prompt_functions(const core::Prompt& prompt) {
  std::vector<Json> functions;
  for (const Json& tool : prompt_tools(prompt)) functions.push_back(tool.at("function"));
  return functions;
}

Json call_arguments(const core::ToolCall& call) {
  return Json::parse(call.arguments, nullptr, false);
}

Json response_format(const core::Prompt& prompt) {
  Json parsed = Json::parse(prompt.response_format_json, nullptr, false);
  if (parsed.is_discarded()) return Json(prompt.response_format_json);
  return parsed;
}

std::string dump_body(const Json& body) {
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<double> non_finite_logprob(JsonNumber kind, core::NumberAnomalies& numbers) {
  switch (kind) {
  case JsonNumber::finite: return std::nullopt;
  case JsonNumber::nan: ++numbers.nan; return core::k_unknown_logprob;
  case JsonNumber::infinity: ++numbers.infinity; return core::k_unknown_logprob;
  case JsonNumber::negative_infinity: ++numbers.negative_infinity; return core::k_logprob_floor;
  case JsonNumber::overflow: ++numbers.overflow; return core::k_unknown_logprob;
  case JsonNumber::negative_overflow: ++numbers.overflow; return core::k_logprob_floor;
  }
  return core::k_unknown_logprob;
}

std::string spelled_token_bytes(std::string_view raw) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string spelled = "bytes:";
  spelled.reserve(spelled.size() + 4 * raw.size());
  for (char c : raw) {
    auto byte = static_cast<unsigned char>(c);
    spelled += "\\x";
    spelled += k_hex[byte >> 4];
    spelled += k_hex[byte & 0x0F];
  }
  return spelled;
}

namespace {

// What a log probability (or probability) literal that is no finite number stands for, counted
// by kind in `numbers`; nullopt for a finite number. Throws unless a number or null.
std::optional<double> non_finite(const JsonView& value, core::NumberAnomalies& numbers) {
  if (value.is_null()) {
    ++numbers.null;
    return core::k_unknown_logprob;
  }
  return non_finite_logprob(value.number_kind(), numbers);
}

} // namespace

double read_logprob(const JsonView& value, core::NumberAnomalies& numbers) {
  if (auto mapped = non_finite(value, numbers)) return *mapped;
  return core::clamp_logprob(value.number());
}

std::string read_token_text(const JsonView& entry, std::string_view key) {
  std::string token = entry.at(key).string();
  auto bytes = entry.find("bytes");
  if (!bytes || !bytes->is_array()) return token;
  std::size_t count = bytes->size();
  if (count == 0) return token; // "bytes:" alone would not read back as no bytes
  std::string raw;
  raw.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    long byte = 0;
    try {
      byte = bytes->at(i).integer();
    } catch (const ParseFailure&) {
      return token; // not a list of byte values: the string is all there is
    }
    if (byte < 0 || byte > 255) return token;
    raw.push_back(static_cast<char>(static_cast<unsigned char>(byte)));
  }
  if (raw == token) return token;
  return spelled_token_bytes(raw);
}

double read_probability_as_logprob(const JsonView& value, core::NumberAnomalies& numbers) {
  if (auto mapped = non_finite(value, numbers)) return *mapped;
  double p = value.number();
  // Probabilities arrive as float32 softmax outputs: allow the last bit of rounding above 1.
  if (!(p >= 0.0 && p <= 1.0 + 1e-6)) fail(value.describe() + " must be a probability in [0, 1]");
  if (p == 0.0) return core::k_logprob_floor;
  return core::clamp_logprob(std::log(std::min(p, 1.0)));
}

core::TokenLogprob read_openai_token(const JsonView& entry, core::NumberAnomalies& numbers) {
  core::TokenLogprob token;
  token.token = read_token_text(entry, "token");
  token.logprob = read_logprob(entry.at("logprob"), numbers);
  if (auto top = entry.find("top_logprobs")) {
    std::size_t count = top->size();
    token.top.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      JsonView candidate = top->at(i);
      token.top.push_back(
          {read_token_text(candidate, "token"), read_logprob(candidate.at("logprob"), numbers)});
    }
  }
  return token;
}

void fail_on_error_envelope(const JsonView& root, std::string_view text) {
  if (!root.is_object()) return;
  bool has_error = root.find("error").has_value();
  if (!has_error) {
    auto object = root.find("object");
    has_error = object && object->is_string() && object->string() == "error";
  }
  // Never prefixed with the event's index: the reason is the endpoint's, the same for every
  // request it refused so.
  if (has_error) throw EndpointErrorEvent(describe_error_body(text));
}

std::vector<std::string> sse_events(std::string_view body) {
  SseParser parser;
  std::vector<std::string> events = parser.feed(body);
  for (auto& event : parser.finish()) events.push_back(std::move(event));
  return events;
}

std::string event_prefix(std::size_t index) {
  return "stream event " + std::to_string(index + 1) + ": ";
}

std::optional<long> optional_count(const JsonView& object,
                                   std::initializer_list<std::string_view> path) {
  std::optional<JsonView> value = object;
  for (std::string_view key : path) {
    if (!value->is_object()) return std::nullopt;
    value = value->find(key);
    if (!value) return std::nullopt;
  }
  return value->integer();
}

} // namespace llmrepro::probes::detail
