// OpenAI's Responses API, POST /v1/responses, as served by OpenAI and vLLM (read from the
// openai-openapi spec and openai-python's types/responses, and from vLLM's
// entrypoints/openai/responses; see tests/data/formats/README.md):
// - Logprobs come only when the request both sets `top_logprobs` and lists
//   "message.output_text.logprobs" in `include`; they sit in each `output_text` part of each
//   `message` item of `output[]`, as {token, logprob, bytes, top_logprobs: [{token, logprob,
//   bytes}]}: the chat entry shape, read with read_openai_token().
// - `output[]` may hold items that are no answer text: a `function_call` item {call_id, name,
//   arguments: JSON text} is a tool call (openai-python types/responses
//   response_function_tool_call.py), other tools' items are skipped. A `refusal` part carries no
//   answer text either. A `reasoning` item's `content[]` parts of type
//   `reasoning_text` (vLLM's Responses route) are the reasoning, read into reasoning_text; its
//   `summary[]` (OpenAI's) is a summary, not the reasoning, and is ignored. Logprobs come only
//   with output_text, so they stay the answer's.
// - There is no finish_reason: `status` "completed" maps to "stop", "incomplete" with
//   incomplete_details.reason "max_output_tokens" to "length" (other reasons are kept as
//   given), and "failed" is an endpoint error with `error.message`.
// - Usage counts `output_tokens`; there is no system_fingerprint.
// - Streams are typed SSE events (`event: <type>` beside a `data:` whose JSON repeats the type
//   in `type`); text and tokens come from `response.output_text.delta` events, whose logprobs
//   carry no `bytes`, and the reasoning from `response.reasoning_text.delta` events. The stream
//   ends with `response.completed` (OpenAI sends `response.incomplete` when the token limit cut it;
//   vLLM sends `response.completed` with status "incomplete"); `response.failed` and `error` events
//   are endpoint errors. There is no `data: [DONE]`.
//   A call streams as `response.output_item.added` (its function_call item, arguments ""),
//   `response.function_call_arguments.delta` pieces and `.done` (the whole text), then
//   `response.output_item.done` (the item whole), all keyed by `output_index`.
// - Tools go flat, `{type: "function", name, description, parameters}` (function_tool_param.py);
//   an agent chain's earlier steps go back as input items: the model's text as an assistant
//   message, each call as `{type: "function_call", call_id, name, arguments}` and each result as
//   `{type: "function_call_output", call_id, output}` (response_input_item_param.py).
// - OpenAI's spec has no `seed` on this route (unknown parameters are rejected), so none is sent.
#include <map>

#include "probes/detail/dialect_adapters.hpp"

