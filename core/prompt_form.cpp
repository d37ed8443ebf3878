#include "core/prompt_form.hpp"

#include <algorithm>
#include <array>

namespace llmrepro::core {

bool dialect_flattens_messages(std::string_view dialect) {
  static constexpr std::array<std::string_view, 4> k_text_dialects{"openai-completions", "llamacpp",
                                                                   "sglang", "tgi"};
  return std::find(k_text_dialects.begin(), k_text_dialects.end(), dialect) !=
         k_text_dialects.end();
}

int chat_prompt_count(const Suite& suite) {
  return static_cast<int>(std::count_if(suite.prompts.begin(), suite.prompts.end(),
                                        [](const Prompt& prompt) { return !prompt.text; }));
}

std::optional<std::string> flattened_prompts_warning(const Suite& suite, std::string_view dialect,
                                                     const std::string& who) {
  const int chat = chat_prompt_count(suite);
  if (chat == 0 || !dialect_flattens_messages(dialect)) return std::nullopt;
  return who + " (" + std::string(dialect) + ") takes a text prompt: the suite's " +
         std::to_string(chat) + " chat prompt" + (chat == 1 ? " was" : "s were") +
         " sent flattened to 'role: content' lines ending in 'assistant:', not through the "
         "model's chat template, so their tokens are not those of chat traffic (audit with --api "
         "openai-chat to use the server's chat route)";
}

} // namespace llmrepro::core
