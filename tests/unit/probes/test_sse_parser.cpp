// SseParser: event framing, however the bytes are split.
#include <doctest/doctest.h>

#include "probes/sse_parser.hpp"

using llmrepro::probes::SseParser;

namespace {

std::vector<std::string> parse_whole(std::string_view body) {
  SseParser parser;
  auto events = parser.feed(body);
  for (auto& event : parser.finish()) events.push_back(event);
  return events;
}

std::vector<std::string> parse_split(std::string_view body, std::size_t at) {
  SseParser parser;
  auto events = parser.feed(body.substr(0, at));
  for (auto& event : parser.feed(body.substr(at))) events.push_back(event);
  for (auto& event : parser.finish()) events.push_back(event);
  return events;
}

} // namespace

TEST_CASE("SseParser framing") {
  SUBCASE("events, [DONE] and line endings") {
    auto events =
        parse_whole("data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\ndata: x\r\rdata: [DONE]\n\n");
    REQUIRE(events.size() == 4);
    CHECK(events[0] == "{\"a\":1}");
    CHECK(events[1] == "{\"b\":2}");
    CHECK(events[2] == "x");
    CHECK(events[3] == "[DONE]");
  }
  SUBCASE("multi-line data, comments, other fields, no space after the colon") {
    auto events =
        parse_whole(": keep-alive\nevent: message\nid: 7\ndata:one\ndata:  two\nretry: 5\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0] == "one\n two");
  }
  SUBCASE("events without data are not dispatched; an empty data line is") {
    auto events = parse_whole("event: ping\n\n: comment\n\ndata\n\ndata:\n\n");
    REQUIRE(events.size() == 2);
    CHECK(events[0].empty());
    CHECK(events[1].empty());
  }
  SUBCASE("a byte-order mark before the first line") {
    auto events = parse_whole("\xEF\xBB\xBF"
                              "data: 1\n\n");
    REQUIRE(events.size() == 1);
    CHECK(events[0] == "1");
  }
  SUBCASE("finish() returns an event the body did not close") {
    CHECK(parse_whole("data: 1\n\ndata: 2\n") == std::vector<std::string>{"1", "2"});
    CHECK(parse_whole("data: 1\n\ndata: 2") == std::vector<std::string>{"1", "2"});
    CHECK(parse_whole("data: 1\n\n") == std::vector<std::string>{"1"});
  }
}

TEST_CASE("SseParser split at every byte boundary") {
  const std::string body =
      "\xEF\xBB\xBF: hello\r\ndata: {\"id\":1,\r\ndata: \"x\":2}\r\n\r\n"
      "data: second\r\rdata: third\n\nevent: e\ndata: fourth\n\ndata: [DONE]\n\n";
  const auto expected = parse_whole(body);
  REQUIRE(expected.size() == 5);
  CHECK(expected[0] == "{\"id\":1,\n\"x\":2}");
  CHECK(expected[3] == "fourth");
  for (std::size_t at = 0; at <= body.size(); ++at) {
    INFO("split at " << at);
    CHECK(parse_split(body, at) == expected);
  }
  SseParser parser;
  std::vector<std::string> one_by_one;
  for (char c : body)
    for (auto& event : parser.feed(std::string_view(&c, 1))) one_by_one.push_back(event);
  for (auto& event : parser.finish()) one_by_one.push_back(event);
  CHECK(one_by_one == expected);
  CHECK(parser.pending_bytes() == 0);
}
