#include "core/audit.hpp"

namespace llmrepro::core {

const char* to_string(FailOn fail_on) {
  switch (fail_on) {
  case FailOn::none: return "none";
  case FailOn::unstable: return "unstable";
  case FailOn::fragile: return "fragile";
  }
  return "none";
}

Result<FailOn> parse_fail_on(const std::string& text) {
  if (text == "none") return FailOn::none;
  if (text == "unstable") return FailOn::unstable;
  if (text == "fragile") return FailOn::fragile;
  return make_error(ErrorCode::usage,
                    "unknown --fail-on value '" + text + "' (expected none, unstable or fragile)");
}

} // namespace llmrepro::core
