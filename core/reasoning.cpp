#include "core/reasoning.hpp"

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace llmrepro::core {

const char* to_string(CompareOn compare_on) {
  switch (compare_on) {
  case CompareOn::answer: return "answer";
  case CompareOn::reasoning: return "reasoning";
  case CompareOn::both: return "both";
  case CompareOn::tool_calls: return "tool_calls";
  }
  return "both";
}

Result<CompareOn> parse_compare_on(const std::string& text) {
  if (text == "answer") return CompareOn::answer;
  if (text == "reasoning") return CompareOn::reasoning;
  if (text == "both") return CompareOn::both;
  if (text == "tool_calls") return CompareOn::tool_calls;
  return make_error(ErrorCode::usage, "unknown --compare-on '" + text +
                                          "' (expected answer, reasoning, both or tool_calls)");
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

bool all_space(std::string_view text) {
  for (char c : text)
    if (!is_space(c)) return false;
  return true;
}

// The index of the first answer token, where the stream's bytes end with the answer and a token
// boundary precedes it with nothing but whitespace in between; empty where no such cut exists.
std::optional<std::size_t> answer_start(const std::vector<TokenLogprob>& tokens,
                                        std::string_view answer, std::string& stream) {
  std::vector<std::size_t> starts;
  starts.reserve(tokens.size() + 1);
  for (const TokenLogprob& token : tokens) {
    starts.push_back(stream.size());
    stream += token_bytes(token.token);
  }
  starts.push_back(stream.size());

  std::string_view content = stream;
  while (!content.empty() && is_space(content.back())) content.remove_suffix(1);
  if (content.size() < answer.size() ||
      content.compare(content.size() - answer.size(), answer.size(), answer) != 0)
    return std::nullopt;
  const std::size_t cut = content.size() - answer.size();
  // The last boundary at or before the cut: the token after it holds the answer's first byte.
  std::size_t index = tokens.size();
  while (starts[index] > cut) --index;
  if (!all_space(std::string_view(stream).substr(starts[index], cut - starts[index])))
    return std::nullopt; // a token holds both reasoning (or a marker) and the answer's start
  return index;
}

// A completion with `completion`'s metadata and none of its text or tokens.
Completion metadata_of(const Completion& completion) {
  Completion part;
  part.finish_reason = completion.finish_reason;
  part.system_fingerprint = completion.system_fingerprint;
  part.model = completion.model;
  part.completion_tokens = completion.completion_tokens;
  part.usage = completion.usage;
  part.numbers = completion.numbers;
  part.reasoning_split = completion.reasoning_split;
  return part;
}

} // namespace

void separate_reasoning(Completion& completion) {
  if (completion.reasoning_text.empty() && completion.reasoning_tokens.empty()) {
    completion.reasoning_split = ReasoningSplit::none;
    return;
  }
  completion.reasoning_split = ReasoningSplit::separate;
  // The endpoint sent the reasoning's tokens apart, or sent no tokens at all: nothing to cut.
  if (!completion.reasoning_tokens.empty() || completion.tokens.empty()) return;

  std::string stream;
  const auto start = answer_start(completion.tokens, trimmed(completion.text), stream);
  if (!start) {
    completion.reasoning_split = ReasoningSplit::joined;
    return;
  }
  if (*start == 0) return; // the stream is the answer's alone
  std::string_view reasoning_bytes(stream);
  std::size_t reasoning_size = 0;
  for (std::size_t i = 0; i < *start; ++i)
    reasoning_size += token_bytes(completion.tokens[i].token).size();
  reasoning_bytes = reasoning_bytes.substr(0, reasoning_size);
  const auto first = completion.tokens.begin();
  const auto cut = first + static_cast<std::ptrdiff_t>(*start);
  if (reasoning_bytes.find(trimmed(completion.reasoning_text)) != std::string_view::npos)
    completion.reasoning_tokens.assign(std::make_move_iterator(first),
                                       std::make_move_iterator(cut));
  completion.tokens.erase(first, cut);
}

bool has_reasoning(const Completion& completion) {
  return !completion.reasoning_text.empty() || !completion.reasoning_tokens.empty() ||
         completion.reasoning_split == ReasoningSplit::joined;
}

bool compares_part(const RequestRecord& record, CompareOn compare_on) {
  return record.outcome.ok &&
         (compare_on == CompareOn::reasoning || compare_on == CompareOn::tool_calls ||
          has_reasoning(record.outcome.completion));
}

RequestRecord compared_record(const RequestRecord& record, CompareOn compare_on) {
  RequestRecord copy;
  copy.planned = record.planned;
  const RequestOutcome& outcome = record.outcome;
  copy.outcome.ok = outcome.ok;
  copy.outcome.http_status = outcome.http_status;
  copy.outcome.error = outcome.error;
  copy.outcome.attempts = outcome.attempts;
  copy.outcome.started_ms = outcome.started_ms;
  copy.outcome.finished_ms = outcome.finished_ms;
  copy.outcome.completion = compared_part(outcome.completion, compare_on);
  return copy;
}

std::vector<const RequestRecord*> compared_records(const std::vector<const RequestRecord*>& records,
                                                   CompareOn compare_on,
                                                   std::vector<RequestRecord>& storage) {
  std::vector<const RequestRecord*> compared = records;
  std::size_t changed = 0;
  for (const RequestRecord* record : records)
    if (compares_part(*record, compare_on)) ++changed;
  if (changed == 0) return compared;
  storage.clear();
  storage.reserve(changed); // no reallocation: the pointers below stay valid
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (!compares_part(*records[i], compare_on)) continue;
    compared[i] = &storage.emplace_back(compared_record(*records[i], compare_on));
  }
  return compared;
}

