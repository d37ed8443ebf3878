// A small JSON reader: the CLI reads the CUDA helper's report, and the probe-only build has no
// JSON library, so the probe parses its own output format by hand.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace llmrepro::gpu {

// A parsed JSON value. Numbers keep whether they were written as integers.
struct JsonValue {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0.0;
  bool integer = false; // the number had no fraction or exponent
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  // The member named `name`, or nullptr (also when this is not an object).
  const JsonValue* find(std::string_view name) const;
};

// Parses one JSON document (RFC 8259; \u escapes become UTF-8, surrogate pairs included).
// Errors name the byte offset.
core::Result<JsonValue> parse_json(std::string_view text);

} // namespace llmrepro::gpu
