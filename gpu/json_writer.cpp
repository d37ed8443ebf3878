#include "gpu/detail/json_writer.hpp"

#include "core/json_value.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace llmrepro::gpu {

void JsonWriter::before_value() {
  if (m_after_key) {
    m_after_key = false;
    return;
  }
  if (!m_first.empty()) {
    if (!m_first.back()) m_out.push_back(',');
    m_first.back() = false;
  }
}

void JsonWriter::begin_object() {
  before_value();
  m_out.push_back('{');
  m_first.push_back(true);
}

void JsonWriter::end_object() {
  m_out.push_back('}');
  m_first.pop_back();
}

void JsonWriter::begin_array() {
  before_value();
  m_out.push_back('[');
  m_first.push_back(true);
}

void JsonWriter::end_array() {
  m_out.push_back(']');
  m_first.pop_back();
}

void JsonWriter::key(std::string_view name) {
  before_value();
  m_out += core::json_quote(name);
  m_out.push_back(':');
  m_after_key = true;
}

void JsonWriter::value(std::string_view text) {
  before_value();
  m_out += core::json_quote(text);
}

void JsonWriter::value(double number) {
  before_value();
  if (!std::isfinite(number)) {
    m_out += "null";
    return;
  }
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, number);
  std::string text(buffer, written.ptr);
  // Keep reals distinguishable from integers when read back.
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  m_out += text;
}

void JsonWriter::value(std::int64_t number) {
  before_value();
  m_out += std::to_string(number);
}

void JsonWriter::value(bool flag) {
  before_value();
  m_out += flag ? "true" : "false";
}

void JsonWriter::null() {
  before_value();
  m_out += "null";
}

} // namespace llmrepro::gpu
