// Deterministic randomness injected into core: the plan's shuffle must be reproducible for
// --resume.
#pragma once

#include <cstdint>

namespace llmrepro::core {

// SplitMix64: tiny, fast, and identical on every platform, so a seed names one shuffle everywhere.
class SplitMix64 {
public:
  explicit SplitMix64(std::uint64_t seed) : m_state(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound) without modulo bias worth caring about for shuffles (bound < 2^32).
  std::uint64_t below(std::uint64_t bound) { return bound == 0 ? 0 : next() % bound; }

  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  std::uint64_t m_state;
};

} // namespace llmrepro::core
