// The Gemini API, POST .../models/{model}:generateContent, as served by Google AI Studio
// (generativelanguage.googleapis.com) and, with the same body, by Vertex AI (read from
// googleapis/python-genai google/genai/types.py; see tests/data/formats/README.md):
// - The model is part of the path, so it must be known; a "models/" prefix the user copied
//   from a model list is dropped rather than doubled.
// - Messages are `contents` of {role: "user"|"model", parts: [{text}]}; system messages go to
//   `systemInstruction`. Sampling settings sit in `generationConfig`, logprobs only when
//   `responseLogprobs` is true, with `logprobs` top candidates a position.
// - Each candidate has `content.parts[].text` and `logprobsResult` with, per position, one
//   `chosenCandidates[]` entry {token, tokenId, logProbability} and one `topCandidates[]`
//   entry {candidates: [{token, tokenId, logProbability}]}. The chosen token may be missing
//   from that position's top candidates (the API says so); it is merged in, so the gap is
//   read over the union. A position with no top candidates is left without any.
// - Parts with `"thought": true` (thought summaries, when thinkingConfig.includeThoughts is
//   set) are the reasoning: their text goes to reasoning_text, never to the answer.
// - `finishReason` STOP maps to "stop", MAX_TOKENS to "length"; others (SAFETY, RECITATION,
//   ...) are kept as given. A prompt blocked before generation comes back with no candidates
//   and `promptFeedback.blockReason`: an endpoint error naming it.
// - Usage counts `usageMetadata.candidatesTokenCount`, the prompt `promptTokenCount` and the
//   thinking `thoughtsTokenCount` (added to completion_tokens: the thoughts were generated too);
//   `modelVersion` names the model.
// - Streams (`:streamGenerateContent?alt=sse`) are SSE events whose data is a whole
//   GenerateContentResponse holding the chunk's text and the logprobs of its tokens; the last
//   carries `finishReason`. There is no `data: [DONE]`: a stream without a finish reason was
//   cut short.
// - Tools (googleapis/python-genai types.py Tool, FunctionDeclaration, FunctionCall,
//   FunctionResponse; see tests/data/formats/README.md): the prompt's functions go as
//   `tools: [{functionDeclarations: [{name, description, parameters}]}]`; a part holding
//   `functionCall: {name, args, id?}` is a call (whole in one chunk when streamed), with the
//   `thoughtSignature` Gemini 3 puts beside it, which a chain's next request must send back on
//   that part. An earlier step goes back as a `model` turn of functionCall parts and a `user`
//   turn of `functionResponse: {name, response, id?}` parts.
#include <string_view>

#include "probes/detail/dialect_adapters.hpp"

