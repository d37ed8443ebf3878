// A small JSON reader for core, which uses the standard library only: checkers read JSON answers,
// and the probe-only build (no JSON library) reads its own output.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace llmrepro::core {

// A parsed JSON value. Numbers keep whether they were written as integers.
struct JsonValue {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0.0;
  bool integer = false; // the number had no fraction or exponent
  std::string literal;  // a number as written in the document ("1.50", "-0", "1e3")
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  // Declared, and defaulted in the .cpp, so that clang 14 with libstdc++ 12 does not instantiate
  // the members' constructors while JsonValue is still incomplete (Result<JsonValue> failed).
  JsonValue();

  // The member named `name`, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view name) const;
};

// Parses one JSON document (RFC 8259; \u escapes become UTF-8, surrogate pairs included).
// Errors name the byte offset.
Result<JsonValue> parse_json(std::string_view text);

} // namespace llmrepro::core
