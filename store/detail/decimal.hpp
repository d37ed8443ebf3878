// Log probabilities as decimals, the token blob's most common form (docs/design.md, "Token
// blobs"): the double a stored decimal reads back as, and the shortest decimal of a double, which
// the encoder writes where it is shorter than the double's binary form. Private to store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace llmrepro::store::detail {

// mantissa x 10^exponent, negated when `negative` (-0.0123 is 123 x 10^-4, negative).
struct Decimal {
  bool negative = false;
  std::uint64_t mantissa = 0;
  int exponent = 0;
};

// The value of a stored decimal: the nearest double to ±`mantissa` x 10^`exponent`, as
// std::from_chars reads it (round to nearest); empty for a value beyond a double's range.
std::optional<double> decimal_value(bool negative, std::uint64_t mantissa, int exponent);

// Whether the encoder writes the finite `value` as a decimal, which it then sets `decimal` to: the
// shortest that reads back as `value` exactly (the digits std::to_chars prints), where its
// mantissa as a varint and its exponent byte take at most `binary` bytes (4 where the value is a
// float32, else 8: those of the binary form it would replace). `decimal` is left unspecified
// otherwise.
bool written_decimal(double value, std::size_t binary, Decimal& decimal);

// The bytes of `value` as a varint, 7 bits a byte, low bits first.
std::size_t varint_size(std::uint64_t value);

} // namespace llmrepro::store::detail