namespace llmrepro::probes::detail {

namespace {

constexpr std::string_view k_models_prefix = "models/";

// The model's name as it goes into the path.
std::string model_path_name(const std::string& model) {
  std::string_view name = model;
  if (name.rfind(k_models_prefix, 0) == 0) name.remove_prefix(k_models_prefix.size());
  return std::string(name);
}

// Suites give chat's response_format; Gemini takes a MIME type, and a JSON schema beside it.
void add_response_format(const core::Prompt& prompt, Json& generation_config) {
  if (prompt.response_format_json.empty()) return;
  Json format = response_format(prompt);
  generation_config["responseMimeType"] = "application/json";
  if (!format.is_object()) return;
  auto schema = format.find("json_schema");
  if (schema == format.end() || !schema->is_object()) return;
  auto inner = schema->find("schema");
  if (inner != schema->end()) generation_config["responseJsonSchema"] = *inner;
}

// One chosen or top candidate.
core::TokenCandidate read_candidate(const JsonView& entry, core::NumberAnomalies& numbers) {
  return {entry.at("token").string(), read_logprob(entry.at("logProbability"), numbers)};
}

// Appends the tokens of one `logprobsResult`, the chosen token merged into its candidates.
void read_logprobs_result(const JsonView& result, core::Completion& completion) {
  auto chosen = result.find("chosenCandidates");
  if (!chosen) return;
  auto top = result.find("topCandidates");
  std::size_t count = chosen->size();
  if (top && top->size() != count)
    fail(top->describe() + " has " + std::to_string(top->size()) + " positions, " +
         chosen->describe() + " has " + std::to_string(count));
  for (std::size_t i = 0; i < count; ++i) {
    core::TokenCandidate picked = read_candidate(chosen->at(i), completion.numbers);
    core::TokenLogprob token{picked.token, picked.logprob, {}};
    if (top) {
      if (auto candidates = top->at(i).find("candidates")) {
        std::size_t listed = candidates->size();
        for (std::size_t c = 0; c < listed; ++c)
          token.top.push_back(read_candidate(candidates->at(c), completion.numbers));
      }
      // A position without candidates stays without: the chosen token alone is no ranking.
      bool listed = token.top.empty();
      for (const auto& candidate : token.top) listed = listed || candidate.token == picked.token;
      if (!listed) token.top.push_back(picked);
    }
    completion.tokens.push_back(std::move(token));
  }
}

// A `functionCall` part: {name, args (an object; absent where the call has none), id?}, with
// the thoughtSignature beside it in the part.
core::ToolCall read_gemini_call(const JsonView& call, const JsonView& part) {
  auto args = call.find("args");
  core::ToolCall tool =
      tool_call_of(call.at("name").string(), args ? args->json_text() : std::string(),
                   call.optional_string("id"));
  tool.signature = part.optional_string("thoughtSignature");
  return tool;
}

// What a response or stream has read so far beyond the Completion itself.
struct ReadState {
  bool saw_logprobs = false; // some candidate carried a logprobsResult
  bool finished = false;     // some candidate carried a finishReason
  bool has_usage = false;
};

// Reads one GenerateContentResponse (a whole answer or one stream chunk) into `completion`.
void read_response(const JsonView& root, std::string_view text, core::Completion& completion,
                   ReadState& state) {
  fail_on_error_envelope(root, text);
  auto candidates = root.find("candidates");
  if (!candidates || candidates->size() == 0) {
    if (auto feedback = root.find("promptFeedback")) {
      std::string reason = feedback->optional_string("blockReason");
      if (!reason.empty()) throw EndpointErrorEvent("prompt blocked (" + reason + ")");
    }
    // A stream may send a chunk with usage only; a whole answer must have a candidate.
    if (!candidates) root.at("candidates");
  } else {
    JsonView candidate = candidates->at(0);
    if (auto content = candidate.find("content"))
      if (auto parts = content->find("parts")) {
        std::size_t count = parts->size();
        for (std::size_t i = 0; i < count; ++i) {
          JsonView part = parts->at(i);
          if (auto call = part.find("functionCall")) {
            completion.tool_calls.push_back(read_gemini_call(*call, part));
            continue;
          }
          // Thought summaries of thinking models are their reasoning, no part of the answer.
          auto thought = part.find("thought");
          std::string& target =
              thought && thought->boolean() ? completion.reasoning_text : completion.text;
          target += part.optional_string("text");
        }
      }
    if (auto result = candidate.find("logprobsResult")) {
      state.saw_logprobs = true;
      read_logprobs_result(*result, completion);
    }
    std::string reason = candidate.optional_string("finishReason");
    if (!reason.empty() && reason != "FINISH_REASON_UNSPECIFIED") {
      state.finished = true;
      completion.finish_reason = reason == "STOP"         ? "stop"
                                 : reason == "MAX_TOKENS" ? "length"
                                                          : reason;
    }
  }
  std::string model = root.optional_string("modelVersion");
  if (!model.empty()) completion.model = std::move(model);
  if (auto usage = root.find("usageMetadata")) {
    if (auto count = usage->find("candidatesTokenCount")) {
      completion.completion_tokens = count->integer();
      state.has_usage = true;
    }
    // A stream repeats the metadata on several chunks: the last one that says wins.
    if (auto prompt = optional_count(*usage, {"promptTokenCount"}))
      completion.usage.prompt = prompt;
    if (auto thoughts = optional_count(*usage, {"thoughtsTokenCount"}))
      completion.usage.reasoning = thoughts;
  }
}

// An answer whose text came without a single token did not honour the logprobs request; an
// empty answer with no tokens did.
void finish(core::Completion& completion, const ReadState& state) {
  completion.has_logprobs =
      state.saw_logprobs && (!completion.tokens.empty() || completion.text.empty());
  if (!state.has_usage) completion.completion_tokens = static_cast<long>(completion.tokens.size());
  // Gemini counts the thoughts apart from the candidates; they were generated (and are billed as
  // output) all the same, so they count within completion_tokens as in every other dialect.
  completion.completion_tokens += completion.usage.reasoning.value_or(0);
}

core::Completion parse_gemini_whole(std::string_view body) {
  JsonDocument document = parse_document(body);
  core::Completion completion;
  ReadState state;
  read_response(JsonView(document), body, completion, state);
  finish(completion, state);
  return completion;
}

core::Completion parse_gemini_stream(std::string_view body) {
  core::Completion completion;
  ReadState state;
  std::vector<std::string> events = sse_events(body);
  for (std::size_t index = 0; index < events.size(); ++index) {
    const std::string& data = events[index];
    with_event_prefix(index, [&] {
      JsonDocument document = parse_document(data);
      read_response(JsonView(document), data, completion, state);
    });
  }
  if (!state.finished) fail("stream ended without a finishReason (truncated)");
  finish(completion, state);
  return completion;
}

// A call of an earlier step as the model turn gave it: its args (an object), id and signature.
Json function_call_part(const core::ToolCall& call) {
  Json function_call{{"name", call.name}};
  if (Json args = call_arguments(call); args.is_object()) function_call["args"] = std::move(args);
  if (!call.id.empty()) function_call["id"] = call.id;
  Json part{{"functionCall", std::move(function_call)}};
  if (!call.signature.empty()) part["thoughtSignature"] = call.signature;
  return part;
}

// A tool's result. `response` must be a JSON object: a result that is one goes as it is (the
// registry's {"error": ...} among them, the key the API reads a failed call's details from);
// any other is wrapped as {"output": RESULT}, the key the API documents for a function's output
// (the result as JSON where its text is JSON, else as a string).
Json function_response_part(const core::Message& message) {
  Json result = Json::parse(message.content, nullptr, false);
  if (result.is_discarded()) result = message.content;
  if (!result.is_object()) result = Json{{"output", std::move(result)}};
  Json response{{"name", message.tool_name}, {"response", std::move(result)}};
  if (!message.tool_call_id.empty()) response["id"] = message.tool_call_id;
  return Json{{"functionResponse", std::move(response)}};
}

// The chat messages as `contents`, the system ones as `systemInstruction` parts. An agent
// chain's assistant turn is a `model` turn: its text (where it wrote some), then its calls;
// the tool results after it are one `user` turn (Content.role is "user" or "model").
void add_gemini_contents(const core::Prompt& prompt, Json& body, Json& contents) {
  Json system_parts = Json::array();
  bool after_tool = false;
  for (const auto& message : prompt.messages) {
    const bool tool = message.role == "tool";
    if (message.role == "system") {
      system_parts.push_back(Json{{"text", message.content}});
    } else if (tool && after_tool) {
      contents.back()["parts"].push_back(function_response_part(message));
    } else if (tool) {
      contents.push_back(
          Json{{"role", "user"}, {"parts", Json::array({function_response_part(message)})}});
    } else {
      Json parts = Json::array();
      if (!message.content.empty() || message.tool_calls.empty())
        parts.push_back(Json{{"text", message.content}});
      for (const core::ToolCall& call : message.tool_calls)
        parts.push_back(function_call_part(call));
      const char* role = message.role == "assistant" ? "model" : "user";
      contents.push_back(Json{{"role", role}, {"parts", std::move(parts)}});
    }
    after_tool = tool;
  }
  if (!system_parts.empty()) body["systemInstruction"] = Json{{"parts", std::move(system_parts)}};
}

} // namespace

DialectRequest build_gemini_request(const core::Prompt& prompt, const GenerationParams& params) {
  Json body;
  Json contents = Json::array();
  if (prompt.text) {
    contents.push_back(
        Json{{"role", "user"}, {"parts", Json::array({Json{{"text", *prompt.text}}})}});
  } else {
    add_gemini_contents(prompt, body, contents);
  }
  body["contents"] = std::move(contents);
  if (const std::vector<Json> functions = prompt_functions(prompt); !functions.empty())
    body["tools"] = Json::array({Json{{"functionDeclarations", functions}}});
  Json config;
  put_temperature(config, params, "topP");
  config["maxOutputTokens"] = effective_max_tokens(prompt, params);
  if (params.logprobs) {
    config["responseLogprobs"] = true;
    config["logprobs"] = params.top_logprobs;
  }
  put_seed(config, params);
  add_response_format(prompt, config);
  body["generationConfig"] = std::move(config);
  // The version segment is dropped where the base URL already names one (join_url).
  std::string path = "/v1beta/models/" + model_path_name(params.model) +
                     (params.stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
  return {std::move(path), dump_body(body)};
}

core::Completion parse_gemini(std::string_view body, bool stream) {
  return stream ? parse_gemini_stream(body) : parse_gemini_whole(body);
}

} // namespace llmrepro::probes::detail
