// How a suite's chat prompts reach an endpoint: through its chat route (the server applies the
// model's own chat template) or flattened into one text for a completion route. A flattened
// prompt is not what the users' traffic sends (other tokens, other length, other near-ties), so
// an audit that flattened says so in every output.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/suite.hpp"

namespace llmrepro::core {

// Whether the dialect named (EndpointInfo::dialect) takes a single text prompt, so that chat
// messages are flattened to "role: content" lines ending in "assistant:": openai-completions,
// llamacpp (/completion), sglang (/generate) and tgi (/generate).
bool dialect_flattens_messages(std::string_view dialect);

// The suite's prompts given as chat messages.
int chat_prompt_count(const Suite& suite);

// The warning every output carries when `who` (its dialect `dialect`) was sent the suite's chat
// prompts flattened: "the endpoint (llamacpp) takes a text prompt: the suite's 12 chat prompts
// were sent flattened to 'role: content' lines ending in 'assistant:', not through the model's
// chat template, so their tokens are not those of chat traffic (audit with --api openai-chat to
// use the server's chat route)"; empty when nothing was flattened.
std::optional<std::string> flattened_prompts_warning(const Suite& suite, std::string_view dialect,
                                                     const std::string& who);

} // namespace llmrepro::core
