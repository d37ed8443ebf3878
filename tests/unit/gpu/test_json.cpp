#include <doctest/doctest.h>

#include <cmath>

#include "core/json_value.hpp"
#include "gpu/detail/json_writer.hpp"

using namespace llmrepro::gpu;

TEST_CASE("JsonWriter") {
  JsonWriter out;
  out.begin_object();
  out.key("a");
  out.value(std::int64_t{3});
  out.key("b");
  out.begin_array();
  out.value(1.0);
  out.value(0.25);
  out.value(std::nan(""));
  out.value(true);
  out.null();
  out.end_array();
  out.key("c");
  out.value("x");
  out.end_object();
  CHECK(out.str() == R"({"a":3,"b":[1.0,0.25,null,true,null],"c":"x"})");
}

TEST_CASE("JsonWriter output reads back with core::parse_json") {
  JsonWriter out;
  out.begin_array();
  out.value("quote\" backslash\\ newline\n");
  out.value(0.1);
  out.end_array();
  auto parsed = llmrepro::core::parse_json(out.str());
  REQUIRE(parsed.has_value());
  CHECK(parsed->array[0].string == "quote\" backslash\\ newline\n");
  CHECK(parsed->array[1].number == 0.1);
}
