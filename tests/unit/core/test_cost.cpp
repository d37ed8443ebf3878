#include <doctest/doctest.h>

#include <string>

#include "core/cost.hpp"

using namespace llmrepro::core;

TEST_CASE("--price reads input and output per million tokens, in either order") {
  const Price price = parse_price("input=0.15,output=0.6").value();
  CHECK(price.input_per_million == 0.15);
  CHECK(price.output_per_million == 0.6);
  CHECK(parse_price("output=0.6,input=0.15").value() == price);
  CHECK(to_string(price) == "input=0.15,output=0.6");
  CHECK(parse_price(to_string(price)).value() == price);
  CHECK(parse_price("input=0,output=0").value() == Price{});
  // 1,000 prompt tokens at 0.15 and 500 completion tokens at 0.6 per million.
  CHECK(cost_of(price, 1000, 500) == doctest::Approx(0.00045).epsilon(1e-12));
  CHECK(cost_of(Price{2.0, 8.0}, 1e6, 1e6) == 10.0);
}

TEST_CASE("a bad --price names what is wrong") {
  const auto message = [](const std::string& text) {
    const auto parsed = parse_price(text);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::usage);
    return parsed.error().message;
  };
  const std::string expected = " (expected input=X,output=Y in currency per million tokens, "
                               "e.g. input=0.15,output=0.60)";
  CHECK(message("input=0.15") == "--price 'input=0.15': output is missing" + expected);
  CHECK(message("output=1") == "--price 'output=1': input is missing" + expected);
  CHECK(message("input=-1,output=1") ==
        "--price 'input=-1,output=1': the input price must be a finite number of at least 0" +
            expected);
  CHECK(message("input=nan,output=1").find("finite number") != std::string::npos);
  CHECK(message("input=1,output=1,input=2") ==
        "--price 'input=1,output=1,input=2': input is given twice" + expected);
  CHECK(message("input=1,cached=0.5,output=2") ==
        "--price 'input=1,cached=0.5,output=2': unknown key 'cached'" + expected);
  CHECK(message("input 1") == "--price 'input 1': 'input 1' is not key=value" + expected);
  CHECK(message("") == "--price '': input is missing" + expected);
}
