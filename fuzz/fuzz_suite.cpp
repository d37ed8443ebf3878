// libFuzzer target for the suite parser: any text gives a Suite or an input error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probes/suite_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)llmrepro::probes::parse_suite(text, "fuzz.jsonl");
  return 0;
}
