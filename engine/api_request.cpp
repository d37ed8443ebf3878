#include "engine/api_request.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace llmrepro::engine {

namespace {

using nlohmann::json;

// The largest top_logprobs the OpenAI API accepts.
constexpr long long k_max_top_logprobs = 20;
// The most tokens a request may ask for: far above any context this engine has, and low enough
// that no sum of token counts can overflow. A larger value is a 400, never clamped.
constexpr long long k_max_token_count = 1'000'000;
// Default max_tokens: the OpenAI legacy completions default; chat has none, so pick one.
constexpr std::size_t k_default_completion_tokens = 16;
constexpr std::size_t k_default_chat_tokens = 64;

[[noreturn]] void fail(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

// The field whose number overflowed: the body parsed again, noting the keys on the way down,
// stops at the same number ("a.b" when nested). The common path pays nothing for it.
std::string overflowing_field(const std::string& body) {
  std::vector<std::string> keys;
  const json::parser_callback_t note_keys = [&keys](int depth, json::parse_event_t event,
                                                    json& parsed) {
    if (event == json::parse_event_t::key) {
      keys.resize(static_cast<std::size_t>(depth));
      keys.back() = parsed.get<std::string>();
    }
    return true;
  };
  try {
    const json unused = json::parse(body, note_keys);
    (void)unused;
  } catch (const json::exception&) {
  }
  std::string path;
  for (const std::string& key : keys) path += (path.empty() ? "" : ".") + key;
  return path;
}

json parse_object(const std::string& body) {
  json document;
  try {
    document = json::parse(body);
  } catch (const json::parse_error& error) {
    fail("", std::string("the request body is not valid JSON: ") + error.what());
  } catch (const json::out_of_range& error) {
    // A number past a double's range (1e400): nlohmann names the literal between quotes.
    const std::string what = error.what();
    const std::size_t open = what.find('\'');
    const std::size_t close = what.rfind('\'');
    const std::string literal =
        open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    const std::string field = overflowing_field(body);
    fail(field, "'" + field + "' is out of range: " + literal + " overflows a 64-bit number");
  }
  if (!document.is_object()) fail("", "the request body must be a JSON object");
  return document;
}

void reject_unknown(const json& document, const std::set<std::string>& known) {
  for (const auto& [key, value] : document.items())
    if (!known.contains(key)) fail(key, "unknown field '" + key + "' in the request");
}

std::string string_field(const json& value, const std::string& name) {
  if (!value.is_string()) fail(name, "'" + name + "' must be a string");
  return value.get<std::string>();
}

bool bool_field(const json& value, const std::string& name) {
  if (!value.is_boolean()) fail(name, "'" + name + "' must be a boolean");
  return value.get<bool>();
}

// An integer field in [low, high]. A value outside, however large (2^64-1 is stored unsigned,
// 1e20 as a double), is `out_of_range(got, below)` with the value as parsed, never wrapped into
// a signed value or clamped.
template <typename Message>
long long bounded_int(const json& value, const std::string& name, long long low, long long high,
                      Message out_of_range) {
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(high))
    fail(name, out_of_range(value.dump(), false));
  if (value.is_number_float()) {
    // An integer literal past 64 bits arrives as a double; a fractional one is a type error.
    const double number = value.get<double>();
    if (std::isfinite(number) && std::trunc(number) == number &&
        (number < static_cast<double>(low) || number > static_cast<double>(high)))
      fail(name, out_of_range(value.dump(), number < static_cast<double>(low)));
  }
  if (!value.is_number_integer()) fail(name, "'" + name + "' must be an integer");
  const long long number = value.get<long long>();
  if (number < low || number > high) fail(name, out_of_range(value.dump(), number < low));
  return number;
}

long long int_field(const json& value, const std::string& name) {
  constexpr long long min = std::numeric_limits<long long>::min();
  constexpr long long max = std::numeric_limits<long long>::max();
  return bounded_int(value, name, min, max, [&](const std::string& got, bool) {
    return "'" + name + "' must be between " + std::to_string(min) + " and " + std::to_string(max) +
           ", got " + got;
  });
}

std::size_t token_count(const json& value, const std::string& name) {
  return static_cast<std::size_t>(
      bounded_int(value, name, 1, k_max_token_count, [&](const std::string& got, bool below) {
        return below ? "'" + name + "' must be at least 1"
                     : "'" + name + "' must be at most " + std::to_string(k_max_token_count) +
                           ", got " + got;
      }));
}

std::size_t top_count(const json& value, const std::string& name) {
  return static_cast<std::size_t>(
      bounded_int(value, name, 0, k_max_top_logprobs, [&](const std::string& got, bool) {
        return "'" + name + "' must be between 0 and " + std::to_string(k_max_top_logprobs) +
               ", got " + got;
      }));
}

std::string chat_prompt(const json& messages) {
  if (!messages.is_array()) fail("messages", "'messages' must be an array");
  if (messages.empty()) fail("messages", "'messages' must not be empty");
  static const std::set<std::string> roles{"system", "developer", "user", "assistant", "tool"};
  std::string prompt;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& message = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) fail(where, "'" + where + "' must be an object");
    reject_unknown(message, {"role", "content", "name"});
    if (!message.contains("role")) fail(where + ".role", "'" + where + ".role' is required");
    const std::string role = string_field(message["role"], where + ".role");
    if (!roles.contains(role))
      fail(where + ".role", "'" + where + ".role' is not a known role: " + role);
    if (!message.contains("content"))
      fail(where + ".content", "'" + where + ".content' is required");
    const json& content = message["content"];
    std::string text;
    if (content.is_string()) {
      text = content.get<std::string>();
    } else if (content.is_array()) {
      // Content parts (OpenAI `ChatCompletionRequestMessageContentPartText`): text only.
      for (std::size_t p = 0; p < content.size(); ++p) {
        const std::string part = where + ".content[" + std::to_string(p) + "]";
        if (!content[p].is_object() || content[p].value("type", "") != "text" ||
            !content[p].contains("text"))
          fail(part, "'" + part + "' must be a text part {\"type\": \"text\", \"text\": ...}");
        text += (text.empty() ? "" : " ") + string_field(content[p]["text"], part + ".text");
      }
    } else {
      fail(where + ".content",
           "'" + where + ".content' must be a string or an array of text parts");
    }
    if (!prompt.empty()) prompt += "\n";
    prompt += text;
  }
  return prompt;
}

} // namespace

