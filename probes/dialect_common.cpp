#include <algorithm>
#include <cmath>

#include "core/logprob_floor.hpp"
#include "probes/detail/dialect_adapters.hpp"
#include "probes/sse_parser.hpp"

namespace llmrepro::probes::detail {

int effective_max_tokens(const core::Prompt &prompt, const GenerationParams &params) {
  return prompt.max_tokens ? *prompt.max_tokens : params.max_tokens;
}

Json response_format(const core::Prompt &prompt) {
  Json parsed = Json::parse(prompt.response_format_json, nullptr, false);
  if (parsed.is_discarded()) return Json(prompt.response_format_json);
  return parsed;
}

std::string dump_body(const Json &body) {
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

double read_logprob(const JsonView &value) {
  return core::clamp_logprob(value.number());
}

double read_probability_as_logprob(const JsonView &value) {
  double p = value.number();
  // Probabilities arrive as float32 softmax outputs: allow the last bit of rounding above 1.
  if (!(p >= 0.0 && p <= 1.0 + 1e-6)) fail(value.describe() + " must be a probability in [0, 1]");
  if (p == 0.0) return core::k_logprob_floor;
  return core::clamp_logprob(std::log(std::min(p, 1.0)));
}

core::TokenLogprob read_openai_token(const JsonView &entry) {
  core::TokenLogprob token;
  token.token = entry.at("token").string();
  token.logprob = read_logprob(entry.at("logprob"));
  if (auto top = entry.find("top_logprobs")) {
    std::size_t count = top->size();
    token.top.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      JsonView candidate = top->at(i);
      token.top.push_back({candidate.at("token").string(), read_logprob(candidate.at("logprob"))});
    }
  }
  return token;
}

void fail_on_error_envelope(const JsonView &root, std::string_view text, const std::string &what) {
  if (!root.is_object()) return;
  bool has_error = root.find("error").has_value();
  if (!has_error) {
    auto object = root.find("object");
    has_error = object && object->is_string() && object->string() == "error";
  }
  if (has_error) fail(what + "endpoint error: " + describe_error_body(text));
}

std::vector<std::string> sse_events(std::string_view body) {
  SseParser parser;
  std::vector<std::string> events = parser.feed(body);
  for (auto &event : parser.finish())
    events.push_back(std::move(event));
  return events;
}

std::string event_prefix(std::size_t index) {
  return "stream event " + std::to_string(index + 1) + ": ";
}

} // namespace llmrepro::probes::detail
