#include <doctest/doctest.h>

#include "core/prompt_form.hpp"

using namespace llmrepro::core;

namespace {

Suite suite_of(int text_prompts, int chat_prompts) {
  Suite suite;
  for (int i = 0; i < text_prompts; ++i) {
    Prompt prompt;
    prompt.id = "t" + std::to_string(i);
    prompt.text = "Say hi";
    suite.prompts.push_back(prompt);
  }
  for (int i = 0; i < chat_prompts; ++i) {
    Prompt prompt;
    prompt.id = "c" + std::to_string(i);
    prompt.messages = {{"system", "Be brief."}, {"user", "Say hi"}};
    suite.prompts.push_back(prompt);
  }
  return suite;
}

} // namespace

TEST_CASE("dialect_flattens_messages: the four text-prompt dialects, no chat dialect") {
  for (const char* text : {"openai-completions", "llamacpp", "sglang", "tgi"})
    CHECK(dialect_flattens_messages(text));
  for (const char* chat :
       {"openai-chat", "openai-responses", "ollama", "gemini", "anthropic", "", "llama"})
    CHECK_FALSE(dialect_flattens_messages(chat));
}

TEST_CASE("flattened_prompts_warning counts the chat prompts a text dialect was sent") {
  CHECK(chat_prompt_count(suite_of(2, 3)) == 3);
  CHECK(flattened_prompts_warning(suite_of(2, 3), "llamacpp", "the endpoint") ==
        "the endpoint (llamacpp) takes a text prompt: the suite's 3 chat prompts were sent "
        "flattened to 'role: content' lines ending in 'assistant:', not through the model's chat "
        "template, so their tokens are not those of chat traffic (audit with --api openai-chat "
        "to use the server's chat route)");
  CHECK(flattened_prompts_warning(suite_of(0, 1), "tgi", "endpoint 1")
            ->find("endpoint 1 (tgi) takes a text prompt: the suite's 1 chat prompt was sent") ==
        0);
  // Text prompts need no flattening; a chat dialect flattens nothing.
  CHECK_FALSE(flattened_prompts_warning(suite_of(4, 0), "llamacpp", "the endpoint"));
  CHECK_FALSE(flattened_prompts_warning(suite_of(0, 4), "openai-chat", "the endpoint"));
}
