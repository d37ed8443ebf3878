// OpenAI-compatible /v1/chat/completions and /v1/completions, as served by OpenAI, vLLM,
// SGLang, llama.cpp, Ollama and TGI, with their deviations:
// - vLLM spells -inf as -9999.0 and lists the sampled token first in top_logprobs (we sort);
//   with return_tokens_as_token_ids the tokens read "token_id:N" and are kept as given.
// - Legacy completions carry parallel tokens / token_logprobs / top_logprobs, the last a list
//   of {token: logprob} maps (insertion order kept; duplicate keys have already collapsed).
// - llama.cpp answers /v1/completions in the chat `logprobs.content[]` shape.
// - Token `bytes` that are not the UTF-8 of the token string (a byte fragment sent as U+FFFD)
//   make the token OpenAI's "bytes:\xe2\x80" spelling (read_token_text()).
// - Streams: the first chunk has delta.role and logprobs null (a chunk with text and logprobs
//   null keeps its text: the tokens then lack it), a chunk may carry several tokens,
//   system_fingerprint may come on the last chunk only, usage comes in a final chunk with
//   choices [], an error arrives as `data: {"error": ...}`, and `data: [DONE]` ends it.
// - Log probabilities may be NaN, Infinity, -Infinity, 1e400 or null (read_logprob()).
// - Together (together-python src/together/types/chat_completions.py): whole chat answers carry
//   the legacy parallel arrays; a stream chunk's `choices[].logprobs` is the number of its one
//   token (the chunk's delta.content), with the candidates in a choice-level `top_logprobs`
//   map. Recognised by that shape, whatever the host.
// - OpenAI's reasoning models answer without `logprobs` (has_logprobs false, not a failure).
// - A reasoning model's parsed reasoning sits beside the answer in `message.reasoning_content`
//   (SGLang, DeepSeek's API, llama.cpp's reasoning_format) or `message.reasoning` (vLLM's
//   current name, Ollama's OpenAI route, OpenRouter); null or absent is no reasoning. Streams
//   carry it as `delta.reasoning_content` / `delta.reasoning`. SGLang, vLLM and Ollama put the
//   reasoning's tokens (markers included) in `logprobs.content` before the answer's: they are
//   kept in arrival order and cut apart by core::separate_reasoning in parse_response().
#include <algorithm>
#include <cctype>

#include "probes/detail/dialect_adapters.hpp"
#include "probes/detail/openai_token_reader.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/detail/prompt_text.hpp"

