// SGLang's native POST /generate with return_logprob. Logprobs live in meta_info:
// output_token_logprobs is a list of [logprob, token_id, text|null] triples and
// output_top_logprobs a list (per position) of such triples; finish_reason is an object
// {"type": "length"|"stop"|"abort", ...}. Text is null in the triples unless
// return_text_in_logprobs, in which case the token reads "token_id:N" (vLLM's spelling).
//
// Streams are SSE ending in `data: [DONE]`. By default every event repeats the whole text so
// far and its meta_info holds the logprobs so far, so the last event is the completion. Servers
// with incremental stream output send only the new part each time; we tell the two apart by
// meta_info.completion_tokens: when the last event's token list is shorter than that count and
// the lists of all events add up to it, the events are concatenated instead (and so are the
// counts of log probabilities that were no finite number; orjson, which the server encodes
// with, writes NaN and the infinities as null).
#include "probes/detail/dialect_adapters.hpp"
#include "probes/detail/prompt_text.hpp"

namespace llmrepro::probes::detail {

namespace {

core::TokenCandidate read_triple(const JsonView& triple, core::NumberAnomalies& numbers) {
  if (triple.size() < 2) fail(triple.describe() + " must be [logprob, token_id, text]");
  core::TokenCandidate candidate;
  candidate.logprob = read_logprob(triple.at(0), numbers);
  bool has_text = triple.size() >= 3 && !triple.at(2).is_null();
  candidate.token =
      has_text ? triple.at(2).string() : "token_id:" + std::to_string(triple.at(1).integer());
  return candidate;
}

struct Piece {
  std::string text;
  std::vector<core::TokenLogprob> tokens;
  bool has_logprobs = false;
  std::string finish_reason;
  long completion_tokens = -1; // -1: not reported
  core::TokenUsage usage;
  core::NumberAnomalies numbers;
};

Piece read_piece(const JsonView& root) {
  Piece piece;
  piece.text = root.at("text").string();
  JsonView meta = root.at("meta_info");
  if (auto finish = meta.find("finish_reason")) {
    piece.finish_reason = finish->is_object() ? finish->at("type").string() : finish->string();
  }
  if (auto count = meta.find("completion_tokens")) piece.completion_tokens = count->integer();
  piece.usage.prompt = optional_count(meta, {"prompt_tokens"});
  piece.usage.reasoning = optional_count(meta, {"reasoning_tokens"});
  // The prompt tokens the radix cache served (python/sglang/srt/managers/ meta_info).
  piece.usage.cached_prompt = optional_count(meta, {"cached_tokens"});
  auto logprobs = meta.find("output_token_logprobs");
  if (!logprobs) return piece;
  piece.has_logprobs = true;
  auto top = meta.find("output_top_logprobs");
  std::size_t count = logprobs->size();
  // top_logprobs_num 0 gives an empty list; otherwise one entry per generated token.
  if (top && top->size() != 0 && top->size() != count)
    fail(top->describe() + " has " + std::to_string(top->size()) + " entries but " +
         logprobs->path() + " has " + std::to_string(count));
  for (std::size_t i = 0; i < count; ++i) {
    core::TokenCandidate sampled = read_triple(logprobs->at(i), piece.numbers);
    core::TokenLogprob token{sampled.token, sampled.logprob, {}};
    if (top && top->size() != 0) {
      JsonView candidates = top->at(i);
      if (!candidates.is_null()) {
        std::size_t candidate_count = candidates.size();
        for (std::size_t j = 0; j < candidate_count; ++j)
          token.top.push_back(read_triple(candidates.at(j), piece.numbers));
      }
    }
    piece.tokens.push_back(std::move(token));
  }
  return piece;
}

core::Completion to_completion(Piece piece) {
  core::Completion completion;
  completion.text = std::move(piece.text);
  completion.tokens = std::move(piece.tokens);
  completion.has_logprobs = piece.has_logprobs;
  completion.finish_reason = std::move(piece.finish_reason);
  completion.numbers = piece.numbers;
  completion.usage = piece.usage;
  completion.completion_tokens = piece.completion_tokens >= 0
                                     ? piece.completion_tokens
                                     : static_cast<long>(completion.tokens.size());
  return completion;
}

core::Completion parse_sglang_whole(std::string_view body) {
  JsonDocument document = parse_document(body);
  JsonView root(document);
  fail_on_error_envelope(root, body);
  return to_completion(read_piece(root));
}

core::Completion parse_sglang_stream(std::string_view body) {
  std::vector<Piece> pieces;
  bool done = false;
  std::vector<std::string> events = sse_events(body);
  for (std::size_t index = 0; index < events.size(); ++index) {
    if (events[index] == "[DONE]") {
      done = true;
      break;
    }
    with_event_prefix(index, [&] {
      JsonDocument document = parse_document(events[index]);
      JsonView event(document);
      fail_on_error_envelope(event, events[index]);
      pieces.push_back(read_piece(event));
    });
  }
  if (!done) fail("stream ended without data: [DONE] (truncated)");
  if (pieces.empty()) fail("stream carried no event before [DONE]");
  Piece& last = pieces.back();
  std::size_t total = 0;
  for (const auto& piece : pieces) total += piece.tokens.size();
  bool incremental = last.completion_tokens >= 0 &&
                     last.tokens.size() < static_cast<std::size_t>(last.completion_tokens) &&
                     total == static_cast<std::size_t>(last.completion_tokens);
  if (!incremental) return to_completion(std::move(last));
  Piece joined;
  for (auto& piece : pieces) {
    joined.text += piece.text;
    for (auto& token : piece.tokens) joined.tokens.push_back(std::move(token));
    joined.has_logprobs = joined.has_logprobs || piece.has_logprobs;
    joined.numbers += piece.numbers;
  }
  joined.finish_reason = last.finish_reason;
  joined.completion_tokens = last.completion_tokens;
  joined.usage = last.usage;
  return to_completion(std::move(joined));
}

} // namespace

DialectRequest build_sglang_request(const core::Prompt& prompt, const GenerationParams& params) {
  Json body;
  body["text"] = prompt_as_text(prompt);
  Json sampling{{"max_new_tokens", effective_max_tokens(prompt, params)}};
  // No seed, as for every request of this dialect; top_p 1 is SGLang's default, said anyway.
  put_temperature(sampling, params);
  body["sampling_params"] = std::move(sampling);
  body["return_logprob"] = true;
  body["top_logprobs_num"] = params.top_logprobs;
  body["return_text_in_logprobs"] = true;
  body["stream"] = params.stream;
  return {"/generate", dump_body(body)};
}

core::Completion parse_sglang(std::string_view body, bool stream) {
  return stream ? parse_sglang_stream(body) : parse_sglang_whole(body);
}

} // namespace llmrepro::probes::detail
