// Agent chains: the stub registry's answers, when a chain goes on, the conversation it sends
// next, and the one completion a run's steps make.
#include <doctest/doctest.h>

#include "core/agent_chain.hpp"

using namespace llmrepro::core;

namespace {

Prompt chain_prompt() {
  Prompt prompt;
  prompt.id = "trip";
  prompt.messages.push_back({"user", "Plan a trip.", {}, {}});
  prompt.tools_json = R"([{"function":{"name":"search"},"type":"function"}])";
  prompt.tool_results.push_back({"search", R"({"q":"Rome"})", "Colosseum"});
  prompt.max_steps = 2;
  return prompt;
}

} // namespace

TEST_CASE("scripted_tool_result: the registry by name and canonical arguments, else an error") {
  const Prompt prompt = chain_prompt();
  CHECK(scripted_tool_result(prompt, {"search", R"({"q":"Rome"})", "call_1"}) == "Colosseum");
  CHECK(scripted_tool_result(prompt, {"search", R"({"q":"Milan"})", "call_1"}) ==
        R"({"error":"no scripted result for search with these arguments"})");
  CHECK(scripted_tool_result(prompt, {"fetch", R"({"q":"Rome"})", "call_1"}) ==
        R"({"error":"no scripted result for fetch with these arguments"})");
}

TEST_CASE("a chain: step by step, then one completion") {
  const Prompt prompt = chain_prompt();
  Completion step;
  step.text = "Searching.";
  step.tool_calls = {{"search", R"({"q":"Rome"})", "call_1"},
                     {"search", R"({"q":"Pisa"})", "call_2"}};
  step.tool_calls[0].signature = "sig_1";
  step.completion_tokens = 5;
  step.usage.prompt = 20;
  CHECK(chain_continues(prompt, step, 1));
  CHECK_FALSE(chain_continues(prompt, step, 2));         // max_steps requests sent
  CHECK_FALSE(chain_continues(prompt, Completion{}, 1)); // no call: the answer
  Prompt no_chain = prompt;
  no_chain.tool_results.clear();
  CHECK_FALSE(chain_continues(no_chain, step, 1));

  Prompt conversation = prompt;
  append_chain_step(conversation, prompt, step);
  REQUIRE(conversation.messages.size() == 4);
  CHECK(conversation.messages[1].role == "assistant");
  CHECK(conversation.messages[1].content == "Searching.");
  CHECK(conversation.messages[1].tool_calls.size() == 2);
  CHECK(conversation.messages[1].tool_calls[1].id == "call_2");
  CHECK(conversation.messages[1].tool_calls[0].signature == "sig_1"); // goes back unchanged
  CHECK(conversation.messages[2].role == "tool");
  CHECK(conversation.messages[2].tool_call_id == "call_1");
  CHECK(conversation.messages[2].tool_name == "search");
  CHECK(conversation.messages[2].content == "Colosseum");
  CHECK(conversation.messages[3].tool_call_id == "call_2");
  CHECK(conversation.messages[3].content ==
        R"({"error":"no scripted result for search with these arguments"})");

  std::optional<Completion> chain;
  join_chain_step(chain, step);
  Completion last;
  last.text = "Go to Rome.";
  last.finish_reason = "stop";
  last.completion_tokens = 4;
  last.usage.prompt = 40;
  join_chain_step(chain, last);
  REQUIRE(chain.has_value());
  CHECK(chain->text == "Go to Rome.");
  CHECK(chain->finish_reason == "stop");
  CHECK(chain->tool_calls.size() == 2);
  CHECK(chain->completion_tokens == 9);
  CHECK(chain->usage.prompt == 60);
  CHECK_FALSE(chain->usage.reasoning.has_value()); // neither step said
}
