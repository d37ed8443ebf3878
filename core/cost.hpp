// What an audit's tokens cost on a hosted API: the price per million tokens (--price) and the
// cost of a count of prompt and completion tokens.
#pragma once

#include <string>

#include "core/result.hpp"

namespace llmrepro::core {

// US dollars (or any one currency) per million tokens. Reasoning tokens are billed as output:
// they are counted within a completion's completion_tokens.
struct Price {
  double input_per_million = 0.0;
  double output_per_million = 0.0;
  friend bool operator==(const Price&, const Price&) = default;
};

// "input=0.15,output=0.60": both keys, each once, finite and not negative, in either order;
// else a usage error naming --price and what was wrong.
Result<Price> parse_price(const std::string& text);

// The shortest decimal in fixed notation that reads back as `amount` ("0.5", "0.0001"): how
// prices and cost limits are printed.
std::string shortest_decimal(double amount);

// "input=0.15,output=0.6": what parse_price reads back as the same price.
std::string to_string(const Price& price);

// The cost of `prompt_tokens` in and `completion_tokens` out.
double cost_of(const Price& price, double prompt_tokens, double completion_tokens);

} // namespace llmrepro::core
