// Anthropic's Messages API, POST /v1/messages (read from Anthropic's API reference and
// anthropic-sdk-python's types; see tests/data/formats/README.md):
// - The key goes in `x-api-key` and every request names the API version in
//   `anthropic-version` (dialect_headers); there is no bearer token.
// - `max_tokens` is required. System messages go to the top-level `system` string; the others
//   are `messages` of {role: "user"|"assistant", content}. There is no `seed` parameter and
//   unknown parameters are refused, so none is sent; nor are logprobs, which the API has not.
// - The answer is `content[]`: blocks of type `text` carry the answer, `thinking` blocks
//   (extended thinking) the reasoning in `thinking`; `redacted_thinking`, `tool_use` and other
//   blocks carry no answer text and are skipped.
// - `stop_reason` end_turn and stop_sequence map to "stop", max_tokens to "length"; the others
//   (refusal, tool_use, pause_turn, model_context_window_exceeded) are kept as given.
// - Usage counts `output_tokens`; the prompt is `input_tokens` plus the cache's
//   `cache_creation_input_tokens` and `cache_read_input_tokens` (the API's own definition of
//   the total input). `model` names the model; there is no system fingerprint.
// - An error is {"type": "error", "error": {"type": ..., "message": ...}}, read by
//   describe_error_body's envelope rule.
// - Streams are typed SSE events (`event: <type>` beside a `data:` whose JSON repeats the type
//   in `type`): message_start (the message with empty content and the input usage),
//   content_block_start / content_block_delta (text_delta with `text`, thinking_delta with
//   `thinking`; signature, citation and tool-input deltas are skipped) / content_block_stop,
//   message_delta (stop_reason and the cumulative output_tokens), message_stop, ping, and
//   error mid-stream. There is no `data: [DONE]`: a stream without message_stop was cut short.
#include "probes/detail/dialect_adapters.hpp"

#include <map>

