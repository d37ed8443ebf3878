#include "probes/sse_parser.hpp"

#include <cstring>

namespace llmrepro::probes {

namespace {

constexpr std::string_view k_byte_order_mark = "\xEF\xBB\xBF";

// Where the line from `at` ends: its first '\n' or '\r', or the chunk's end. memchr finds the
// '\n' over the whole chunk, then a '\r' only within the line it ends (a lone '\r' is rare).
std::size_t line_end(std::string_view chunk, std::size_t at) {
  const char* begin = chunk.data() + at;
  const std::size_t rest = chunk.size() - at;
  const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', rest));
  const std::size_t length = newline != nullptr ? static_cast<std::size_t>(newline - begin) : rest;
  const auto* carriage = static_cast<const char*>(std::memchr(begin, '\r', length));
  return at + (carriage != nullptr ? static_cast<std::size_t>(carriage - begin) : length);
}

} // namespace

std::vector<std::string> SseParser::feed(std::string_view chunk) {
  std::vector<std::string> events;
  std::size_t at = 0;
  // Lines wholly inside the chunk are read where they are; only a line the chunk cuts is
  // gathered in m_line. Only line breaks are looked at one by one.
  while (at < chunk.size()) {
    if (m_after_cr) {
      m_after_cr = false;
      // The second half of a "\r\n" whose '\r' already ended the line.
      if (chunk[at] == '\n') {
        ++at;
        continue;
      }
    }
    const std::size_t end = line_end(chunk, at);
    if (end == chunk.size()) {
      m_line.append(chunk.substr(at));
      break;
    }
    m_after_cr = chunk[end] == '\r';
    if (m_line.empty()) {
      process_line(chunk.substr(at, end - at), events);
    } else {
      m_line.append(chunk.substr(at, end - at));
      process_line(m_line, events);
      m_line.clear();
    }
    at = end + 1;
  }
  return events;
}

std::vector<std::string> SseParser::finish() {
  std::vector<std::string> events;
  if (!m_line.empty()) {
    process_line(m_line, events);
    m_line.clear();
  }
  if (m_has_data) events.push_back(std::move(m_data));
  m_data.clear();
  m_has_data = false;
  m_after_cr = false;
  return events;
}

void SseParser::process_line(std::string_view line, std::vector<std::string>& events) {
  if (m_first_line) {
    m_first_line = false;
    if (line.substr(0, k_byte_order_mark.size()) == k_byte_order_mark)
      line.remove_prefix(k_byte_order_mark.size());
  }
  if (line.empty()) {
    // A blank line dispatches the event, if it carried any data line.
    if (m_has_data) events.push_back(std::move(m_data));
    m_data.clear();
    m_has_data = false;
  } else if (line.front() != ':') {
    std::string_view field = line;
    std::string_view value;
    if (auto colon = line.find(':'); colon != std::string_view::npos) {
      field = line.substr(0, colon);
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (m_has_data) m_data.push_back('\n');
      m_data.append(value);
      m_has_data = true;
    }
  }
}

} // namespace llmrepro::probes
