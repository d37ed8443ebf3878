// libFuzzer target for the SSE parser: the input is fed whole, then again split at positions
// taken from its first bytes, and both must give the same events (the parser is chunk-agnostic).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "probes/sse_parser.hpp"

namespace {

std::vector<std::string> parse(std::string_view text, std::size_t step) {
  llmrepro::probes::SseParser parser;
  std::vector<std::string> events;
  for (std::size_t at = 0; at < text.size(); at += step) {
    auto more = parser.feed(text.substr(at, step));
    events.insert(events.end(), more.begin(), more.end());
  }
  auto rest = parser.finish();
  events.insert(events.end(), rest.begin(), rest.end());
  return events;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 7;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (parse(text, text.size() + 1) != parse(text, step)) std::abort();
  return 0;
}
