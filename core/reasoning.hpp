// Reasoning models: the hidden reasoning and the answer of one completion, kept apart, and the
// part of each completion an audit compares (--compare-on). docs/design.md "Reasoning models".
#pragma once

#include <string>
#include <vector>

#include "core/completion.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"

namespace llmrepro::core {

// What an audit compares of each completion: the answer alone, the reasoning alone, or both
// (the default; a completion without reasoning is its answer under every choice but `reasoning`
// and `tool_calls`), or the sequence of tool calls alone (core/tool_calls.hpp).
enum class CompareOn { answer, reasoning, both, tool_calls };
const char* to_string(CompareOn compare_on);
// "answer", "reasoning", "both" or "tool_calls", else a usage error naming --compare-on.
Result<CompareOn> parse_compare_on(const std::string& text);

// Cuts the endpoint's token stream where the answer starts, once a dialect has filled
// `reasoning_text` beside the answer `text`. SGLang, Ollama, vLLM and llama.cpp send the
// logprobs of the whole generation (reasoning, its markers such as <think>, then the answer)
// while the text fields hold the parsed parts; OpenAI-style servers send the answer's alone.
//   - No reasoning text: nothing changes (ReasoningSplit::none).
//   - The stream's bytes end with the answer (whitespace at either end of the answer aside, which
//     reasoning parsers strip), and the cut falls between two tokens: the tokens from the cut
//     are the answer's, those before it the reasoning's, kept only when they contain the
//     reasoning text (a stream that dropped the reasoning's logprobs keeps none). Whitespace
//     tokens between the two go with the reasoning. ReasoningSplit::separate.
//   - Otherwise (a token spans the cut, or the stream does not end with the answer):
//     ReasoningSplit::joined, `tokens` kept whole as the endpoint sent it.
void separate_reasoning(Completion& completion);

// Whether the completion carries reasoning (text, or a stream that could not be split).
bool has_reasoning(const Completion& completion);

// The completion as the audit compares it under `compare_on`: `text`, `tokens` and
// `has_logprobs` describe the compared part alone, and the reasoning fields are emptied
// (`reasoning_split` is kept, so readers know the text is a parsed part, not the raw stream).
// Tokens are never paired with the text of the other part:
//   answer    - the answer text, with the answer's tokens when the stream was split; a joined
//               stream leaves the answer compared by text alone;
//   reasoning - the reasoning text, with the reasoning's tokens when they came back apart;
//   both      - "<reasoning>R</reasoning>A" (just the answer where there is no reasoning
//               text), with every token when the stream is joined or when both parts have
//               their tokens, and by text alone otherwise;
//   tool_calls - the sequence's tool_calls_json as the text, without tokens (compared by text).
// A completion without reasoning comes back unchanged under `answer` and `both`.
Completion compared_part(const Completion& completion, CompareOn compare_on);

// Whether `record` is compared as a copy holding compared_part() under `compare_on` (a
// successful one with reasoning, or any successful one under `reasoning` and `tool_calls`).
bool compares_part(const RequestRecord& record, CompareOn compare_on);
// `record` with its completion replaced by compared_part().
RequestRecord compared_record(const RequestRecord& record, CompareOn compare_on);

// The records as the audit compares them under `compare_on`: the pointers of `records` where a
// completion is compared as it is, else pointers to copies holding compared_part(), which
// `storage` receives and must outlive the result. Failed records pass through unchanged.
std::vector<const RequestRecord*> compared_records(const std::vector<const RequestRecord*>& records,
                                                   CompareOn compare_on,
                                                   std::vector<RequestRecord>& storage);

// What came back of the reasoning, over an analysis's successful completions, and which part
// the analysis compared.
struct ReasoningSummary {
  CompareOn compare_on = CompareOn::both;
  int completions = 0;           // successful completions
  int with_reasoning = 0;        // that carried reasoning (has_reasoning)
  int with_reasoning_tokens = 0; // whose reasoning has tokens of its own
  int joined = 0;                // whose stream could not be cut where the answer starts

  // Counts one successful completion.
  void add(const Completion& completion);
};

// The text `both` compares: the answer alone without reasoning, else the reasoning wrapped in
// <reasoning>…</reasoning> followed by the answer.
std::string reasoning_and_answer(const std::string& reasoning, const std::string& answer);

} // namespace llmrepro::core
