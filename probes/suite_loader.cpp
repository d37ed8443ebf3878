#include "probes/suite_loader.hpp"

#include "core/tool_calls.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <regex>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace llmrepro::probes {

namespace {

using Json = nlohmann::json;

// A bad line; the message names the field, parse_suite() adds "file:line: ". Local to this
// file: it never leaves load_suite().
class LineError : public std::runtime_error {
public:
  explicit LineError(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] void line_error(const std::string& message) { throw LineError(message); }

void reject_unknown_fields(const Json& object, const std::string& prefix,
                           std::initializer_list<std::string_view> allowed) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (std::string_view name : allowed) known = known || it.key() == name;
    if (!known) line_error("unknown field '" + prefix + it.key() + "'");
  }
}

const Json& require(const Json& object, const std::string& key, const std::string& name) {
  auto it = object.find(key);
  if (it == object.end()) line_error("missing field '" + name + "'");
  return *it;
}

std::string require_string(const Json& value, const std::string& name) {
  if (!value.is_string()) line_error("field '" + name + "' must be a string");
  return value.get<std::string>();
}

std::string require_non_empty_string(const Json& value, const std::string& name) {
  std::string text = require_string(value, name);
  if (text.empty()) line_error("field '" + name + "' must not be empty");
  return text;
}

// Checkers and extractors use ECMAScript regular expressions: a pattern that does not compile
// is an input error now rather than a failed check after the whole audit has run.
void check_regex(const std::string& pattern, const std::string& name) {
  try {
    std::regex compiled(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    line_error("field '" + name + "' is not a valid regular expression: " + error.what());
  }
}

void check_json_path(const std::string& path, const std::string& name) {
  if (path.empty() || path.front() != '$')
    line_error("field '" + name + "' must be a JSON path starting with '$'");
}

core::Expectation read_expect(const Json& value) {
  if (!value.is_object()) line_error("field 'expect' must be an object");
  std::string type = require_string(require(value, "type", "expect.type"), "expect.type");
  core::Expectation expect;
  if (type == "regex" || type == "contains" || type == "equals" || type == "choice") {
    reject_unknown_fields(value, "expect.", {"type", "value"});
    expect.value =
        require_non_empty_string(require(value, "value", "expect.value"), "expect.value");
    if (type == "regex") {
      expect.kind = core::Expectation::Kind::regex;
      check_regex(expect.value, "expect.value");
    } else if (type == "contains") {
      expect.kind = core::Expectation::Kind::contains;
    } else if (type == "equals") {
      expect.kind = core::Expectation::Kind::equals;
    } else {
      expect.kind = core::Expectation::Kind::choice;
    }
  } else if (type == "json_path") {
    reject_unknown_fields(value, "expect.", {"type", "path", "value"});
    expect.kind = core::Expectation::Kind::json_path;
    expect.path = require_string(require(value, "path", "expect.path"), "expect.path");
    check_json_path(expect.path, "expect.path");
    // The expected value may be any JSON; it is kept as compact JSON text.
    expect.value = require(value, "value", "expect.value").dump();
  } else if (type == "number") {
    reject_unknown_fields(value, "expect.", {"type", "value", "tolerance"});
    expect.kind = core::Expectation::Kind::number;
    const Json& number = require(value, "value", "expect.value");
    if (!number.is_number()) line_error("field 'expect.value' must be a number");
    expect.number = number.get<double>();
    if (auto it = value.find("tolerance"); it != value.end()) {
      if (!it->is_number() || it->get<double>() < 0.0)
        line_error("field 'expect.tolerance' must be a non-negative number");
      expect.tolerance = it->get<double>();
    }
  } else {
    line_error("field 'expect.type' must be one of regex, contains, equals, json_path, choice, "
               "number (got '" +
               type + "')");
  }
  return expect;
}

core::Extraction read_extract(const Json& value) {
  if (!value.is_object()) line_error("field 'extract' must be an object");
  std::string type = require_string(require(value, "type", "extract.type"), "extract.type");
  core::Extraction extract;
  if (type == "regex" || type == "json_path") {
    reject_unknown_fields(value, "extract.", {"type", "pattern"});
    extract.pattern =
        require_non_empty_string(require(value, "pattern", "extract.pattern"), "extract.pattern");
    if (type == "regex") {
      extract.kind = core::Extraction::Kind::regex;
      check_regex(extract.pattern, "extract.pattern");
    } else {
      extract.kind = core::Extraction::Kind::json_path;
      check_json_path(extract.pattern, "extract.pattern");
    }
  } else if (type == "choice" || type == "number" || type == "last_line") {
    reject_unknown_fields(value, "extract.", {"type"});
    extract.kind = type == "choice"   ? core::Extraction::Kind::choice
                   : type == "number" ? core::Extraction::Kind::number
                                      : core::Extraction::Kind::last_line;
  } else {
    line_error("field 'extract.type' must be one of regex, json_path, choice, number, last_line "
               "(got '" +
               type + "')");
  }
  return extract;
}

std::vector<core::Message> read_messages(const Json& value) {
  if (!value.is_array()) line_error("field 'messages' must be an array");
  if (value.empty()) line_error("field 'messages' must not be empty");
  std::vector<core::Message> messages;
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::string name = "messages[" + std::to_string(i) + "]";
    const Json& message = value[i];
    if (!message.is_object()) line_error("field '" + name + "' must be an object");
    reject_unknown_fields(message, name + ".", {"role", "content"});
    core::Message parsed;
    parsed.role =
        require_non_empty_string(require(message, "role", name + ".role"), name + ".role");
    parsed.content =
        require_string(require(message, "content", name + ".content"), name + ".content");
    messages.push_back(std::move(parsed));
  }
  return messages;
}

