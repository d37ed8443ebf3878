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

// The powers of ten that are exact doubles, 10^0 to 10^22.
inline constexpr double k_powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
inline constexpr int k_largest_exact_power = 22;

// Whether ±`mantissa` x 10^`exponent` reads back without text: a mantissa up to 2^53 and a power
// of ten up to 10^22 are exact doubles, so one product or quotient is the nearest double, as
// from_chars reads it (Clinger's fast path). Most log probabilities a response held take this way,
// so the decoder takes it inline and calls decimal_value() for the rest.
inline bool has_exact_value(std::uint64_t mantissa, int exponent) {
  return mantissa <= (std::uint64_t{1} << 53) && exponent >= -k_largest_exact_power &&
         exponent <= k_largest_exact_power;
}

// The value of a decimal that has_exact_value().
inline double exact_value(bool negative, std::uint64_t mantissa, int exponent) {
  const auto exact = static_cast<double>(mantissa);
  const double value =
      exponent < 0 ? exact / k_powers_of_ten[-exponent] : exact * k_powers_of_ten[exponent];
  return negative ? -value : value;
}

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
