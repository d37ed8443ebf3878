// A small streaming JSON writer: the probe must write its report where no JSON library is
// installed (the probe-only build on a GPU machine), so it escapes and formats by hand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmrepro::gpu {

// Writes compact JSON into a string. Calls must nest correctly (key() only inside an object,
// before each value); commas are inserted automatically.
class JsonWriter {
public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view name);
  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(double number); // non-finite numbers become null; always written with '.' or 'e'
  void value(std::int64_t number);
  void value(bool flag);
  void null();

  const std::string& str() const { return m_out; }

private:
  void before_value();

  std::string m_out;
  std::vector<bool> m_first; // per open container: no element written yet
  bool m_after_key = false;
};

} // namespace llmrepro::gpu