// A JSON value as canonical JSON text (core::canonical_json).
std::string canonical(const Json& value, const std::string& field) {
  auto text = core::canonical_json(value.dump());
  if (!text) line_error("field '" + field + "': " + text.error().message);
  return *text;
}

// `tools`: OpenAI's function tools, each {"type": "function", "function": {"name", "description"?,
// "parameters"?}}, names unique.
std::string read_tools(const Json& tools) {
  if (!tools.is_array() || tools.empty())
    line_error("field 'tools' must be a non-empty array of function tools");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tools[" + std::to_string(i) + "]";
    const Json& tool = tools[i];
    if (!tool.is_object()) line_error("field '" + where + "' must be an object");
    reject_unknown_fields(tool, where + ".", {"type", "function"});
    if (tool.value("type", "") != "function")
      line_error("field '" + where + ".type' must be \"function\"");
    const auto function = tool.find("function");
    if (function == tool.end() || !function->is_object())
      line_error("field '" + where + ".function' must be an object");
    reject_unknown_fields(*function, where + ".function.", {"name", "description", "parameters"});
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || name->get<std::string>().empty())
      line_error("field '" + where + ".function.name' must be a non-empty string");
    if (const auto description = function->find("description");
        description != function->end() && !description->is_string())
      line_error("field '" + where + ".function.description' must be a string");
    if (const auto parameters = function->find("parameters");
        parameters != function->end() && !parameters->is_object())
      line_error("field '" + where + ".function.parameters' must be a JSON Schema object");
    if (std::find(names.begin(), names.end(), name->get<std::string>()) != names.end())
      line_error("field 'tools' names '" + name->get<std::string>() + "' twice");
    names.push_back(name->get<std::string>());
  }
  return canonical(tools, "tools");
}

// `tool_results`: [{"name", "arguments", "result"}, ...], each call (name and canonical
// arguments) at most once, each name one of `tools`.
std::vector<core::ToolResult> read_tool_results(const Json& results, const Json& tools) {
  if (!results.is_array() || results.empty())
    line_error("field 'tool_results' must be a non-empty array of {name, arguments, result}");
  std::vector<core::ToolResult> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = "tool_results[" + std::to_string(i) + "]";
    const Json& item = results[i];
    if (!item.is_object()) line_error("field '" + where + "' must be an object");
    reject_unknown_fields(item, where + ".", {"name", "arguments", "result"});
    core::ToolResult result;
    result.name = require_non_empty_string(require(item, "name", where + ".name"), where + ".name");
    const bool offered = std::any_of(tools.begin(), tools.end(), [&](const Json& tool) {
      return tool["function"]["name"] == result.name;
    });
    if (!offered)
      line_error("field '" + where + ".name': '" + result.name + "' is not one of the 'tools'");
    if (const auto arguments = item.find("arguments"); arguments != item.end())
      result.arguments = canonical(*arguments, where + ".arguments");
    const Json& value = require(item, "result", where + ".result");
    result.result = value.is_string() ? value.get<std::string>() : value.dump();
    for (const core::ToolResult& earlier : out)
      if (earlier.name == result.name && earlier.arguments == result.arguments)
        line_error("field '" + where + "': the call " + result.name + "(" + result.arguments +
                   ") is scripted twice");
    out.push_back(std::move(result));
  }
  return out;
}

