// Decimals of log probabilities. A JSON response usually holds a log probability as a short
// decimal (-0.0123), which its parser turned into the nearest double; the token blob stores that
// decimal, proven by reading it back, where it is shorter than the double's 8 bytes (or a float32's
// 4). Finding it used to mean printing every value with std::to_chars; most values are now settled
// by one scaled product and one read-back instead (short_decimal_of()), with the same result, and
// printing is left to the rare values outside that search's reach.
#include "store/detail/decimal.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>

namespace llmrepro::store::detail {
namespace {

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// Whether `decimal` reads back as exactly `value`, decoded as the decoder will.
bool reads_back(const Decimal& decimal, double value) {
  const auto read = decimal_value(decimal.negative, decimal.mantissa, decimal.exponent);
  return read && same_bits(*read, value);
}

// The shortest round-trip decimal of a finite `value`, printed by std::to_chars and parsed, when
// it fits (the exponent in a signed byte); reads_back() proves it.
std::optional<Decimal> printed_decimal(double value) {
  char text[64];
  const auto written =
      std::to_chars(text, text + sizeof(text), value, std::chars_format::scientific);
  if (written.ec != std::errc()) return std::nullopt;
  const std::string_view shortest(text, static_cast<std::size_t>(written.ptr - text));
  const std::size_t e = shortest.find('e');
  if (e == std::string_view::npos) return std::nullopt;
  Decimal decimal;
  decimal.negative = shortest.front() == '-';
  int digits_after_point = 0;
  bool after_point = false;
  for (std::size_t i = decimal.negative ? 1 : 0; i < e; ++i) {
    const char c = shortest[i];
    if (c == '.') {
      after_point = true;
      continue;
    }
    if (decimal.mantissa > std::numeric_limits<std::uint64_t>::max() / 10) return std::nullopt;
    decimal.mantissa = decimal.mantissa * 10 + static_cast<std::uint64_t>(c - '0');
    if (after_point) ++digits_after_point;
  }
  const auto parsed = std::from_chars(shortest.data() + e + 1 + (shortest[e + 1] == '+' ? 1 : 0),
                                      shortest.data() + shortest.size(), decimal.exponent);
  if (parsed.ec != std::errc()) return std::nullopt;
  decimal.exponent -= digits_after_point;
  if (decimal.exponent < -128 || decimal.exponent > 127) return std::nullopt;
  return decimal;
}

// Drops the trailing zeros of a mantissa below 10^16 (at most 15: 8 + 4 + 2 + 1), raising the
// exponent; by constant divisors, which compile to multiplications.
void drop_trailing_zeros(Decimal& decimal) {
  const auto drop = [&](std::uint64_t power, int zeros) {
    if (decimal.mantissa % power == 0) {
      decimal.mantissa /= power;
      decimal.exponent += zeros;
    }
  };
  drop(100000000, 8);
  drop(10000, 4);
  drop(100, 2);
  drop(10, 1);
}

// What short_decimal_of() found out about a value's shortest decimal.
enum class Search {
  found,    // it is the decimal found, which reads back exactly
  too_long, // it has more digits than were asked for
  unknown,  // not found out: print the value (printed_decimal())
};

// The shortest decimal of a finite `value` when it has at most `digits` significant digits (at
// most 15), found without printing the value.
//
// The decimals of at most `digits` digits near |value| are multiples of one power of ten, 10^k,
// with k chosen so that |value| / 10^k has exactly `digits` digits before the point. A double's
// rounding interval (the reals that read back as it) is at most 2^-52 of it wide, less than one
// step of 10^k, so at most one multiple lies inside it: the nearest to |value|, within 2^-53 of
// it. The one rounded product that scales |value| errs by as little, so rounding it to an integer
// finds that multiple (the two errors stay under a quarter step). So if the nearest multiple reads
// back as `value`, no other decimal of at most `digits` digits does, and without its trailing
// zeros it is the shortest decimal of all: what to_chars prints (the fewest digits; among those,
// the nearest). If it does not read back, none of at most `digits` digits does. Where 10^k is no
// exact double (|k| > 22), the search gives up.
Search short_decimal_of(double value, int digits, Decimal& decimal) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  decimal.negative = (bits >> 63) != 0;
  if (value == 0) { // to_chars prints a zero as 0e+00, whatever its sign
    decimal.mantissa = 0;
    decimal.exponent = 0;
    return Search::found;
  }
  const double magnitude = std::fabs(value);
  const double smallest = k_powers_of_ten[digits - 1];
  const double largest = k_powers_of_ten[digits];
  // floor(e2 x log10(2)) for the binary exponent e2: about |value|'s decimal exponent, corrected
  // below until the scaled value has `digits` digits.
  const int binary_exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  int exponent = ((binary_exponent * 78913) >> 18) - (digits - 1);
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (exponent < -k_largest_exact_power || exponent > k_largest_exact_power)
      return Search::unknown;
    const double scaled = exponent < 0 ? magnitude * k_powers_of_ten[-exponent]
                                       : magnitude / k_powers_of_ten[exponent];
    if (scaled < smallest) {
      --exponent;
      continue;
    }
    // Within half a step of `scaled` (the sum rounds by at most 1/16 below 10^15 + 1): the
    // multiple, if one reads back, which is within a quarter step.
    const auto nearest = static_cast<std::uint64_t>(scaled + 0.5);
    if (static_cast<double>(nearest) > largest) {
      ++exponent;
      continue;
    }
    if (!same_bits(exact_value(decimal.negative, nearest, exponent), value))
      return Search::too_long;
    decimal.mantissa = nearest;
    decimal.exponent = exponent;
    drop_trailing_zeros(decimal);
    return Search::found;
  }
  return Search::unknown;
}

} // namespace

std::optional<double> decimal_value(bool negative, std::uint64_t mantissa, int exponent) {
  if (has_exact_value(mantissa, exponent)) return exact_value(negative, mantissa, exponent);
  // At most "-" + 20 digits + "e" + "-128": to_chars cannot run out of room.
  char text[64] = {};
  char* const limit = text + sizeof(text);
  char* end = text;
  if (negative) *end++ = '-';
  end = std::to_chars(end, limit - 8, mantissa).ptr;
  *end++ = 'e';
  end = std::to_chars(end, limit, exponent).ptr;
  double value = 0.0;
  const auto parsed = std::from_chars(text, end, value);
  if (parsed.ec != std::errc() || parsed.ptr != end) return std::nullopt;
  return value;
}

bool written_decimal(double value, std::size_t binary, Decimal& decimal) {
  // A longer decimal is not offered, nor parsed back (the costly part, for the decoder too): such
  // as the 17 digits of a float32 printed as a double. A mantissa of at most 3 or 7 varint bytes
  // (below 2^21 or 2^49) has at most 7 or 15 digits, so those are all the search needs.
  switch (short_decimal_of(value, binary == 4 ? 7 : 15, decimal)) {
  case Search::too_long: return false;
  case Search::found: break; // read back already
  case Search::unknown: {
    const auto printed = printed_decimal(value);
    if (!printed || !reads_back(*printed, value)) return false;
    decimal = *printed;
    break;
  }
  }
  return varint_size(decimal.mantissa) + 1 <= binary;
}

std::size_t varint_size(std::uint64_t value) {
  std::size_t size = 1;
  for (; value >= 0x80; value >>= 7) ++size;
  return size;
}

} // namespace llmrepro::store::detail
