#include "core/suite.hpp"

namespace llmrepro::core {

const char* to_string(Expectation::Kind kind) {
  switch (kind) {
  case Expectation::Kind::none: return "none";
  case Expectation::Kind::regex: return "regex";
  case Expectation::Kind::contains: return "contains";
  case Expectation::Kind::equals: return "equals";
  case Expectation::Kind::json_path: return "json_path";
  case Expectation::Kind::choice: return "choice";
  case Expectation::Kind::number: return "number";
  }
  return "none";
}

const char* to_string(Extraction::Kind kind) {
  switch (kind) {
  case Extraction::Kind::none: return "none";
  case Extraction::Kind::regex: return "regex";
  case Extraction::Kind::json_path: return "json_path";
  case Extraction::Kind::choice: return "choice";
  case Extraction::Kind::number: return "number";
  case Extraction::Kind::last_line: return "last_line";
  }
  return "none";
}

} // namespace llmrepro::core
