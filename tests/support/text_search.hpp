// Counting what a rendered report says: shared by the report tests.
#pragma once

#include <cstddef>
#include <string>

namespace llmrepro::test {

// How often `needle` occurs in `haystack`, overlapping occurrences included.
inline std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++count;
  return count;
}

} // namespace llmrepro::test