namespace llmrepro::probes::detail {

namespace {

void add_common_fields(Json& body, const core::Prompt& prompt, const GenerationParams& params,
                       const char* max_tokens_key = "max_tokens") {
  if (!params.model.empty()) body["model"] = params.model;
  put_temperature(body, params);
  body[max_tokens_key] = effective_max_tokens(prompt, params);
  put_seed(body, params);
  body["stream"] = params.stream;
  // Without include_usage a stream never says how many tokens it produced.
  if (params.stream) body["stream_options"] = Json{{"include_usage", true}};
  if (!prompt.response_format_json.empty()) body["response_format"] = response_format(prompt);
}

// The reader of the token list, for documents parsed on this thread's hot path.
JsonValueReader* token_reader(OpenAiTokenReader& reader) {
  reader.reset();
  return openai_token_reader_on_thread() ? &reader : nullptr;
}

// Appends `logprobs.content[]` (chat shape) or the legacy parallel arrays to `completion`.
// Returns false when `logprobs` carries neither (content null: a refusal, say). A content list
// `reader` took off the tape is its.
bool append_logprobs(const JsonView& logprobs, core::Completion& completion,
                     OpenAiTokenReader& reader) {
  if (logprobs.contains("content")) {
    auto content = logprobs.find("content");
    if (!content) return false;
    if (content->taken()) {
      reader.append_to(completion);
      return true;
    }
    std::size_t count = content->size();
    // No reserve(size() + count): called once a stream chunk, an exact reserve reallocates the
    // whole token list every chunk (quadratic in the tokens); push_back's growth is geometric.
    for (std::size_t i = 0; i < count; ++i)
      completion.tokens.push_back(read_openai_token(content->at(i), completion.numbers));
    return true;
  }
  JsonView tokens = logprobs.at("tokens");
  JsonView token_logprobs = logprobs.at("token_logprobs");
  std::size_t count = tokens.size();
  if (token_logprobs.size() != count)
    fail(token_logprobs.describe() + " has " + std::to_string(token_logprobs.size()) +
         " entries but " + tokens.path() + " has " + std::to_string(count));
  auto top_logprobs = logprobs.find("top_logprobs");
  if (top_logprobs && top_logprobs->size() != count)
    fail(top_logprobs->describe() + " has " + std::to_string(top_logprobs->size()) +
         " entries but " + tokens.path() + " has " + std::to_string(count));
  for (std::size_t i = 0; i < count; ++i) {
    core::TokenLogprob token;
    token.token = tokens.at(i).string();
    token.logprob = read_logprob(token_logprobs.at(i), completion.numbers);
    if (top_logprobs) {
      JsonView candidates = top_logprobs->at(i);
      if (!candidates.is_null()) {
        if (!candidates.is_object()) fail(candidates.describe() + " must be an object");
        std::size_t members = candidates.member_count();
        for (std::size_t m = 0; m < members; ++m)
          token.top.push_back({std::string(candidates.member_key(m)),
                               read_logprob(candidates.member(m), completion.numbers)});
      }
    }
    completion.tokens.push_back(std::move(token));
  }
  return true;
}

// The reasoning text of a chat `message` or stream `delta`: `reasoning_content`, else
// `reasoning` (one of them, never both: a server sending the two spellings sends one text).
std::string read_reasoning(const JsonView& message) {
  std::string reasoning = message.optional_string("reasoning_content");
  if (reasoning.empty()) reasoning = message.optional_string("reasoning");
  return reasoning;
}

// Together's stream chunk: one token, the chunk's delta.content, whose logprob is the number
// `logprob` and whose candidates are the choice-level `top_logprobs` map (absent or null: none).
bool append_together_token(const JsonView& choice, const JsonView& logprob,
                           core::Completion& completion) {
  core::TokenLogprob token;
  JsonView delta = choice.at("delta");
  token.token = delta.optional_string("content");
  // A reasoning chunk's one token is its piece of the reasoning.
  if (token.token.empty()) token.token = read_reasoning(delta);
  token.logprob = read_logprob(logprob, completion.numbers);
  if (auto candidates = choice.find("top_logprobs"); candidates && !candidates->is_null()) {
    if (!candidates->is_object()) fail(candidates->describe() + " must be an object");
    std::size_t members = candidates->member_count();
    for (std::size_t m = 0; m < members; ++m)
      token.top.push_back({std::string(candidates->member_key(m)),
                           read_logprob(candidates->member(m), completion.numbers)});
  }
  completion.tokens.push_back(std::move(token));
  return true;
}

// `usage` on a whole answer or on a stream's final chunk (OpenAI's and Together's alike):
// completion_tokens, prompt_tokens and completion_tokens_details.reasoning_tokens, or SGLang's
// flat usage.reasoning_tokens.
void read_usage(const JsonView& root, core::Completion& completion) {
  auto usage = root.find("usage");
  if (!usage) return;
  completion.completion_tokens = usage->at("completion_tokens").integer();
  completion.usage.prompt = optional_count(*usage, {"prompt_tokens"});
  completion.usage.reasoning =
      optional_count(*usage, {"completion_tokens_details", "reasoning_tokens"});
  if (!completion.usage.reasoning)
    completion.usage.reasoning = optional_count(*usage, {"reasoning_tokens"});
  // The prompt tokens served from the prompt cache (OpenAI's and vLLM's; llama.cpp's
  // tools/server/server-task.cpp usage_json_oaicompat).
  completion.usage.cached_prompt =
      optional_count(*usage, {"prompt_tokens_details", "cached_tokens"});
}

// Fields every OpenAI-shaped response or chunk may carry at the top level.
void read_envelope(const JsonView& root, core::Completion& completion) {
  std::string model = root.optional_string("model");
  if (!model.empty()) completion.model = std::move(model);
  std::string fingerprint = root.optional_string("system_fingerprint");
  if (!fingerprint.empty()) completion.system_fingerprint = std::move(fingerprint);
  read_usage(root, completion);
}

// Chat `message.content` or completions `text`; a null chat content (a refusal or a tool
// call) is empty text.
std::string read_text(const JsonView& choice, bool chat) {
  if (!chat) return choice.at("text").string();
  JsonView content = choice.at("message").at("content");
  return content.is_null() ? std::string() : content.string();
}

// `message.tool_calls[]`: {id, type: "function", function: {name, arguments: JSON text}}.
void read_tool_calls(const JsonView& message, core::Completion& completion) {
  auto calls = message.find("tool_calls");
  if (!calls || calls->is_null()) return;
  for (std::size_t i = 0; i < calls->size(); ++i) {
    JsonView call = calls->at(i);
    JsonView function = call.at("function");
    completion.tool_calls.push_back(tool_call_of(function.at("name").string(),
                                                 function.optional_string("arguments"),
                                                 call.optional_string("id")));
  }
}

// A stream's `delta.tool_calls[]` pieces: each names its call by `index`; the first piece of a
// call carries its id and name, every piece a part of its arguments' text.
struct StreamedCall {
  std::string id;
  std::string name;
  std::string arguments;
};

void read_tool_call_deltas(const JsonView& delta, std::vector<StreamedCall>& calls) {
  auto pieces = delta.find("tool_calls");
  if (!pieces || pieces->is_null()) return;
  for (std::size_t i = 0; i < pieces->size(); ++i) {
    JsonView piece = pieces->at(i);
    const long index = piece.at("index").integer();
    if (index < 0 || index > 1024) fail(piece.describe() + " has an index out of range");
    if (calls.size() <= static_cast<std::size_t>(index))
      calls.resize(static_cast<std::size_t>(index) + 1);
    StreamedCall& call = calls[static_cast<std::size_t>(index)];
    if (std::string id = piece.optional_string("id"); !id.empty()) call.id = std::move(id);
    if (auto function = piece.find("function")) {
      if (std::string name = function->optional_string("name"); !name.empty())
        call.name = std::move(name);
      call.arguments += function->optional_string("arguments");
    }
  }
}

core::Completion parse_openai_whole(std::string_view body, bool chat) {
  OpenAiTokenReader reader;
  JsonDocument document = parse_document(body, token_reader(reader));
  JsonView root(document);
  fail_on_error_envelope(root, body);
  core::Completion completion;
  JsonView choices = root.at("choices");
  if (choices.size() == 0) fail("field choices is empty");
  JsonView choice = choices.at(0);
  completion.text = read_text(choice, chat);
  if (chat) completion.reasoning_text = read_reasoning(choice.at("message"));
  if (chat) read_tool_calls(choice.at("message"), completion);
  if (auto logprobs = choice.find("logprobs"))
    completion.has_logprobs = append_logprobs(*logprobs, completion, reader);
  completion.finish_reason = choice.optional_string("finish_reason");
  read_envelope(root, completion);
  if (!root.find("usage"))
    completion.completion_tokens = static_cast<long>(completion.tokens.size());
  return completion;
}

core::Completion parse_openai_stream(std::string_view body, bool chat) {
  core::Completion completion;
  std::vector<StreamedCall> calls;
  bool done = false;
  bool saw_usage = false;
  OpenAiTokenReader reader;
  std::vector<std::string> events = sse_events(body);
  for (std::size_t index = 0; index < events.size(); ++index) {
    const std::string& data = events[index];
    if (data == "[DONE]") {
      done = true;
      break;
    }
    with_event_prefix(index, [&] {
      JsonDocument document = parse_document(data, token_reader(reader));
      JsonView chunk(document);
      fail_on_error_envelope(chunk, data);
      read_envelope(chunk, completion);
      saw_usage = saw_usage || chunk.find("usage").has_value();
      JsonView choices = chunk.at("choices");
      if (choices.size() == 0) return; // the usage chunk
      JsonView choice = choices.at(0);
      if (chat) {
        JsonView delta = choice.at("delta");
        completion.text += delta.optional_string("content");
        completion.reasoning_text += read_reasoning(delta);
        read_tool_call_deltas(delta, calls);
      } else {
        completion.text += choice.at("text").string();
      }
      auto logprobs = choice.find("logprobs");
      if (chat && logprobs && logprobs->is_number())
        completion.has_logprobs = append_together_token(choice, *logprobs, completion);
      else if (logprobs)
        completion.has_logprobs =
            append_logprobs(*logprobs, completion, reader) || completion.has_logprobs;
      std::string finish = choice.optional_string("finish_reason");
      if (!finish.empty()) completion.finish_reason = std::move(finish);
    });
  }
  if (!done) fail("stream ended without data: [DONE] (truncated)");
  for (StreamedCall& call : calls)
    completion.tool_calls.push_back(
        tool_call_of(std::move(call.name), call.arguments, std::move(call.id)));
  if (!saw_usage) completion.completion_tokens = static_cast<long>(completion.tokens.size());
  return completion;
}

} // namespace

DialectRequest build_openai_chat_request(const core::Prompt& prompt,
                                         const GenerationParams& params) {
  Json body;
  Json messages = Json::array();
  for (const auto& message : prompt_as_messages(prompt)) {
    Json item{{"role", message.role}, {"content", message.content}};
    // An agent chain's earlier steps: the model's calls, and each tool's answer to one of them.
    if (!message.tool_calls.empty()) {
      Json calls = Json::array();
      for (const core::ToolCall& call : message.tool_calls)
        calls.push_back({{"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      item["tool_calls"] = std::move(calls);
    }
    if (!message.tool_call_id.empty()) item["tool_call_id"] = message.tool_call_id;
    messages.push_back(std::move(item));
  }
  body["messages"] = std::move(messages);
  if (Json tools = prompt_tools(prompt); !tools.is_null()) body["tools"] = std::move(tools);
  const bool current = params.chat_form == ChatRequestForm::openai_current;
  add_common_fields(body, prompt, params, current ? "max_completion_tokens" : "max_tokens");
  // A model that refuses the parameter (an OpenAI reasoning model) is asked for text alone.
  if (params.logprobs && params.chat_form == ChatRequestForm::together) {
    // Together reads the candidate count from `logprobs` itself and has no top_logprobs.
    body["logprobs"] = params.top_logprobs;
  } else if (params.logprobs) {
    body["logprobs"] = true;
    body["top_logprobs"] = params.top_logprobs;
  }
  return {"/v1/chat/completions", dump_body(body)};
}

DialectRequest build_openai_completions_request(const core::Prompt& prompt,
                                                const GenerationParams& params) {
  Json body;
  body["prompt"] = prompt_as_text(prompt);
  add_common_fields(body, prompt, params);
  // Legacy completions take the candidate count itself in `logprobs`.
  body["logprobs"] = params.top_logprobs;
  return {"/v1/completions", dump_body(body)};
}

core::Completion parse_openai_chat(std::string_view body, bool stream) {
  return stream ? parse_openai_stream(body, true) : parse_openai_whole(body, true);
}

core::Completion parse_openai_completions(std::string_view body, bool stream) {
  return stream ? parse_openai_stream(body, false) : parse_openai_whole(body, false);
}

} // namespace llmrepro::probes::detail

namespace llmrepro::probes {

const char* to_string(LogprobsForm form) {
  switch (form) {
  case LogprobsForm::by_host: return "auto";
  case LogprobsForm::openai: return "openai";
  case LogprobsForm::together: return "together";
  }
  return "auto";
}

core::Result<LogprobsForm> parse_logprobs_form(const std::string& text) {
  for (LogprobsForm form : {LogprobsForm::by_host, LogprobsForm::openai, LogprobsForm::together})
    if (text == to_string(form)) return form;
  return core::make_error(core::ErrorCode::usage,
                          "--logprobs-form must be auto, openai or together (got '" + text + "')");
}

ChatRequestForm chat_request_form_of(const std::string& base_url, LogprobsForm logprobs) {
  if (logprobs == LogprobsForm::together) return ChatRequestForm::together;
  const std::string host = url_host(base_url);
  if (host == "api.openai.com") return ChatRequestForm::openai_current;
  const bool together_host = host == "api.together.xyz" || host == "api.together.ai";
  if (together_host && logprobs == LogprobsForm::by_host) return ChatRequestForm::together;
  return ChatRequestForm::common;
}

} // namespace llmrepro::probes