namespace llmrepro::probes::detail {

namespace {

// Suites give chat's response_format; Responses take it as `text.format`, with a JSON schema's
// {name, schema, strict} beside `type` rather than under `json_schema`.
Json text_format(const core::Prompt& prompt) {
  Json format = response_format(prompt);
  if (!format.is_object()) return format;
  auto schema = format.find("json_schema");
  if (schema == format.end() || !schema->is_object()) return format;
  Json flat = *schema;
  flat["type"] = "json_schema";
  return flat;
}

// A streamed function call, by its output_index.
struct StreamedFunctionCall {
  std::string call_id;
  std::string name;
  std::string arguments;
};

// What a response or stream has read so far beyond the Completion itself.
struct ReadState {
  bool saw_logprobs = false; // some output_text part or delta carried a logprobs array
  std::map<long, StreamedFunctionCall> calls;
};

// A `function_call` item: {call_id, name, arguments: JSON text}.
core::ToolCall read_function_call_item(const JsonView& item) {
  return tool_call_of(item.at("name").string(), item.optional_string("arguments"),
                      item.optional_string("call_id"));
}

// Appends the text of every `reasoning_text` part of a `reasoning` item to reasoning_text.
void read_reasoning_item(const JsonView& item, core::Completion& completion) {
  auto content = item.find("content");
  if (!content) return;
  std::size_t parts = content->size();
  for (std::size_t j = 0; j < parts; ++j) {
    JsonView part = content->at(j);
    if (part.optional_string("type") == "reasoning_text")
      completion.reasoning_text += part.optional_string("text");
  }
}

// Appends the text and tokens of every `output_text` part of every `message` item, and the
// reasoning of every `reasoning` item.
void read_output(const JsonView& output, core::Completion& completion, ReadState& state) {
  std::size_t items = output.size();
  for (std::size_t i = 0; i < items; ++i) {
    JsonView item = output.at(i);
    const std::string type = item.optional_string("type");
    if (type == "reasoning") read_reasoning_item(item, completion);
    if (type == "function_call") completion.tool_calls.push_back(read_function_call_item(item));
    if (type != "message") continue;
    auto content = item.find("content");
    if (!content) continue;
    std::size_t parts = content->size();
    for (std::size_t j = 0; j < parts; ++j) {
      JsonView part = content->at(j);
      if (part.optional_string("type") != "output_text") continue;
      completion.text += part.optional_string("text");
      auto logprobs = part.find("logprobs");
      if (!logprobs) continue;
      state.saw_logprobs = true;
      std::size_t count = logprobs->size();
      for (std::size_t t = 0; t < count; ++t)
        completion.tokens.push_back(read_openai_token(logprobs->at(t), completion.numbers));
    }
  }
}

// The status, model and usage of a whole response (or of a stream's terminal event).
void read_status(const JsonView& response, core::Completion& completion) {
  JsonView status_field = response.at("status");
  std::string status = status_field.string();
  if (status == "failed") {
    std::string message;
    if (auto error = response.find("error")) message = error->optional_string("message");
    throw EndpointErrorEvent(message.empty() ? std::string("response failed") : message);
  }
  if (status == "completed") {
    completion.finish_reason = "stop";
  } else if (status == "incomplete") {
    std::string reason;
    if (auto details = response.find("incomplete_details"))
      reason = details->optional_string("reason");
    completion.finish_reason = reason == "max_output_tokens" ? "length"
                               : reason.empty()              ? "incomplete"
                                                             : reason;
  } else {
    fail(status_field.describe() + " is '" + status +
         "' (expected completed, incomplete or failed)");
  }
  std::string model = response.optional_string("model");
  if (!model.empty()) completion.model = std::move(model);
  if (auto usage = response.find("usage")) {
    completion.completion_tokens = usage->at("output_tokens").integer();
    completion.usage.prompt = optional_count(*usage, {"input_tokens"});
    completion.usage.reasoning =
        optional_count(*usage, {"output_tokens_details", "reasoning_tokens"});
    completion.usage.cached_prompt =
        optional_count(*usage, {"input_tokens_details", "cached_tokens"});
  } else {
    completion.completion_tokens = static_cast<long>(completion.tokens.size());
  }
}

// An answer whose text came without a single token did not honour the logprobs request (a
// server that ignores `include` sends `logprobs: []`); an empty answer with an empty list did.
bool has_logprobs(const core::Completion& completion, const ReadState& state) {
  return state.saw_logprobs && (!completion.tokens.empty() || completion.text.empty());
}

core::Completion parse_responses_whole(std::string_view body) {
  JsonDocument document = parse_document(body);
  JsonView root(document);
  fail_on_error_envelope(root, body);
  core::Completion completion;
  ReadState state;
  read_output(root.at("output"), completion, state);
  read_status(root, completion);
  completion.has_logprobs = has_logprobs(completion, state);
  return completion;
}

// A function call's stream event into `calls`; false for an event of no function call. The
// item events and `.done` give the whole call, the deltas its arguments' text piece by piece.
bool read_call_event(const JsonView& event, const std::string& type,
                     std::map<long, StreamedFunctionCall>& calls) {
  const bool item_event =
      type == "response.output_item.added" || type == "response.output_item.done";
  if (item_event) {
    JsonView item = event.at("item");
    if (item.optional_string("type") != "function_call") return false;
    StreamedFunctionCall& streamed = calls[event.at("output_index").integer()];
    streamed.call_id = item.optional_string("call_id");
    streamed.name = item.at("name").string();
    // The added item's arguments are "" (still to come); the done item's are whole.
    if (type == "response.output_item.done" || streamed.arguments.empty())
      streamed.arguments = item.optional_string("arguments");
    return true;
  }
  const bool delta = type == "response.function_call_arguments.delta";
  if (!delta && type != "response.function_call_arguments.done") return false;
  const auto call = calls.find(event.at("output_index").integer());
  if (call == calls.end()) fail(event.describe() + ": " + type + " for no function_call item");
  if (delta)
    call->second.arguments += event.at("delta").string();
  else
    call->second.arguments = event.at("arguments").string();
  return true;
}

// Reads one stream event into `completion`; returns true for the terminal one.
bool read_event(const JsonView& event, std::string_view data, core::Completion& completion,
                ReadState& state) {
  fail_on_error_envelope(event, data);
  std::string type = event.at("type").string();
  if (type == "error") {
    std::string message = event.optional_string("message");
    throw EndpointErrorEvent(message.empty() ? std::string("error event") : message);
  }
  if (type == "response.output_text.delta") {
    completion.text += event.at("delta").string();
    if (auto logprobs = event.find("logprobs")) {
      state.saw_logprobs = true;
      std::size_t count = logprobs->size();
      for (std::size_t t = 0; t < count; ++t)
        completion.tokens.push_back(read_openai_token(logprobs->at(t), completion.numbers));
    }
    return false;
  }
  if (type == "response.reasoning_text.delta") {
    completion.reasoning_text += event.at("delta").string();
    return false;
  }
  if (read_call_event(event, type, state.calls)) return false;
  if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
    read_status(event.at("response"), completion);
    return true;
  }
  return false; // created, in_progress, item and part events, text done, summary deltas
}

core::Completion parse_responses_stream(std::string_view body) {
  core::Completion completion;
  ReadState state;
  bool finished = false;
  std::vector<std::string> events = sse_events(body);
  for (std::size_t index = 0; index < events.size() && !finished; ++index) {
    const std::string& data = events[index];
    with_event_prefix(index, [&] {
      JsonDocument document = parse_document(data);
      finished = read_event(JsonView(document), data, completion, state);
    });
  }
  if (!finished) fail("stream ended without response.completed (truncated)");
  for (auto& [index, call] : state.calls)
    completion.tool_calls.push_back(
        tool_call_of(std::move(call.name), call.arguments, std::move(call.call_id)));
  completion.has_logprobs = has_logprobs(completion, state);
  return completion;
}

// The chat messages as input items: an agent chain's assistant turn as its text (where it wrote
// some) and a function_call item per call, a tool's result as a function_call_output item.
Json input_items(const core::Prompt& prompt) {
  Json input = Json::array();
  for (const auto& message : prompt.messages) {
    if (message.role == "tool") {
      input.push_back(Json{{"type", "function_call_output"},
                           {"call_id", message.tool_call_id},
                           {"output", message.content}});
      continue;
    }
    if (!message.content.empty() || message.tool_calls.empty())
      input.push_back(Json{{"role", message.role}, {"content", message.content}});
    for (const core::ToolCall& call : message.tool_calls)
      input.push_back(Json{{"type", "function_call"},
                           {"call_id", call.id},
                           {"name", call.name},
                           {"arguments", call.arguments}});
  }
  return input;
}

} // namespace

