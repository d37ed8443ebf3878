// Timestamps as reports print them: ISO-8601 in UTC with milliseconds.
#pragma once

#include <cstdint>
#include <string>

namespace llmrepro::report {

// Formats milliseconds since the Unix epoch as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC, proleptic
// Gregorian calendar). Negative values are times before 1970, formatted the same way.
std::string format_iso_utc_ms(std::int64_t epoch_ms);

} // namespace llmrepro::report
