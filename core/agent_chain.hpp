// Agent chains (core::Prompt::is_chain): one run of a prompt with `tools` and `tool_results` is a
// conversation that grows a step at a time. A completion that calls tools gets each call's
// scripted result back (the suite's stub registry) and the conversation is sent again, until
// the model answers without a tool call or the prompt's `max_steps` requests were sent. The run
// is then one completion: the last answer, with every step's calls in order, which
// `--compare-on tool_calls` compares. docs/design.md "Agent chains".
#pragma once

#include <string>

#include "core/completion.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// What a chain's tool returns for `call`: the scripted result for its name and canonical
// arguments, else an error result the model reads ({"error": "no scripted result for NAME with
// these arguments"}): a call the suite did not foresee is part of what the chain did.
std::string scripted_tool_result(const Prompt& prompt, const ToolCall& call);

// Whether the chain goes on after `step`, the answer to its `steps_sent`-th request: it called
// tools and fewer than the prompt's max_steps requests were sent.
bool chain_continues(const Prompt& prompt, const Completion& step, int steps_sent);

// `conversation` after `step`: the assistant turn (its text and calls, with their ids and
// signatures), then one "tool" message per call holding scripted_tool_result for it, with the
// call's id and its tool's name.
void append_chain_step(Prompt& conversation, const Prompt& prompt, const Completion& step);

// `step` joined onto the chain's completion so far (`chain`, empty before the first step): the
// last step's text, tokens, reasoning, finish reason, envelope and number anomalies; every step's
// tool calls in order; completion tokens and the usage's counts summed (a count one step lacks
// is unknown).
void join_chain_step(std::optional<Completion>& chain, Completion step);

} // namespace llmrepro::core
