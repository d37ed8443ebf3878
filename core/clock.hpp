// Time enters core through this interface so that analysis and planning are deterministic in tests.
#pragma once

#include <chrono>
#include <cstdint>

namespace llmrepro::core {

class Clock {
public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch (wall time, for records and reports).
  virtual std::int64_t now_ms() const = 0;
};

class SystemClock final : public Clock {
public:
  std::int64_t now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

} // namespace llmrepro::core