core::Prompt read_json_prompt(std::string_view line) {
  Json object;
  try {
    object = Json::parse(line.begin(), line.end());
  } catch (const Json::parse_error& error) {
    line_error("invalid JSON at column " + std::to_string(error.byte));
  }
  if (!object.is_object()) line_error("expected a JSON object");
  reject_unknown_fields(object, "",
                        {"id", "prompt", "messages", "max_tokens", "tags", "expect", "extract",
                         "response_format", "tools", "tool_results", "max_steps"});
  core::Prompt prompt;
  prompt.id = require_non_empty_string(require(object, "id", "id"), "id");
  bool has_prompt = object.contains("prompt");
  bool has_messages = object.contains("messages");
  if (has_prompt && has_messages) line_error("give either field 'prompt' or 'messages', not both");
  if (has_prompt)
    prompt.text = require_non_empty_string(object["prompt"], "prompt");
  else if (has_messages)
    prompt.messages = read_messages(object["messages"]);
  else
    line_error("missing field 'prompt' or 'messages'");
  if (auto it = object.find("max_tokens"); it != object.end()) {
    bool valid = it->is_number_integer() && it->get<std::int64_t>() > 0 &&
                 (it->is_number_unsigned() ? it->get<std::uint64_t>() <= INT_MAX
                                           : it->get<std::int64_t>() <= INT_MAX);
    if (!valid) line_error("field 'max_tokens' must be a positive integer");
    prompt.max_tokens = static_cast<int>(it->get<std::int64_t>());
  }
  if (auto it = object.find("tags"); it != object.end()) {
    if (!it->is_array()) line_error("field 'tags' must be an array of strings");
    for (const Json& tag : *it) {
      if (!tag.is_string()) line_error("field 'tags' must be an array of strings");
      prompt.tags.push_back(tag.get<std::string>());
    }
  }
  if (auto it = object.find("expect"); it != object.end()) prompt.expect = read_expect(*it);
  if (auto it = object.find("extract"); it != object.end()) prompt.extract = read_extract(*it);
  if (auto it = object.find("response_format"); it != object.end()) {
    if (!it->is_object()) line_error("field 'response_format' must be an object");
    prompt.response_format_json = it->dump();
  }
  if (auto it = object.find("tools"); it != object.end()) prompt.tools_json = read_tools(*it);
  if (auto it = object.find("tool_results"); it != object.end()) {
    if (prompt.tools_json.empty()) line_error("field 'tool_results' needs 'tools'");
    if (!prompt.is_chat()) line_error("field 'tool_results' needs 'messages': a chain is a chat");
    prompt.tool_results = read_tool_results(*it, object["tools"]);
  }
  if (auto it = object.find("max_steps"); it != object.end()) {
    if (prompt.tool_results.empty()) line_error("field 'max_steps' needs 'tool_results'");
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > 64)
      line_error("field 'max_steps' must be an integer from 1 to 64");
    prompt.max_steps = static_cast<int>(it->get<std::int64_t>());
  }
  return prompt;
}

bool is_skipped(std::string_view line) {
  std::size_t first = line.find_first_not_of(" \t");
  return first == std::string_view::npos || line[first] == '#';
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == std::string_view::npos ? end : end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return lines;
}

} // namespace

core::Result<core::Suite> parse_suite(std::string_view text, const std::string& source) {
  std::vector<std::string_view> lines = split_lines(text);
  bool json_lines = false;
  for (std::string_view line : lines) {
    if (is_skipped(line)) continue;
    json_lines = line[line.find_first_not_of(" \t")] == '{';
    break;
  }
  core::Suite suite;
  suite.source = source;
  std::unordered_map<std::string, int> first_line_of_id;
  for (std::size_t index = 0; index < lines.size(); ++index) {
    std::string_view line = lines[index];
    if (is_skipped(line)) continue;
    int line_number = static_cast<int>(index + 1);
    std::string where = source + ":" + std::to_string(line_number) + ": ";
    core::Prompt prompt;
    if (json_lines) {
      try {
        prompt = read_json_prompt(line);
      } catch (const LineError& error) {
        return core::make_error(core::ErrorCode::input, where + error.what());
      } catch (const std::exception& error) {
        return core::make_error(core::ErrorCode::input, where + "unreadable line: " + error.what());
      }
    } else {
      prompt.id = "line-" + std::to_string(line_number);
      prompt.text = std::string(line);
    }
    prompt.source_line = line_number;
    auto [it, inserted] = first_line_of_id.emplace(prompt.id, line_number);
    if (!inserted)
      return core::make_error(core::ErrorCode::input, where + "duplicate id '" + prompt.id +
                                                          "' (first on line " +
                                                          std::to_string(it->second) + ")");
    suite.prompts.push_back(std::move(prompt));
  }
  if (suite.prompts.empty())
    return core::make_error(core::ErrorCode::input, "suite '" + source + "' has no prompts");
  return suite;
}

core::Result<core::Suite> load_suite(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr)
    return core::make_error(core::ErrorCode::input,
                            "cannot open suite '" + path + "': " + std::strerror(errno));
  std::string text;
  char buffer[65536];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, got);
  bool failed = std::ferror(file) != 0;
  int read_errno = errno;
  std::fclose(file);
  if (failed)
    return core::make_error(core::ErrorCode::input,
                            "cannot read suite '" + path + "': " + std::strerror(read_errno));
  return parse_suite(text, path);
}

} // namespace llmrepro::probes
