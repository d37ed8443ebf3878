// llama.cpp's native POST /completion (llama-server), in its three probability shapes:
// - current: completion_probabilities[] = {id, token, bytes, logprob, top_logprobs[{id, token,
//   bytes, logprob}]}, with p == 0 sent as float lowest (core::clamp_logprob maps it to the
//   floor) and a byte-fragment token as U+FFFD beside its real bytes (read_token_text());
// - post_sampling_probs: {token, prob, top_probs[{token, prob}]}, probabilities after sampling;
// - before December 2024: {content, probs[{tok_str, prob}]}, with no probability of its own
//   for the sampled token (it is looked up among the candidates).
// Streams are SSE with one partial result per event carrying its token's probabilities and
// a last event with "stop": true (no [DONE]); errors mid-stream come as an `error:` line.
#include "core/logprob_floor.hpp"
#include "probes/detail/dialect_adapters.hpp"
#include "probes/detail/prompt_text.hpp"

namespace llmrepro::probes::detail {

namespace {

core::TokenLogprob read_probability_token(const JsonView& entry, core::NumberAnomalies& numbers) {
  core::TokenLogprob token;
  token.token = read_token_text(entry, "token");
  token.logprob = read_probability_as_logprob(entry.at("prob"), numbers);
  if (auto top = entry.find("top_probs")) {
    std::size_t count = top->size();
    for (std::size_t i = 0; i < count; ++i) {
      JsonView candidate = top->at(i);
      token.top.push_back({read_token_text(candidate, "token"),
                           read_probability_as_logprob(candidate.at("prob"), numbers)});
    }
  }
  return token;
}

core::TokenLogprob read_old_token(const JsonView& entry, core::NumberAnomalies& numbers) {
  core::TokenLogprob token;
  token.token = entry.at("content").string();
  // The old shape gives no probability for the sampled token itself: it is its candidate's,
  // or the floor when it was not among the candidates, or unknown when there were none (probs
  // null or empty).
  JsonView probs = entry.at("probs");
  std::size_t count = probs.is_null() ? 0 : probs.size();
  token.logprob = count == 0 ? core::k_unknown_logprob : core::k_logprob_floor;
  bool found = false;
  for (std::size_t i = 0; i < count; ++i) {
    JsonView candidate = probs.at(i);
    core::TokenCandidate parsed{candidate.at("tok_str").string(),
                                read_probability_as_logprob(candidate.at("prob"), numbers)};
    if (!found && parsed.token == token.token) {
      token.logprob = parsed.logprob;
      found = true;
    }
    token.top.push_back(std::move(parsed));
  }
  return token;
}

std::vector<core::TokenLogprob> read_probabilities(const JsonView& probabilities,
                                                   core::NumberAnomalies& numbers) {
  std::vector<core::TokenLogprob> tokens;
  std::size_t count = probabilities.size();
  tokens.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    JsonView entry = probabilities.at(i);
    if (entry.contains("logprob"))
      tokens.push_back(read_openai_token(entry, numbers));
    else if (entry.contains("prob"))
      tokens.push_back(read_probability_token(entry, numbers));
    else if (entry.contains("probs"))
      tokens.push_back(read_old_token(entry, numbers));
    else
      fail(entry.describe() + " has none of logprob, prob or probs");
  }
  return tokens;
}

// `stop_type` ("eos", "word", "limit", "none"), or the same word from the old boolean flags.
std::string read_finish_reason(const JsonView& root) {
  if (root.find("stop_type")) return root.at("stop_type").string();
  for (const char* reason : {"eos", "word", "limit"}) {
    auto flag = root.find(std::string("stopped_") + reason);
    if (flag && flag->boolean()) return reason;
  }
  return "";
}

// Fields of the final result: why it stopped, the model, how many tokens it predicted.
void read_final(const JsonView& root, core::Completion& completion) {
  completion.finish_reason = read_finish_reason(root);
  completion.model = root.optional_string("model");
  if (auto predicted = root.find("tokens_predicted"))
    completion.completion_tokens = predicted->integer();
  else
    completion.completion_tokens = static_cast<long>(completion.tokens.size());
  // tokens_evaluated counts the whole prompt; timings.prompt_n only the part not served from
  // the prompt cache, so it is no prompt size and is not read.
  completion.usage.prompt = optional_count(root, {"tokens_evaluated"});
  // timings.cache_n: the prompt tokens reused from the slot's cache (tools/server/
  // server-common.cpp server_slot_stats::to_json). tokens_cached is the slot's whole cache after
  // the request, generated tokens included, so it says nothing of a warm start.
  completion.usage.cached_prompt = optional_count(root, {"timings", "cache_n"});
}

core::Completion parse_llamacpp_whole(std::string_view body) {
  JsonDocument document = parse_document(body);
  JsonView root(document);
  fail_on_error_envelope(root, body);
  core::Completion completion;
  completion.text = root.at("content").string();
  if (auto probabilities = root.find("completion_probabilities")) {
    completion.tokens = read_probabilities(*probabilities, completion.numbers);
    completion.has_logprobs = true;
  }
  read_final(root, completion);
  return completion;
}

bool same_tokens(const std::vector<core::TokenLogprob>& a,
                 const std::vector<core::TokenLogprob>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].token != b[i].token) return false;
  return true;
}

