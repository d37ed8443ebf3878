#include "probes/sse_parser.hpp"

namespace llmrepro::probes {

namespace {

constexpr std::string_view k_byte_order_mark = "\xEF\xBB\xBF";

} // namespace

std::vector<std::string> SseParser::feed(std::string_view chunk) {
  std::vector<std::string> events;
  for (char c : chunk) {
    if (c == '\n' && m_after_cr) {
      // The second half of a "\r\n" whose '\r' already ended the line.
      m_after_cr = false;
      continue;
    }
    m_after_cr = c == '\r';
    if (c == '\n' || c == '\r') {
      process_line(events);
      continue;
    }
    m_line.push_back(c);
  }
  return events;
}

std::vector<std::string> SseParser::finish() {
  std::vector<std::string> events;
  if (!m_line.empty()) process_line(events);
  if (m_has_data) events.push_back(std::move(m_data));
  m_data.clear();
  m_has_data = false;
  m_after_cr = false;
  return events;
}

void SseParser::process_line(std::vector<std::string> &events) {
  std::string_view line = m_line;
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
  m_line.clear();
}

} // namespace llmrepro::probes
