// libFuzzer target for one dialect adapter: parse_response on the input as a plain body and as
// an SSE stream. The dialect comes from LLMREPRO_FUZZ_DIALECT, so one source makes a target per
// dialect. Any input must give a Completion or an error, never a crash or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probes/dialect.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  constexpr auto dialect = llmrepro::probes::Dialect::LLMREPRO_FUZZ_DIALECT;
  (void)llmrepro::probes::parse_response(dialect, body, false);
  (void)llmrepro::probes::parse_response(dialect, body, true);
  return 0;
}