// The payload of an `error:` line is the error object itself, not wrapped in {"error": ...}.
std::string describe_stream_error(std::string_view payload) {
  try {
    Json error = parse_json(payload);
    if (error.is_object() && error.contains("message"))
      return describe_error_body(dump_body(Json{{"error", std::move(error)}}));
  } catch (const ParseFailure&) {
    // Not JSON: the raw text is the best reason there is.
  }
  return describe_error_body(payload);
}

// llama-server sends a failure inside a stream as an `error: {...}` SSE line, which SSE
// itself ignores; find it so a cut-off stream says why.
std::optional<std::string> stream_error_line(std::string_view body) {
  std::size_t at = 0;
  while (at < body.size()) {
    std::size_t end = body.find('\n', at);
    std::string_view line = body.substr(at, end == std::string_view::npos ? end : end - at);
    if (line.substr(0, 6) == "error:") return describe_stream_error(line.substr(6));
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return std::nullopt;
}

core::Completion parse_llamacpp_stream(std::string_view body) {
  core::Completion completion;
  bool done = false;
  std::vector<std::string> events = sse_events(body);
  for (std::size_t index = 0; index < events.size() && !done; ++index) {
    if (events[index] == "[DONE]") continue;
    with_event_prefix(index, [&] {
      JsonDocument document = parse_document(events[index]);
      JsonView event(document);
      fail_on_error_envelope(event, events[index]);
      completion.text += event.at("content").string();
      done = event.at("stop").boolean();
      if (auto probabilities = event.find("completion_probabilities")) {
        core::NumberAnomalies numbers;
        std::vector<core::TokenLogprob> tokens = read_probabilities(*probabilities, numbers);
        completion.has_logprobs = true;
        // Servers before December 2024 repeated every token's probabilities in the final
        // event; a final list as long as what the partials already gave is that repeat.
        bool repeat = done && !completion.tokens.empty() && same_tokens(tokens, completion.tokens);
        if (!repeat) {
          for (auto& token : tokens) completion.tokens.push_back(std::move(token));
          completion.numbers += numbers;
        }
      }
      if (done) read_final(event, completion);
    });
  }
  if (!done) {
    if (auto error = stream_error_line(body)) throw EndpointErrorEvent(*error);
    fail("stream ended without a final event (\"stop\": true): truncated");
  }
  return completion;
}

} // namespace

DialectRequest build_llamacpp_request(const core::Prompt& prompt, const GenerationParams& params) {
  Json body;
  body["prompt"] = prompt_as_text(prompt);
  body["n_predict"] = effective_max_tokens(prompt, params);
  body["n_probs"] = params.top_logprobs;
  put_temperature(body, params);
  put_seed(body, params);
  body["stream"] = params.stream;
  // A router (llama-server without -m) proxies /completion to the child serving `model` and
  // answers 400 "model name is missing from the request" without it; a single-model server
  // ignores it. Sent where a router was detected or the user named the model (params_for); a
  // name found only through /v1/models on a single-model server is left out.
  if (params.native_model && !params.model.empty()) body["model"] = params.model;
  if (params.bypass_prompt_cache) body["cache_prompt"] = false;
  return {"/completion", dump_body(body)};
}

core::Completion parse_llamacpp(std::string_view body, bool stream) {
  return stream ? parse_llamacpp_stream(body) : parse_llamacpp_whole(body);
}

} // namespace llmrepro::probes::detail
