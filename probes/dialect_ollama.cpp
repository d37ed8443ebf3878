// Ollama's native POST /api/chat (chat prompts) and /api/generate (text prompts), with
// logprobs (Ollama >= 0.12.11): a top-level logprobs[] of {token, logprob, bytes,
// top_logprobs[]} beside message.content (chat) or response (generate). Options go in
// "options"; "stream" defaults to true there, so it is always sent. Streams are NDJSON, one
// object per line, each with the logprobs of its own tokens; the last has "done": true with
// done_reason, eval_count and prompt_eval_count (the prompt's tokens). An error comes as {"error":
// "..."}, also mid-stream. A thinking model's reasoning comes as message.thinking (chat) or
// thinking (generate), chunk by chunk when streamed; `logprobs` cover the raw tokens of both
// (server/routes.go: each runner chunk's logprobs ride the chunk that carries its thinking or
// content, and a whole answer concatenates them all), kept in arrival order for
// core::separate_reasoning to cut.
// Tools (docs.ollama.com/capabilities/tool-calling; the API reference, "Chat request (with
// tools)"): `tools` in OpenAI's function shape; the answer's `message.tool_calls: [{function:
// {name, arguments: an object, index?}}]`, whole in the chunk that carries them when streamed. The
// calls carry no id, so core::ToolCall::id stays empty (ids are never compared). An agent chain's
// earlier steps go back as an assistant message with `tool_calls` and one `{role: "tool",
// content, tool_name}` message per result. /api/generate takes no tools: a text prompt with tools
// goes to /api/chat as one user message.
#include "probes/detail/dialect_adapters.hpp"
#include "probes/detail/prompt_text.hpp"

namespace llmrepro::probes::detail {

namespace {

// Suites give OpenAI's response_format; Ollama's "format" takes "json" or a JSON schema.
Json ollama_format(const core::Prompt& prompt) {
  Json format = response_format(prompt);
  if (format.is_object()) {
    auto type = format.find("type");
    if (type != format.end() && *type == "json_object") return "json";
    auto schema = format.find("json_schema");
    if (type != format.end() && *type == "json_schema" && schema != format.end() &&
        schema->is_object() && schema->contains("schema"))
      return schema->at("schema");
  }
  return format;
}

// The text of one object: message.content for /api/chat, response for /api/generate.
std::string read_text(const JsonView& root) {
  if (root.contains("message")) return root.at("message").at("content").string();
  if (root.contains("response")) return root.at("response").string();
  fail("missing field message.content (chat) or response (generate)");
}

// The reasoning of one object: message.thinking for /api/chat, thinking for /api/generate
// ("" when absent or null).
std::string read_thinking(const JsonView& root) {
  if (auto message = root.find("message")) return message->optional_string("thinking");
  return root.optional_string("thinking");
}

// The calls of /api/chat's `message.tool_calls` (absent or null: none).
void read_ollama_tool_calls(const JsonView& root, core::Completion& completion) {
  auto message = root.find("message");
  if (!message) return;
  auto calls = message->find("tool_calls");
  if (!calls || calls->is_null()) return;
  for (std::size_t i = 0; i < calls->size(); ++i) {
    JsonView function = calls->at(i).at("function");
    auto arguments = function.find("arguments");
    completion.tool_calls.push_back(tool_call_of(
        function.at("name").string(), arguments ? arguments->json_text() : std::string(), ""));
  }
}

// An /api/chat message; an agent chain's assistant turn with its calls, a tool's result
// naming its tool.
Json ollama_message(const core::Message& message) {
  Json item{{"role", message.role}, {"content", message.content}};
  if (message.role == "tool") item["tool_name"] = message.tool_name;
  if (message.tool_calls.empty()) return item;
  Json calls = Json::array();
  for (std::size_t i = 0; i < message.tool_calls.size(); ++i) {
    const core::ToolCall& call = message.tool_calls[i];
    calls.push_back(Json{
        {"type", "function"},
        {"function", {{"index", i}, {"name", call.name}, {"arguments", call_arguments(call)}}}});
  }
  item["tool_calls"] = std::move(calls);
  return item;
}

// Reads one object into `completion`; returns its "done" flag.
bool read_object(const JsonView& root, std::string_view text, core::Completion& completion) {
  fail_on_error_envelope(root, text);
  completion.text += read_text(root);
  completion.reasoning_text += read_thinking(root);
  read_ollama_tool_calls(root, completion);
  if (auto logprobs = root.find("logprobs")) {
    completion.has_logprobs = true;
    std::size_t count = logprobs->size();
    for (std::size_t i = 0; i < count; ++i)
      completion.tokens.push_back(read_openai_token(logprobs->at(i), completion.numbers));
  }
  std::string model = root.optional_string("model");
  if (!model.empty()) completion.model = std::move(model);
  bool done = root.at("done").boolean();
  if (done) {
    completion.finish_reason = root.optional_string("done_reason");
    if (auto count = root.find("eval_count"))
      completion.completion_tokens = count->integer();
    else
      completion.completion_tokens = static_cast<long>(completion.tokens.size());
    completion.usage.prompt = optional_count(root, {"prompt_eval_count"});
  }
  return done;
}

core::Completion parse_ollama_whole(std::string_view body) {
  JsonDocument document = parse_document(body);
  JsonView root(document);
  core::Completion completion;
  if (!read_object(root, body, completion)) fail("field done is false in a non-streamed answer");
  return completion;
}

core::Completion parse_ollama_stream(std::string_view body) {
  core::Completion completion;
  bool done = false;
  std::size_t at = 0;
  std::size_t line_number = 0;
  while (at < body.size() && !done) {
    std::size_t end = body.find('\n', at);
    std::string_view line = body.substr(at, end == std::string_view::npos ? end : end - at);
    at = end == std::string_view::npos ? body.size() : end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    with_prefix("stream line " + std::to_string(line_number) + ": ", [&] {
      JsonDocument document = parse_document(line);
      JsonView object(document);
      done = read_object(object, line, completion);
    });
  }
  if (!done) fail("stream ended without a final object (\"done\": true): truncated");
  return completion;
}

} // namespace

DialectRequest build_ollama_request(const core::Prompt& prompt, const GenerationParams& params) {
  Json body;
  if (!params.model.empty()) body["model"] = params.model;
  std::string path;
  Json tools = prompt_tools(prompt);
  if (prompt.is_chat() || !tools.is_null()) {
    Json messages = Json::array();
    for (const auto& message : prompt_as_messages(prompt))
      messages.push_back(ollama_message(message));
    body["messages"] = std::move(messages);
    if (!tools.is_null()) body["tools"] = std::move(tools);
    path = "/api/chat";
  } else {
    body["prompt"] = *prompt.text;
    path = "/api/generate";
  }
  Json options{{"num_predict", effective_max_tokens(prompt, params)}};
  put_temperature(options, params);
  put_seed(options, params);
  body["options"] = std::move(options);
  body["logprobs"] = true;
  body["top_logprobs"] = params.top_logprobs;
  body["stream"] = params.stream;
  if (!prompt.response_format_json.empty()) body["format"] = ollama_format(prompt);
  return {path, dump_body(body)};
}

core::Completion parse_ollama(std::string_view body, bool stream) {
  return stream ? parse_ollama_stream(body) : parse_ollama_whole(body);
}

} // namespace llmrepro::probes::detail