ApiRequest parse_api_request(const std::string& body, ApiKind kind) {
  const json document = parse_object(body);
  const bool chat = kind == ApiKind::chat_completions;
  std::set<std::string> known{"model",           "max_tokens", "temperature", "top_p",
                              "logprobs",        "seed",       "stream",      "stream_options",
                              "response_format", "n",          "user"};
  if (chat) {
    known.insert({"messages", "top_logprobs", "max_completion_tokens"});
  } else {
    known.insert("prompt");
  }
  reject_unknown(document, known);

  ApiRequest request;
  request.kind = kind;
  request.max_tokens = chat ? k_default_chat_tokens : k_default_completion_tokens;
  if (document.contains("model")) request.model = string_field(document["model"], "model");

  if (chat) {
    if (!document.contains("messages")) fail("messages", "'messages' is required");
    request.prompt = chat_prompt(document["messages"]);
  } else {
    if (!document.contains("prompt")) fail("prompt", "'prompt' is required");
    const json& prompt = document["prompt"];
    if (prompt.is_array()) {
      if (prompt.size() != 1)
        fail("prompt", "'prompt' must be a string or an array of exactly one string");
      request.prompt = string_field(prompt[0], "prompt");
    } else {
      request.prompt = string_field(prompt, "prompt");
    }
  }

  if (document.contains("max_tokens"))
    request.max_tokens = token_count(document["max_tokens"], "max_tokens");
  if (chat && document.contains("max_completion_tokens"))
    request.max_tokens = token_count(document["max_completion_tokens"], "max_completion_tokens");

  if (document.contains("temperature")) {
    const json& temperature = document["temperature"];
    if (!temperature.is_number()) fail("temperature", "'temperature' must be a number");
    request.temperature = temperature.get<double>();
    if (!(request.temperature >= 0.0 && request.temperature <= 2.0))
      fail("temperature", "'temperature' must be between 0 and 2");
  }
  if (document.contains("top_p")) {
    const json& top_p = document["top_p"];
    if (!top_p.is_number()) fail("top_p", "'top_p' must be a number");
    if (top_p.get<double>() != 1.0)
      fail("top_p", "'top_p' must be 1: this engine samples from the whole distribution");
  }
  if (document.contains("n"))
    (void)bounded_int(document["n"], "n", 1, 1,
                      [](const std::string&, bool) { return std::string("'n' must be 1"); });
  if (document.contains("seed")) request.seed = int_field(document["seed"], "seed");
  if (document.contains("user")) (void)string_field(document["user"], "user");

  if (chat) {
    if (document.contains("logprobs"))
      request.logprobs = bool_field(document["logprobs"], "logprobs");
    if (document.contains("top_logprobs")) {
      const std::size_t top = top_count(document["top_logprobs"], "top_logprobs");
      if (!request.logprobs)
        fail("top_logprobs",
             "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.");
      request.top_logprobs = top;
    }
  } else if (document.contains("logprobs") && !document["logprobs"].is_null()) {
    request.logprobs = true;
    request.top_logprobs = top_count(document["logprobs"], "logprobs");
  }

  if (document.contains("stream")) request.stream = bool_field(document["stream"], "stream");
  if (document.contains("stream_options") && !document["stream_options"].is_null()) {
    const json& options = document["stream_options"];
    if (!options.is_object()) fail("stream_options", "'stream_options' must be an object");
    if (!request.stream)
      fail("stream_options", "'stream_options' is only allowed when 'stream' is true");
    reject_unknown(options, {"include_usage", "include_obfuscation"});
    if (options.contains("include_usage"))
      request.include_usage = bool_field(options["include_usage"], "stream_options.include_usage");
    if (options.contains("include_obfuscation"))
      (void)bool_field(options["include_obfuscation"], "stream_options.include_obfuscation");
  }
  // response_format is accepted and not enforced: the engine has no constrained decoding.
  if (document.contains("response_format") && !document["response_format"].is_null()) {
    const json& format = document["response_format"];
    if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
      fail("response_format", "'response_format' must be an object with a string 'type'");
    const std::string type = format["type"].get<std::string>();
    if (type != "text" && type != "json_object" && type != "json_schema")
      fail("response_format.type",
           "'response_format.type' must be text, json_object or json_schema");
  }
  return request;
}

EmbeddingRequest parse_embedding_request(const std::string& body) {
  const json document = parse_object(body);
  reject_unknown(document, {"model", "input", "encoding_format", "user", "dimensions"});
  EmbeddingRequest request;
  if (document.contains("model")) request.model = string_field(document["model"], "model");
  if (!document.contains("input")) fail("input", "'input' is required");
  const json& input = document["input"];
  if (input.is_string()) {
    request.inputs.push_back(input.get<std::string>());
  } else if (input.is_array() && !input.empty()) {
    for (std::size_t i = 0; i < input.size(); ++i)
      request.inputs.push_back(string_field(input[i], "input[" + std::to_string(i) + "]"));
  } else {
    fail("input", "'input' must be a string or a non-empty array of strings");
  }
  if (document.contains("encoding_format") &&
      string_field(document["encoding_format"], "encoding_format") != "float")
    fail("encoding_format", "'encoding_format' must be \"float\"");
  if (document.contains("dimensions")) fail("dimensions", "'dimensions' is not supported");
  if (document.contains("user")) (void)string_field(document["user"], "user");
  return request;
}

} // namespace llmrepro::engine
