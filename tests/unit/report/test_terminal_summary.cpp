#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include "audit_report_fixture.hpp"
#include "report/terminal_summary.hpp"

using namespace llmrepro;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

} // namespace

TEST_CASE("escape_terminal_text") {
  using report::escape_terminal_text;
  SUBCASE("plain text and UTF-8 pass through") {
    CHECK(escape_terminal_text("Born in Queens, café ♛", 0) == "Born in Queens, café ♛");
  }
  SUBCASE("controls become visible escapes") {
    CHECK(escape_terminal_text("a\x1b[31mb\tc\nd\re\x07\x7f\\", 0) ==
          "a\\x1b[31mb\\tc\\nd\\re\\x07\\x7f\\\\");
  }
  SUBCASE("C1 controls, bidi overrides and invalid UTF-8") {
    CHECK(escape_terminal_text("\xc2\x9b" "2J", 0) == "\\u{009b}2J");
    CHECK(escape_terminal_text("\u202egnp.exe\u2066", 0) == "\\u{202e}gnp.exe\\u{2066}");
    CHECK(escape_terminal_text("a\xff\xc0\xafz\xe2\x82", 0) == "a\\xff\\xc0\\xafz\\xe2\\x82");
    CHECK(escape_terminal_text("\xed\xa0\x80", 0) == "\\xed\\xa0\\x80"); // a UTF-16 surrogate
  }
  SUBCASE("truncated to the width with an ellipsis, never inside an escape") {
    CHECK(escape_terminal_text("abcdef", 6) == "abcdef");
    CHECK(escape_terminal_text("abcdefg", 6) == "abcde\u2026");
    CHECK(escape_terminal_text("ééééééé", 4) == "ééé\u2026");
    CHECK(escape_terminal_text("ab\x1b[0m", 5) == "ab\u2026");
  }
}

TEST_CASE("render_terminal_summary") {
  const auto fixture = test::make_report_fixture();

  SUBCASE("the expected lines, without color") {
    const std::string text = report::render_terminal_summary(fixture->report, false);
    CHECK(text.find('\x1b') == std::string::npos);
    const auto lines = lines_of(text);
    REQUIRE(lines.size() == 15);
    CHECK(lines[0] == "llmrepro audit audit-1700000000123  (complete)");
    CHECK(lines[1] == "endpoint   http://127.0.0.1:8000   model tiny-model   dialect openai-chat");
    CHECK(lines[2] == "prompts    3   requests 18   failed 1");
    CHECK(lines[3] == "unstable   2 of 3   c=1: 0  c=8: 2");
    CHECK(lines[4] == "fragile    2 of 3   (top-2 gap < 0.05 nats within the first 50 tokens)");
    CHECK(lines[5] == "           prompts without logprobs: 1 (judged on text alone)");
    CHECK(lines[6] == "TARr       33.3%   TARa n/a");
    CHECK(lines[7] == "predictor  precision 0.50  recall n/a  (tp 1 fp 1 fn 1 tn 0)");
    CHECK(lines[8] == "worst prompts");
    CHECK(lines[9] == "  queens                   3 unique  diverges at token 102  gap 0.0123  "
                      "\" Queens\" (-0.6931) vs \" Manhattan\" (-0.7054)");
    CHECK(lines[10] == "  hostile\\x1b[2J\\x1b]0;pw\u2026 2 unique  diverges at token 0  "
                       "\"\\x1b[31mred\\r\\n\u2026\" (-1.0000) vs \"\\u{202e}gnp.exe\" (-1.5000)"
                       "  (no logprobs)");
    CHECK(lines[11] == "  stable                   1 unique  stable, min gap 0.0100 at token 7");
    CHECK(lines[12] == "FAIL");
    CHECK(lines[13] == "  fail_on: 2 of 3 prompts unstable (fail_on unstable)");
    CHECK(lines[14] == "  max_unique: prompt 'queens' has 3 distinct completions, more than 2");
  }
  SUBCASE("color only when asked") {
    const std::string text = report::render_terminal_summary(fixture->report, true);
    CHECK(text.find("\x1b[1;31mFAIL\x1b[0m\n") != std::string::npos);
    CHECK(text.find("\x1b[33m2 of 3\x1b[0m") != std::string::npos);
    // The only escapes are ours: every ESC starts one of the three SGR codes used.
    for (std::size_t at = text.find('\x1b'); at != std::string::npos; at = text.find('\x1b', at + 1)) {
      const std::string rest = text.substr(at, 7);
      const bool ours = rest.rfind("\x1b[0m", 0) == 0 || rest.rfind("\x1b[1m", 0) == 0 ||
                        rest.rfind("\x1b[33m", 0) == 0 || rest.rfind("\x1b[1;31m", 0) == 0;
      CHECK_MESSAGE(ours, "escape at " << at);
    }
  }
  SUBCASE("embedded engine, partial audit, a passing verdict, nothing to list") {
    fixture->data.endpoints[0].embedded = true;
    fixture->data.info.status = "partial";
    fixture->report.analysis.prompts.clear();
    fixture->report.verdict = {
        true, {{"fail_on", "no unstable prompts", true}, {"max_unique", "at most 1", true}}};
    const auto lines = lines_of(report::render_terminal_summary(fixture->report, false));
    CHECK(lines[0] == "llmrepro audit audit-1700000000123  (partial: 2 of 18 planned requests "
                      "recorded)");
    CHECK(lines[1] == "endpoint   embedded reference engine   model tiny-model   dialect openai-chat");
    CHECK(lines[lines.size() - 2] == "worst      none: every prompt stable and none fragile");
    CHECK(lines.back() == "PASS  (gates passed: fail_on, max_unique)");
  }
}
