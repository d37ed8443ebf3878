#include "report/detail/iso_time.hpp"

#include <chrono>
#include <cstdio>

namespace llmrepro::report {

std::string format_iso_utc_ms(std::int64_t epoch_ms) {
  using namespace std::chrono;
  // floor, not truncation, so that times before the epoch land on the right day and second.
  const sys_time<milliseconds> time{milliseconds{epoch_ms}};
  const sys_days day = floor<days>(time);
  const year_month_day date{day};
  const hh_mm_ss<milliseconds> clock{time - day};
  char buffer[48];
  std::snprintf(
      buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<int>(date.year()),
      static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
      static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
      static_cast<int>(clock.seconds().count()), static_cast<int>(clock.subseconds().count()));
  return buffer;
}

} // namespace llmrepro::report
