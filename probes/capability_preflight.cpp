#include "probes/capability_preflight.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>

#include "core/server_description.hpp"
#include "probes/detail/request_builder.hpp"
#include "probes/http_transport.hpp"

namespace llmrepro::probes {

namespace {

using core::CapabilityCheck;
using core::CapabilityOutcome;

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Whether `word` occurs in `text` with no letter, digit or underscore on either side.
bool has_word(const std::string& text, std::string_view word) {
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool before = at > 0 && word_char(text[at - 1]);
    const std::size_t end = at + word.size();
    const bool after = end < text.size() && word_char(text[end]);
    if (!before && !after) return true;
  }
  return false;
}

// The words providers refuse a parameter with (lower case), from the shapes cited in
// tests/data/formats/README.md.
bool refusing_words(const std::string& lower) {
  static constexpr std::array<std::string_view, 12> k_words{
      "not supported", "unsupported",      "deprecated",       "not permitted",
      "unrecognized",  "unrecognised",     "not allowed",      "unknown parameter",
      "extra inputs",  "only the default", "does not support", "not enabled"};
  return std::any_of(k_words.begin(), k_words.end(),
                     [&](std::string_view word) { return lower.find(word) != std::string::npos; });
}

// Our name for a parameter as a provider spells it; empty where it is none of ours.
std::string our_parameter(const std::string& lower) {
  if (has_word(lower, "temperature")) return "temperature";
  if (has_word(lower, "logprobs") || has_word(lower, "top_logprobs") ||
      has_word(lower, "responselogprobs") || has_word(lower, "logprob"))
    return "logprobs";
  if (has_word(lower, "seed")) return "seed";
  return {};
}

// The `param` field of an OpenAI-shaped error body, lower case; empty where there is none.
std::string param_field(std::string_view body) {
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (!json.is_object()) return {};
  const auto error = json.find("error");
  if (error == json.end() || !error->is_object()) return {};
  const auto param = error->find("param");
  if (param == error->end() || !param->is_string()) return {};
  return lowercase(param->get<std::string>());
}

bool same_answer(const core::Completion& a, const core::Completion& b) {
  return a.text == b.text && a.tool_calls == b.tool_calls;
}

bool empty_answer(const core::Completion& c) { return c.text.empty() && c.tool_calls.empty(); }

// The first position where an answer chose a token well below its position's top candidate:
// sampling, which greedy decoding never does.
std::optional<std::string> sampled_position(const core::Completion& completion) {
  for (std::size_t i = 0; i < completion.tokens.size(); ++i) {
    const core::TokenLogprob& token = completion.tokens[i];
    if (token.top.empty() || token.top.front().token == token.token) continue;
    const double below = token.top.front().logprob - token.logprob;
    if (std::isnan(below) || below <= k_sampling_evidence_nats) continue;
    return fmt::format("token {} chose a token {:.2f} nats below the top candidate", i + 1, below);
  }
  return std::nullopt;
}

struct Sent {
  HttpResponse response;
  core::Result<core::Completion> completion = core::make_error(core::ErrorCode::endpoint, "");
};

Sent send_once(HttpTransport& transport, const EndpointTarget& target,
               const SchedulerConfig& config, const core::Prompt& prompt,
               const GenerationParams& params) {
  Sent sent;
  sent.response = transport.perform(detail::generation_request(target, config, prompt, params));
  if (sent.response.failure == TransportFailure::none && sent.response.http_status >= 200 &&
      sent.response.http_status < 300) {
    sent.completion = parse_response(target.dialect, sent.response.body, false);
    if (sent.completion) core::sort_candidates(*sent.completion);
  }
  return sent;
}

// What went wrong with a request that brought no completion, in words (server text made safe).
std::string failure_of(const Sent& sent) {
  if (sent.response.failure != TransportFailure::none)
    return core::server_text(sent.response.error);
  if (sent.response.http_status < 200 || sent.response.http_status >= 300)
    return core::server_text(fmt::format("HTTP {}: {}", sent.response.http_status,
                                         describe_error_body(sent.response.body)));
  return core::server_text(sent.completion.error().message);
}

} // namespace

core::Prompt preflight_prompt(bool chat) {
  core::Prompt prompt;
  prompt.id = "preflight";
  const std::string words = "Write one sentence about the sea.";
  if (chat)
    prompt.messages.push_back({"user", words});
  else
    prompt.text = words + "\n";
  prompt.max_tokens = k_preflight_max_tokens;
  return prompt;
}

std::string refused_parameter(int http_status, std::string_view body) {
  if (http_status != 400 && http_status != 422) return {};
  const std::string reason = lowercase(describe_error_body(body));
  if (!refusing_words(reason)) return {};
  // OpenAI names the parameter in `param`; the others only in the message.
  if (std::string named = our_parameter(param_field(body)); !named.empty()) return named;
  return our_parameter(reason);
}