namespace llmrepro::probes::detail {

namespace {

std::string finish_reason_of(const std::string& stop_reason) {
  if (stop_reason == "end_turn" || stop_reason == "stop_sequence") return "stop";
  if (stop_reason == "max_tokens") return "length";
  return stop_reason;
}

// The text of one content block (whole, or a stream's content_block_start) into `completion`.
void read_block(const JsonView& block, core::Completion& completion) {
  const std::string type = block.optional_string("type");
  if (type == "text") completion.text += block.optional_string("text");
  if (type == "thinking") completion.reasoning_text += block.optional_string("thinking");
  // A whole message's tool_use block: {id, name, input: the arguments as an object}.
  if (type == "tool_use")
    completion.tool_calls.push_back(tool_call_of(
        block.at("name").string(), block.at("input").json_text(), block.optional_string("id")));
}

// A streamed tool_use block: content_block_start names it (its input {}), input_json_delta
// events carry its arguments' text in `partial_json` pieces.
struct StreamedTool {
  std::string id;
  std::string name;
  std::string start_input;
  std::string partial_json;
};

// input_tokens plus the cache's two parts, where `usage` says; output_tokens where it says.
void read_usage(const JsonView& usage, core::Completion& completion) {
  if (auto input = optional_count(usage, {"input_tokens"})) {
    long total = *input;
    for (std::string_view cache : {"cache_creation_input_tokens", "cache_read_input_tokens"})
      total += optional_count(usage, {cache}).value_or(0);
    completion.usage.prompt = total;
  }
  if (auto output = optional_count(usage, {"output_tokens"}))
    completion.completion_tokens = *output;
}

core::Completion parse_anthropic_whole(std::string_view body) {
  JsonDocument document = parse_document(body);
  JsonView root(document);
  fail_on_error_envelope(root, body);
  core::Completion completion;
  JsonView content = root.at("content");
  std::size_t count = content.size();
  for (std::size_t i = 0; i < count; ++i) read_block(content.at(i), completion);
  auto stop_reason = root.find("stop_reason");
  if (stop_reason && !stop_reason->is_null())
    completion.finish_reason = finish_reason_of(stop_reason->string());
  completion.model = root.optional_string("model");
  if (auto usage = root.find("usage")) read_usage(*usage, completion);
  return completion;
}

// Reads one stream event into `completion`; returns true for message_stop.
bool read_event(const JsonView& event, std::string_view data, core::Completion& completion,
                std::map<long, StreamedTool>& tools) {
  const std::string type = event.at("type").string();
  if (type == "error") fail_on_error_envelope(event, data);
  if (type == "message_start") {
    JsonView message = event.at("message");
    completion.model = message.optional_string("model");
    if (auto usage = message.find("usage")) read_usage(*usage, completion);
    return false;
  }
  if (type == "content_block_start") {
    JsonView block = event.at("content_block");
    if (block.optional_string("type") == "tool_use") {
      StreamedTool& tool = tools[event.at("index").integer()];
      tool.id = block.optional_string("id");
      tool.name = block.at("name").string();
      if (auto input = block.find("input")) tool.start_input = input->json_text();
      return false;
    }
    read_block(block, completion);
    return false;
  }
  if (type == "content_block_delta") {
    JsonView delta = event.at("delta");
    const std::string kind = delta.optional_string("type");
    if (kind == "input_json_delta") {
      const auto tool = tools.find(event.at("index").integer());
      if (tool == tools.end()) fail(event.describe() + ": input_json_delta for no tool_use block");
      tool->second.partial_json += delta.at("partial_json").string();
    }
    if (kind == "text_delta") completion.text += delta.at("text").string();
    if (kind == "thinking_delta") completion.reasoning_text += delta.at("thinking").string();
    return false;
  }
  if (type == "message_delta") {
    if (auto delta = event.find("delta")) {
      auto stop_reason = delta->find("stop_reason");
      if (stop_reason && !stop_reason->is_null())
        completion.finish_reason = finish_reason_of(stop_reason->string());
    }
    // The delta's usage is cumulative: the last one that says wins.
    if (auto usage = event.find("usage")) read_usage(*usage, completion);
    return false;
  }
  return type == "message_stop"; // ping, content_block_stop and unknown events are skipped
}

core::Completion parse_anthropic_stream(std::string_view body) {
  core::Completion completion;
  std::map<long, StreamedTool> tools; // by content block index: the order they come in
  bool finished = false;
  std::vector<std::string> events = sse_events(body);
  for (std::size_t index = 0; index < events.size() && !finished; ++index) {
    const std::string& data = events[index];
    with_event_prefix(index, [&] {
      JsonDocument document = parse_document(data);
      finished = read_event(JsonView(document), data, completion, tools);
    });
  }
  if (!finished) fail("stream ended without message_stop (truncated)");
  for (auto& [index, tool] : tools)
    completion.tool_calls.push_back(tool_call_of(
        std::move(tool.name), tool.partial_json.empty() ? tool.start_input : tool.partial_json,
        std::move(tool.id)));
  return completion;
}

} // namespace

namespace {

// One message of a chat prompt: an assistant turn of an agent chain carries its tool_use blocks
// (after its text, where it had any), a tool's result goes back as a user turn holding a
// tool_result block; the rest as {role, content}.
Json anthropic_message(const core::Message& message) {
  if (message.role == "tool")
    return Json{{"role", "user"},
                {"content", Json::array({Json{{"type", "tool_result"},
                                              {"tool_use_id", message.tool_call_id},
                                              {"content", message.content}}})}};
  const char* role = message.role == "assistant" ? "assistant" : "user";
  if (message.tool_calls.empty()) return Json{{"role", role}, {"content", message.content}};
  Json blocks = Json::array();
  if (!message.content.empty()) blocks.push_back(Json{{"type", "text"}, {"text", message.content}});
  for (const core::ToolCall& call : message.tool_calls)
    blocks.push_back(Json{{"type", "tool_use"},
                          {"id", call.id},
                          {"name", call.name},
                          {"input", call_arguments(call)}});
  return Json{{"role", role}, {"content", std::move(blocks)}};
}

} // namespace

DialectRequest build_anthropic_request(const core::Prompt& prompt, const GenerationParams& params) {
  Json body;
  if (!params.model.empty()) body["model"] = params.model;
  Json messages = Json::array();
  if (prompt.text) {
    messages.push_back(Json{{"role", "user"}, {"content", *prompt.text}});
  } else {
    std::string system;
    for (const auto& message : prompt.messages) {
      if (message.role == "system") {
        system += (system.empty() ? "" : "\n\n") + message.content;
        continue;
      }
      messages.push_back(anthropic_message(message));
    }
    if (!system.empty()) body["system"] = std::move(system);
  }
  body["messages"] = std::move(messages);
  // OpenAI's function tools in Anthropic's shape: {name, description, input_schema}.
  if (const std::vector<Json> functions = prompt_functions(prompt); !functions.empty()) {
    Json mapped = Json::array();
    for (const Json& function : functions) {
      Json item{{"name", function.at("name")},
                {"input_schema", function.value("parameters", Json{{"type", "object"}})}};
      if (function.contains("description")) item["description"] = function.at("description");
      mapped.push_back(std::move(item));
    }
    body["tools"] = std::move(mapped);
  }
  body["max_tokens"] = effective_max_tokens(prompt, params);
  // Sampled requests send temperature 1 alone: newer Claude models refuse temperature and top_p
  // together, and top_p 1 is the default anyway.
  put_temperature(body, params, nullptr);
  if (params.stream) body["stream"] = true;
  return {"/v1/messages", dump_body(body)};
}

core::Completion parse_anthropic(std::string_view body, bool stream) {
  // No logprobs in this API: has_logprobs stays false and the audit compares text alone.
  return stream ? parse_anthropic_stream(body) : parse_anthropic_whole(body);
}

} // namespace llmrepro::probes::detail
