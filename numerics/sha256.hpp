// SHA-256 (FIPS 180-4) in plain C++: the digest the gpu-probe reports for run-to-run checks, so
// that two outputs' digests can be compared across machines and tools (sha256sum gives the
// same string for the same bytes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmrepro::numerics {

// Incremental SHA-256: update() any number of times, then digest() once.
class Sha256 {
public:
  Sha256();

  // Appends `size` bytes to the message.
  void update(const void* data, std::size_t size);

  // Pads the message and returns the 32-byte digest; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> digest();

private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> m_state;
  std::array<std::uint8_t, 64> m_buffer{};
  std::size_t m_buffered = 0;
  std::uint64_t m_length = 0; // message length in bytes
};

// Lower-case hex of the SHA-256 of `size` bytes.
std::string sha256_hex(const void* data, std::size_t size);

// Lower-case hex of the SHA-256 of a string's bytes.
std::string sha256_hex(std::string_view text);

} // namespace llmrepro::numerics
