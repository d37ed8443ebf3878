#include "probes/sse_parser.hpp"

namespace llmrepro::probes {

namespace {

constexpr std::string_view k_byte_order_mark = "\xEF\xBB\xBF";

} // namespace

std::vector<std::string> SseParser::feed(std::string_view chunk) {
  std::vector<std::string> events;
  std::size_t at = 0;
  // Whole runs of line content are appended at once; only line breaks are looked at one by one.
  while (at < chunk.size()) {
    if (m_after_cr) {
      m_after_cr = false;
      // The second half of a "\r\n" whose '\r' already ended the line.
      if (chunk[at] == '\n') {
        ++at;
        continue;
      }
    }
    std::size_t end = chunk.find_first_of("\r\n", at);
    if (end == std::string_view::npos) {
      m_line.append(chunk.substr(at));
      break;
    }
    m_line.append(chunk.substr(at, end - at));
    m_after_cr = chunk[end] == '\r';
    process_line(events);
    at = end + 1;
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

void SseParser::process_line(std::vector<std::string>& events) {
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
