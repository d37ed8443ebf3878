// How one suite prompt is expressed to a dialect that speaks the other prompt kind: chat
// messages flattened for text-only APIs, a text prompt wrapped for chat-only APIs.
#pragma once

#include <string>
#include <vector>

#include "core/suite.hpp"

namespace llmrepro::probes {

// "<role>: <content>\n" per message, then "assistant:" so the model answers as the assistant.
std::string flatten_messages(const std::vector<core::Message>& messages);

// The prompt as one text: its `text`, or its messages flattened.
std::string prompt_as_text(const core::Prompt& prompt);

// The prompt as chat messages: its `messages`, or its text as a single user message.
std::vector<core::Message> prompt_as_messages(const core::Prompt& prompt);

} // namespace llmrepro::probes