DialectRequest build_openai_responses_request(const core::Prompt& prompt,
                                              const GenerationParams& params) {
  Json body;
  if (!params.model.empty()) body["model"] = params.model;
  if (prompt.text) {
    body["input"] = *prompt.text;
  } else {
    body["input"] = input_items(prompt);
  }
  if (const std::vector<Json> functions = prompt_functions(prompt); !functions.empty()) {
    Json tools = Json::array();
    for (const Json& function : functions) {
      Json tool{{"type", "function"}};
      for (const auto& [key, value] : function.items()) tool[key] = value;
      tools.push_back(std::move(tool));
    }
    body["tools"] = std::move(tools);
  }
  put_temperature(body, params);
  body["max_output_tokens"] = effective_max_tokens(prompt, params);
  if (params.logprobs) {
    body["top_logprobs"] = params.top_logprobs;
    body["include"] = Json::array({"message.output_text.logprobs"});
  }
  body["stream"] = params.stream;
  // OpenAI keeps every response unless told not to; an audit's thousands are of no use there.
  body["store"] = false;
  if (!prompt.response_format_json.empty()) body["text"] = Json{{"format", text_format(prompt)}};
  return {"/v1/responses", dump_body(body)};
}

core::Completion parse_openai_responses(std::string_view body, bool stream) {
  return stream ? parse_responses_stream(body) : parse_responses_whole(body);
}

} // namespace llmrepro::probes::detail