void ReasoningSummary::add(const Completion& completion) {
  ++completions;
  if (!has_reasoning(completion)) return;
  ++with_reasoning;
  if (!completion.reasoning_tokens.empty()) ++with_reasoning_tokens;
  if (completion.reasoning_split == ReasoningSplit::joined) ++joined;
}

std::string reasoning_and_answer(const std::string& reasoning, const std::string& answer) {
  if (reasoning.empty()) return answer;
  return "<reasoning>" + reasoning + "</reasoning>" + answer;
}

Completion compared_part(const Completion& completion, CompareOn compare_on) {
  if (compare_on == CompareOn::tool_calls) {
    Completion part = metadata_of(completion);
    part.text = tool_calls_json(completion.tool_calls);
    part.tool_calls = completion.tool_calls;
    return part;
  }
  if (compare_on != CompareOn::reasoning && !has_reasoning(completion)) return completion;
  Completion part = metadata_of(completion);
  const bool joined = completion.reasoning_split == ReasoningSplit::joined;
  switch (compare_on) {
  case CompareOn::answer:
    part.text = completion.text;
    if (!joined) {
      part.tokens = completion.tokens;
      part.has_logprobs = completion.has_logprobs;
    }
    break;
  case CompareOn::reasoning:
    part.text = completion.reasoning_text;
    if (!joined) {
      part.tokens = completion.reasoning_tokens;
      // A completion that did not reason has nothing to miss: its empty reasoning is complete.
      part.has_logprobs = completion.has_logprobs && (completion.reasoning_text.empty() ||
                                                      !completion.reasoning_tokens.empty());
    }
    break;
  case CompareOn::both:
    part.text = reasoning_and_answer(completion.reasoning_text, completion.text);
    if (joined) {
      part.tokens = completion.tokens;
      part.has_logprobs = completion.has_logprobs;
    } else if (completion.reasoning_text.empty() || !completion.reasoning_tokens.empty()) {
      part.tokens.reserve(completion.reasoning_tokens.size() + completion.tokens.size());
      part.tokens.insert(part.tokens.end(), completion.reasoning_tokens.begin(),
                         completion.reasoning_tokens.end());
      part.tokens.insert(part.tokens.end(), completion.tokens.begin(), completion.tokens.end());
      part.has_logprobs = completion.has_logprobs;
    }
    break;
  case CompareOn::tool_calls: break; // answered above
  }
  return part;
}

} // namespace llmrepro::core