CapabilityCheck judge_greedy(const core::Completion& first, const core::Completion& second) {
  for (const core::Completion* answer : {&first, &second})
    if (auto position = sampled_position(*answer))
      return {CapabilityOutcome::ignored, "an answer's " + *position + ": the endpoint samples"};
  if (same_answer(first, second))
    return {CapabilityOutcome::accepted, "two identical requests answered alike"};
  if (!first.has_logprobs || !second.has_logprobs)
    return {CapabilityOutcome::unconfirmed,
            "two identical requests answered differently, with no logprobs to tell sampling "
            "from batch noise"};
  const std::size_t shared = std::min(first.tokens.size(), second.tokens.size());
  std::size_t at = 0;
  while (at < shared && first.tokens[at].token == second.tokens[at].token) ++at;
  const std::optional<double> gap =
      at < first.tokens.size() ? first.tokens[at].gap() : std::optional<double>();
  if (!gap || *gap <= k_sampling_evidence_nats)
    return {CapabilityOutcome::accepted,
            fmt::format("two identical requests parted at token {}, at a near tie{}", at + 1,
                        gap ? fmt::format(" ({:.3f} nats)", *gap) : std::string())};
  return {CapabilityOutcome::ignored,
          fmt::format("two identical requests parted at token {}, where the top candidate led by "
                      "{:.2f} nats: the endpoint samples",
                      at + 1, *gap)};
}

CapabilityCheck judge_seed(const core::Completion& first, const core::Completion& second,
                           std::uint64_t seed) {
  if (empty_answer(first) && empty_answer(second))
    return {CapabilityOutcome::untested, "both answers were empty"};
  if (same_answer(first, second))
    return {CapabilityOutcome::honoured,
            fmt::format("two sampled requests with seed {} answered alike", seed)};
  return {CapabilityOutcome::not_honoured,
          fmt::format("two sampled requests with seed {} answered differently", seed)};
}

bool dialect_sends_seed(Dialect dialect) {
  return dialect != Dialect::sglang && dialect != Dialect::openai_responses &&
         dialect != Dialect::anthropic;
}

void apply_capabilities(EndpointTarget& target, const core::EndpointCapabilities& capabilities) {
  if (capabilities.requested == core::TemperatureMode::provider_default ||
      capabilities.temperature.outcome == CapabilityOutcome::refused)
    target.provider_temperature = true;
  if (capabilities.logprobs.outcome == CapabilityOutcome::refused) target.rejects_logprobs = true;
  if (capabilities.seed.outcome == CapabilityOutcome::refused) target.omit_seed = true;
}

core::EndpointCapabilities run_preflight(const EndpointTarget& given, const SchedulerConfig& config,
                                         bool chat, core::TemperatureMode requested) {
  core::EndpointCapabilities found;
  found.requested = requested;
  found.in_effect = requested;
  found.candidates_requested = config.params.top_logprobs;
  const bool greedy_asked = requested == core::TemperatureMode::zero;
  if (!greedy_asked)
    found.temperature = {CapabilityOutcome::not_sent, "the provider's default sampling"};
  if (given.dialect == Dialect::anthropic)
    found.logprobs = {CapabilityOutcome::not_sent, "the API has none"};
  if (!dialect_sends_seed(given.dialect))
    found.seed = {CapabilityOutcome::not_sent, "the API takes none"};

  EndpointTarget target = given;
  apply_capabilities(target, found);
  // Five requests at the audit's own timeout could hold the plan back for ten minutes on an
  // endpoint that hangs: a preflight request gets at most a minute.
  SchedulerConfig preflight_config = config;
  preflight_config.timeout_s = std::min(config.timeout_s, k_preflight_timeout_s);
  const core::Prompt prompt = preflight_prompt(chat);
  HttpTransport transport;
  const auto send = [&]() {
    GenerationParams params = detail::params_for(target, config);
    params.stream = false;
    ++found.requests;
    return send_once(transport, target, preflight_config, prompt, params);
  };

  Sent first = send();
  for (int dropped = 0; !first.completion && dropped < 3; ++dropped) {
    const std::string parameter =
        refused_parameter(first.response.http_status, first.response.body);
    const CapabilityCheck refusal{CapabilityOutcome::refused, failure_of(first)};
    if (parameter == "temperature" && !target.provider_temperature) {
      found.temperature = refusal;
      found.in_effect = core::TemperatureMode::provider_default;
    } else if (parameter == "logprobs" && !target.rejects_logprobs) {
      found.logprobs = refusal;
    } else if (parameter == "seed" && !target.omit_seed) {
      found.seed = refusal;
    } else {
      break;
    }
    apply_capabilities(target, found);
    first = send();
  }
  if (!first.completion) {
    found.failure = failure_of(first);
    return found;
  }
  const core::Completion& a = *first.completion;
  found.model = core::server_text(a.model);
  if (found.logprobs.outcome == CapabilityOutcome::unchecked) {
    if (a.has_logprobs) {
      found.logprobs.outcome = CapabilityOutcome::accepted;
      for (const auto& token : a.tokens)
        found.candidates_returned =
            std::max(found.candidates_returned, static_cast<int>(token.top.size()));
    } else {
      found.logprobs = {CapabilityOutcome::ignored, "the answer carried none"};
    }
  }

  Sent second = send();
  if (!second.completion) {
    found.failure = failure_of(second);
    return found;
  }
  const core::Completion& b = *second.completion;
  if (found.in_effect == core::TemperatureMode::zero) {
    found.temperature = judge_greedy(a, b);
    if (found.temperature.outcome == CapabilityOutcome::ignored)
      found.in_effect = core::TemperatureMode::provider_default;
  }
  if (found.seed.outcome == CapabilityOutcome::unchecked)
    found.seed = found.in_effect == core::TemperatureMode::zero
                     ? CapabilityCheck{CapabilityOutcome::untested,
                                       "greedy decoding: a seed changes nothing"}
                     : judge_seed(a, b, config.params.seed);
  return found;
}

} // namespace llmrepro::probes
