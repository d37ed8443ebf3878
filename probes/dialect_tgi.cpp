// Text Generation Inference's native POST /generate and /generate_stream. Non-streamed:
// generated_text plus details.tokens[] = {id, text, logprob, special} and, with top_n_tokens,
// details.top_tokens[position][] of the same shape. Native /generate rejects temperature 0,
// so greedy decoding is asked for with do_sample false. Streams are SSE: each event carries one
// `token` and its `top_tokens`; the last has generated_text and details (finish_reason,
// generated_tokens); there is no [DONE]. Special tokens (such as </s>) appear among the tokens
// but not in generated_text. The answer says nothing of the prompt's size (details has
// generated_tokens only), so usage.prompt stays unknown.
#include "probes/detail/dialect_adapters.hpp"
#include "probes/detail/prompt_text.hpp"

namespace llmrepro::probes::detail {

namespace {

// TGI's schema declares Token.logprob nullable: null reads as core::k_unknown_logprob.
core::TokenCandidate read_tgi_token(const JsonView& token, core::NumberAnomalies& numbers) {
  return {token.at("text").string(), read_logprob(token.at("logprob"), numbers)};
}

// One position's top_tokens; null means none.
void read_candidates(const JsonView& candidates, core::TokenLogprob& token,
                     core::NumberAnomalies& numbers) {
  if (candidates.is_null()) return;
  std::size_t count = candidates.size();
  for (std::size_t i = 0; i < count; ++i)
    token.top.push_back(read_tgi_token(candidates.at(i), numbers));
}

void read_details_summary(const JsonView& details, core::Completion& completion) {
  completion.finish_reason = details.optional_string("finish_reason");
  if (auto generated = details.find("generated_tokens"))
    completion.completion_tokens = generated->integer();
  else
    completion.completion_tokens = static_cast<long>(completion.tokens.size());
}

core::Completion parse_tgi_whole(std::string_view body) {
  JsonDocument document = parse_document(body);
  JsonView root(document);
  fail_on_error_envelope(root, body);
  core::Completion completion;
  completion.text = root.at("generated_text").string();
  auto details = root.find("details");
  if (!details) return completion;
  completion.has_logprobs = true;
  JsonView tokens = details->at("tokens");
  std::size_t count = tokens.size();
  auto top_tokens = details->find("top_tokens");
  // Without top_n_tokens the list is omitted or empty: tokens without candidates.
  if (top_tokens && top_tokens->size() == 0) top_tokens.reset();
  if (top_tokens && top_tokens->size() != count)
    fail(top_tokens->describe() + " has " + std::to_string(top_tokens->size()) + " entries but " +
         tokens.path() + " has " + std::to_string(count));
  for (std::size_t i = 0; i < count; ++i) {
    core::TokenCandidate sampled = read_tgi_token(tokens.at(i), completion.numbers);
    core::TokenLogprob token{sampled.token, sampled.logprob, {}};
    if (top_tokens) read_candidates(top_tokens->at(i), token, completion.numbers);
    completion.tokens.push_back(std::move(token));
  }
  read_details_summary(*details, completion);
  return completion;
}

core::Completion parse_tgi_stream(std::string_view body) {
  core::Completion completion;
  bool done = false;
  std::vector<std::string> events = sse_events(body);
  for (std::size_t index = 0; index < events.size() && !done; ++index) {
    if (events[index] == "[DONE]") continue;
    with_event_prefix(index, [&] {
      JsonDocument document = parse_document(events[index]);
      JsonView event(document);
      fail_on_error_envelope(event, events[index]);
      core::TokenCandidate sampled = read_tgi_token(event.at("token"), completion.numbers);
      core::TokenLogprob token{sampled.token, sampled.logprob, {}};
      if (auto top_tokens = event.find("top_tokens"))
        read_candidates(*top_tokens, token, completion.numbers);
      completion.tokens.push_back(std::move(token));
      completion.has_logprobs = true;
      if (auto text = event.find("generated_text")) {
        completion.text = text->string();
        done = true;
        if (auto details = event.find("details"))
          read_details_summary(*details, completion);
        else
          completion.completion_tokens = static_cast<long>(completion.tokens.size());
      }
    });
  }
  if (!done) fail("stream ended without a final event (generated_text): truncated");
  return completion;
}

} // namespace

DialectRequest build_tgi_request(const core::Prompt& prompt, const GenerationParams& params) {
  Json parameters{{"details", true},
                  {"top_n_tokens", params.top_logprobs},
                  {"do_sample", params.sampled},
                  {"max_new_tokens", effective_max_tokens(prompt, params)}};
  put_seed(parameters, params);
  // Sampled: do_sample with temperature 1; TGI refuses top_p 1 (it must lie below 1), and
  // leaving it out is top_p 1.
  if (params.sampled) parameters["temperature"] = 1.0;
  Json body{{"inputs", prompt_as_text(prompt)}, {"parameters", std::move(parameters)}};
  return {params.stream ? "/generate_stream" : "/generate", dump_body(body)};
}

core::Completion parse_tgi(std::string_view body, bool stream) {
  return stream ? parse_tgi_stream(body) : parse_tgi_whole(body);
}

} // namespace llmrepro::probes::detail
