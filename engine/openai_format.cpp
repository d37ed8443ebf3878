#include "engine/openai_format.hpp"

#include <charconv>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace llmrepro::engine {

namespace {

using nlohmann::json;

// A float as the double with the same shortest decimal form, so that -0.0041f is written
// -0.0041 rather than the double nearest to the float's exact binary value.
double short_float(float value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer - 1, value);
  *result.ptr = '\0';
  return std::strtod(buffer, nullptr);
}

json bytes_of(const std::string& text) {
  json bytes = json::array();
  for (char c : text) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// choices[].logprobs.content[] entry of the chat API (`ChatCompletionTokenLogprob`).
json chat_logprob(const Vocabulary& vocabulary, const TokenChoice& choice, std::size_t top) {
  const std::string& text = vocabulary.token_text(choice.token);
  json entry{{"token", text}, {"logprob", short_float(choice.logprob)}, {"bytes", bytes_of(text)}};
  json candidates = json::array();
  for (std::size_t i = 0; i < std::min(top, choice.top.size()); ++i) {
    const std::string& candidate = vocabulary.token_text(choice.top[i].token);
    candidates.push_back({{"token", candidate},
                          {"logprob", short_float(choice.top[i].logprob)},
                          {"bytes", bytes_of(candidate)}});
  }
  entry["top_logprobs"] = std::move(candidates);
  return entry;
}

// choices[].logprobs of the legacy API: parallel tokens / token_logprobs / top_logprobs /
// text_offset lists; each top_logprobs map holds the top max(k, 1) tokens (a greedy token is
// the first of them, and the spec allows up to k + 1; a sampled one may be none of them).
json legacy_logprobs(const Vocabulary& vocabulary, const std::vector<TokenChoice>& tokens,
                     std::size_t top, std::size_t offset) {
  json result{{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  for (const TokenChoice& choice : tokens) {
    const std::string& text = vocabulary.token_text(choice.token);
    result["tokens"].push_back(text);
    result["token_logprobs"].push_back(short_float(choice.logprob));
    json map = json::object();
    for (std::size_t i = 0; i < std::min(std::max<std::size_t>(top, 1), choice.top.size()); ++i)
      map[vocabulary.token_text(choice.top[i].token)] = short_float(choice.top[i].logprob);
    result["top_logprobs"].push_back(std::move(map));
    result["text_offset"].push_back(offset);
    offset += text.size();
  }
  return result;
}

json usage(const ApiRequest& request, const ResponseContext& context, std::size_t completion,
           std::size_t cached, bool details) {
  json result{{"prompt_tokens", context.prompt_tokens},
              {"completion_tokens", completion},
              {"total_tokens", context.prompt_tokens + completion}};
  if (details && request.kind == ApiKind::chat_completions) {
    result["prompt_tokens_details"] = {{"cached_tokens", cached}, {"audio_tokens", 0}};
    result["completion_tokens_details"] = {{"reasoning_tokens", 0},
                                           {"audio_tokens", 0},
                                           {"accepted_prediction_tokens", 0},
                                           {"rejected_prediction_tokens", 0}};
  }
  return result;
}

json header(const ApiRequest& request, const ResponseContext& context, bool chunk) {
  const bool chat = request.kind == ApiKind::chat_completions;
  const char* object =
      chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return json{{"id", context.id},
              {"object", object},
              {"created", context.created},
              {"model", context.model},
              {"system_fingerprint", context.fingerprint}};
}

std::string text_of(const Vocabulary& vocabulary, const std::vector<TokenChoice>& tokens) {
  std::string text;
  for (const TokenChoice& choice : tokens) text += vocabulary.token_text(choice.token);
  return text;
}

std::string event(const json& value) { return "data: " + dump(value) + "\n\n"; }

} // namespace

std::string completion_body(const ApiRequest& request, const ResponseContext& context,
                            const Vocabulary& vocabulary, const Generation::Snapshot& snapshot) {
  json body = header(request, context, false);
  const std::string text = text_of(vocabulary, snapshot.tokens);
  json choice;
  if (request.kind == ApiKind::chat_completions) {
    json logprobs = nullptr;
    if (request.logprobs) {
      json content = json::array();
      for (const TokenChoice& token : snapshot.tokens)
        content.push_back(chat_logprob(vocabulary, token, request.top_logprobs));
      logprobs = {{"content", std::move(content)}, {"refusal", nullptr}};
    }
    choice = {{"index", 0},
              {"message",
               {{"role", "assistant"},
                {"content", text},
                {"refusal", nullptr},
                {"annotations", json::array()}}},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", snapshot.finish_reason}};
  } else {
    json logprobs = nullptr;
    if (request.logprobs)
      logprobs =
          legacy_logprobs(vocabulary, snapshot.tokens, request.top_logprobs, context.prompt_chars);
    choice = {{"text", text},
              {"index", 0},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", snapshot.finish_reason}};
  }
  body["choices"] = json::array({std::move(choice)});
  body["usage"] = usage(request, context, snapshot.tokens.size(), snapshot.cached_tokens, true);
  return dump(body);
}

std::string stream_events(const ApiRequest& request, const ResponseContext& context,
                          const Vocabulary& vocabulary, const std::vector<TokenChoice>& tokens,
                          std::size_t first, std::size_t text_chars_before, bool opening,
                          bool finished, const std::string& finish_reason,
                          std::size_t cached_tokens) {
  const bool chat = request.kind == ApiKind::chat_completions;
  std::string out;
  if (chat && opening) {
    json chunk = header(request, context, true);
    chunk["choices"] =
        json::array({{{"index", 0},
                      {"delta", {{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}}},
                      {"logprobs", nullptr},
                      {"finish_reason", nullptr}}});
    out += event(chunk);
  }
  std::size_t offset = context.prompt_chars + text_chars_before;
  for (const TokenChoice& token : tokens) {
    const std::string& text = vocabulary.token_text(token.token);
    json chunk = header(request, context, true);
    json logprobs = nullptr;
    if (chat) {
      if (request.logprobs)
        logprobs = {
            {"content", json::array({chat_logprob(vocabulary, token, request.top_logprobs)})},
            {"refusal", nullptr}};
      chunk["choices"] = json::array({{{"index", 0},
                                       {"delta", {{"content", text}}},
                                       {"logprobs", std::move(logprobs)},
                                       {"finish_reason", nullptr}}});
    } else {
      if (request.logprobs)
        logprobs = legacy_logprobs(vocabulary, {token}, request.top_logprobs, offset);
      chunk["choices"] = json::array({{{"text", text},
                                       {"index", 0},
                                       {"logprobs", std::move(logprobs)},
                                       {"finish_reason", nullptr}}});
    }
    offset += text.size();
    out += event(chunk);
  }
  if (finished) {
    json chunk = header(request, context, true);
    if (chat)
      chunk["choices"] = json::array({{{"index", 0},
                                       {"delta", json::object()},
                                       {"logprobs", nullptr},
                                       {"finish_reason", finish_reason}}});
    else
      chunk["choices"] = json::array(
          {{{"text", ""}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}});
    out += event(chunk);
    if (request.include_usage) {
      json usage_chunk = header(request, context, true);
      usage_chunk["choices"] = json::array();
      usage_chunk["usage"] = usage(request, context, first + tokens.size(), cached_tokens, false);
      out += event(usage_chunk);
    }
    out += "data: [DONE]\n\n";
  }
  return out;
}

std::string embeddings_body(const std::vector<std::vector<float>>& embeddings,
                            const std::string& model, std::size_t prompt_tokens) {
  json data = json::array();
  for (std::size_t i = 0; i < embeddings.size(); ++i) {
    json values = json::array();
    for (float value : embeddings[i]) values.push_back(short_float(value));
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(values)}});
  }
  return dump({{"object", "list"},
               {"data", std::move(data)},
               {"model", model},
               {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}});
}

std::string models_body(const std::string& model, const std::string& fingerprint) {
  return dump({{"object", "list"},
               {"data", json::array({{{"id", model},
                                      {"object", "model"},
                                      {"created", 0},
                                      {"owned_by", "llmrepro"},
                                      {"system_fingerprint", fingerprint}}})}});
}

std::string error_body(const ApiError& error) {
  json param = error.param().empty() ? json(nullptr) : json(error.param());
  json code = error.code().empty() ? json(nullptr) : json(error.code());
  return dump({{"error",
                {{"message", error.what()},
                 {"type", error.type()},
                 {"param", std::move(param)},
                 {"code", std::move(code)}}}});
}

} // namespace llmrepro::engine
