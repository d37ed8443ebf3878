#include "core/tool_calls.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/request_record.hpp"

namespace llmrepro::core {
namespace {

void append_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char escape[8];
        std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
        out += escape;
      } else {
        out.push_back(c);
      }
    }
  }
  out.push_back('"');
}

Result<void> append_value(std::string& out, const JsonValue& value) {
  switch (value.type) {
  case JsonValue::Type::null: out += "null"; return {};
  case JsonValue::Type::boolean: out += value.boolean ? "true" : "false"; return {};
  case JsonValue::Type::number:
    // A value built in memory has no literal; every parsed number has one.
    if (value.literal.empty()) return make_error(ErrorCode::input, "JSON: a number without text");
    out += value.literal;
    return {};
  case JsonValue::Type::string: append_string(out, value.string); return {};
  case JsonValue::Type::array:
    out.push_back('[');
    for (std::size_t i = 0; i < value.array.size(); ++i) {
      if (i > 0) out.push_back(',');
      LLMREPRO_TRY(append_value(out, value.array[i]));
    }
    out.push_back(']');
    return {};
  case JsonValue::Type::object: {
    std::vector<const std::pair<std::string, JsonValue>*> members;
    members.reserve(value.object.size());
    for (const auto& member : value.object) members.push_back(&member);
    std::sort(members.begin(), members.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    out.push_back('{');
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i > 0 && members[i]->first == members[i - 1]->first)
        return make_error(ErrorCode::input,
                          "JSON: the key '" + members[i]->first + "' is given twice");
      if (i > 0) out.push_back(',');
      append_string(out, members[i]->first);
      out.push_back(':');
      LLMREPRO_TRY(append_value(out, members[i]->second));
    }
    out.push_back('}');
    return {};
  }
  }
  return {};
}

// The field of the arguments where two calls' canonical arguments first differ (they do).
std::string arguments_field(const std::string& a, const std::string& b) {
  auto left = parse_json(a);
  auto right = parse_json(b);
  if (!left || !right || left->type != JsonValue::Type::object ||
      right->type != JsonValue::Type::object)
    return "arguments";
  std::vector<std::string> keys;
  for (const auto& [key, value] : left->object) keys.push_back(key);
  for (const auto& [key, value] : right->object) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (const std::string& key : keys) {
    const JsonValue* x = left->find(key);
    const JsonValue* y = right->find(key);
    if (x == nullptr || y == nullptr) return "arguments." + key;
    auto x_text = canonical_json(*x);
    auto y_text = canonical_json(*y);
    if (!x_text || !y_text || *x_text != *y_text) return "arguments." + key;
  }
  return "arguments"; // equal members written differently: not canonical text
}

} // namespace

Result<std::string> canonical_json(const JsonValue& value) {
  std::string out;
  LLMREPRO_TRY(append_value(out, value));
  return out;
}

Result<std::string> canonical_json(std::string_view text) {
  JsonValue value;
  LLMREPRO_TRY_ASSIGN(value, parse_json(text));
  return canonical_json(value);
}

std::string tool_calls_json(const std::vector<ToolCall>& calls) {
  std::string out = "[";
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "{\"arguments\":";
    out += calls[i].arguments;
    out += ",\"name\":";
    append_string(out, calls[i].name);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

Result<std::vector<ToolCall>> parse_tool_calls_json(std::string_view text) {
  JsonValue root;
  LLMREPRO_TRY_ASSIGN(root, parse_json(text));
  if (root.type != JsonValue::Type::array)
    return make_error(ErrorCode::input, "tool calls: expected an array");
  std::vector<ToolCall> calls;
  calls.reserve(root.array.size());
  for (std::size_t i = 0; i < root.array.size(); ++i) {
    const JsonValue& entry = root.array[i];
    const std::string where = "tool calls: call " + std::to_string(i);
    if (entry.type != JsonValue::Type::object)
      return make_error(ErrorCode::input, where + ": expected an object");
    const JsonValue* name = entry.find("name");
    if (name == nullptr || name->type != JsonValue::Type::string)
      return make_error(ErrorCode::input, where + ": `name` must be a string");
    ToolCall call;
    call.name = name->string;
    if (const JsonValue* arguments = entry.find("arguments"); arguments != nullptr) {
      auto canonical = canonical_json(*arguments);
      if (!canonical) return make_error(ErrorCode::input, where + ": " + canonical.error().message);
      call.arguments = std::move(*canonical);
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

std::optional<ToolCallDifference> first_tool_call_difference(const std::vector<ToolCall>& a,
                                                             const std::vector<ToolCall>& b) {
  const std::size_t shared = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < shared; ++i) {
    const int step = static_cast<int>(i);
    if (a[i].name != b[i].name) return ToolCallDifference{step, "name"};
    if (a[i].arguments != b[i].arguments)
      return ToolCallDifference{step, arguments_field(a[i].arguments, b[i].arguments)};
  }
  if (a.size() != b.size()) return ToolCallDifference{static_cast<int>(shared), "end"};
  return std::nullopt;
}

std::optional<ToolCallDifference>
first_tool_call_divergence(const std::string& reference_json,
                           const std::vector<const RequestRecord*>& records) {
  const std::vector<ToolCall>* reference = nullptr;
  for (const RequestRecord* record : records) {
    if (record->outcome.ok &&
        tool_calls_json(record->outcome.completion.tool_calls) == reference_json) {
      reference = &record->outcome.completion.tool_calls;
      break;
    }
  }
  if (reference == nullptr) return std::nullopt;
  std::optional<ToolCallDifference> first;
  for (const RequestRecord* record : records) {
    if (!record->outcome.ok) continue;
    auto difference = first_tool_call_difference(*reference, record->outcome.completion.tool_calls);
    if (difference && (!first || difference->step < first->step)) first = std::move(difference);
  }
  return first;
}

} // namespace llmrepro::core
