#include "core/cost.hpp"

#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace llmrepro::core {
namespace {

Error price_error(const std::string& text, const std::string& why) {
  return make_error(ErrorCode::usage, "--price '" + text + "': " + why +
                                          " (expected input=X,output=Y in currency per million "
                                          "tokens, e.g. input=0.15,output=0.60)");
}

// A finite, non-negative number spelling the whole of `text`.
std::optional<double> read_amount(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0.0)
    return std::nullopt;
  return value;
}

} // namespace

Result<Price> parse_price(const std::string& text) {
  Price price;
  bool have_input = false;
  bool have_output = false;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos)
      return price_error(text, "'" + std::string(item) + "' is not key=value");
    const std::string key(item.substr(0, equals));
    const auto amount = read_amount(std::string(item.substr(equals + 1)));
    if (!amount)
      return price_error(text, "the " + key + " price must be a finite number of at least 0");
    if (key == "input" && !have_input) {
      price.input_per_million = *amount;
      have_input = true;
    } else if (key == "output" && !have_output) {
      price.output_per_million = *amount;
      have_output = true;
    } else if (key == "input" || key == "output") {
      return price_error(text, key + " is given twice");
    } else {
      return price_error(text, "unknown key '" + key + "'");
    }
  }
  if (!have_input || !have_output)
    return price_error(text, have_input ? "output is missing" : "input is missing");
  return price;
}

std::string shortest_decimal(double amount) {
  // Fixed notation, never "1e-04": a person reads "0.0001". 512 places hold any double's.
  char buffer[512];
  const auto written =
      std::to_chars(buffer, buffer + sizeof buffer, amount, std::chars_format::fixed);
  return std::string(buffer, written.ptr);
}

std::string to_string(const Price& price) {
  return "input=" + shortest_decimal(price.input_per_million) +
         ",output=" + shortest_decimal(price.output_per_million);
}

double cost_of(const Price& price, double prompt_tokens, double completion_tokens) {
  return (prompt_tokens * price.input_per_million + completion_tokens * price.output_per_million) /
         1e6;
}

} // namespace llmrepro::core
