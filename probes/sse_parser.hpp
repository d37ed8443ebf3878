// Incremental parser for Server-Sent Events (text/event-stream), the framing of streamed
// completions: `data: {...}` lines, events separated by a blank line, `data: [DONE]` at the end
// for the OpenAI family. Fed arbitrary byte chunks, so the transport can parse as bytes arrive.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmrepro::probes {

// Follows the WHATWG event-stream rules for what we read: lines end in "\r\n", "\n" or "\r"
// (also when split across chunks), `data` lines of one event are joined with "\n", one space
// after the colon is dropped, lines starting with ':' are comments, `event`, `id`, `retry` and
// unknown fields are ignored, an event with no data line is not dispatched, and a leading
// byte-order mark is skipped. Work is linear in the bytes fed.
class SseParser {
public:
  // Consumes `chunk` and returns the data of every event it completed, in order.
  std::vector<std::string> feed(std::string_view chunk);

  // Ends the stream. Returns the pending event when the body stopped without the blank line
  // that should close it (its unterminated last line included); the caller then decides
  // whether the data it holds is complete.
  std::vector<std::string> finish();

  // Bytes of the pending line and event: for callers that cap memory on hostile streams.
  std::size_t pending_bytes() const { return m_line.size() + m_data.size(); }

private:
  void process_line(std::string_view line, std::vector<std::string>& events);

  std::string m_line;
  std::string m_data;
  bool m_has_data = false;
  bool m_after_cr = false;  // the last byte was '\r': a '\n' next belongs to the same break
  bool m_first_line = true; // only the stream's first line may start with a byte-order mark
};

} // namespace llmrepro::probes
