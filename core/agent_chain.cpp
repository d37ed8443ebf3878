#include "core/agent_chain.hpp"

#include <utility>

#include "core/json_value.hpp"

namespace llmrepro::core {

namespace {

std::optional<long> sum(const std::optional<long>& a, const std::optional<long>& b) {
  if (!a || !b) return std::nullopt;
  return *a + *b;
}

} // namespace

std::string scripted_tool_result(const Prompt& prompt, const ToolCall& call) {
  for (const ToolResult& result : prompt.tool_results)
    if (result.name == call.name && result.arguments == call.arguments) return result.result;
  std::string error = "{\"error\":";
  append_json_string(error, "no scripted result for " + call.name + " with these arguments");
  return error + "}";
}

bool chain_continues(const Prompt& prompt, const Completion& step, int steps_sent) {
  return prompt.is_chain() && !step.tool_calls.empty() && steps_sent < prompt.max_steps;
}

void append_chain_step(Prompt& conversation, const Prompt& prompt, const Completion& step) {
  Message assistant;
  assistant.role = "assistant";
  assistant.content = step.text;
  assistant.tool_calls = step.tool_calls;
  conversation.messages.push_back(std::move(assistant));
  for (const ToolCall& call : step.tool_calls) {
    Message tool;
    tool.role = "tool";
    tool.tool_call_id = call.id;
    tool.tool_name = call.name;
    tool.content = scripted_tool_result(prompt, call);
    conversation.messages.push_back(std::move(tool));
  }
}

void join_chain_step(std::optional<Completion>& chain, Completion step) {
  if (!chain) {
    chain = std::move(step);
    return;
  }
  std::vector<ToolCall> calls = std::move(chain->tool_calls);
  calls.insert(calls.end(), step.tool_calls.begin(), step.tool_calls.end());
  const long completion_tokens = chain->completion_tokens + step.completion_tokens;
  TokenUsage usage{sum(chain->usage.prompt, step.usage.prompt),
                   sum(chain->usage.reasoning, step.usage.reasoning),
                   sum(chain->usage.cached_prompt, step.usage.cached_prompt)};
  chain = std::move(step);
  chain->tool_calls = std::move(calls);
  chain->completion_tokens = completion_tokens;
  chain->usage = usage;
}

} // namespace llmrepro::core
