#include "probes/detail/prompt_text.hpp"

namespace llmrepro::probes {

std::string flatten_messages(const std::vector<core::Message>& messages) {
  std::string text;
  for (const auto& message : messages) {
    text += message.role;
    text += ": ";
    text += message.content;
    text += '\n';
  }
  text += "assistant:";
  return text;
}

std::string prompt_as_text(const core::Prompt& prompt) {
  return prompt.text ? *prompt.text : flatten_messages(prompt.messages);
}

std::vector<core::Message> prompt_as_messages(const core::Prompt& prompt) {
  if (prompt.text) return {core::Message{"user", *prompt.text}};
  return prompt.messages;
}

} // namespace llmrepro::probes
