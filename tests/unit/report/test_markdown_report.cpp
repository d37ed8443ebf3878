#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "report/markdown_report.hpp"
#include "tests/unit/report/reviewer_fixture.hpp"

using namespace llmrepro;

namespace {

// Cells of a GFM table row: split on '|' (escaped text never holds a raw one).
std::size_t cells(const std::string &row) {
  std::size_t pipes = 0;
  for (char c : row)
    pipes += c == '|' ? 1 : 0;
  return pipes - 1;
}

} // namespace

TEST_CASE("markdown_escape") {
  SUBCASE("table, code, emphasis and HTML characters become references") {
    CHECK(report::markdown_escape("a|b`c`*d*_e_<img onerror=x>&") ==
          "a&#124;b&#96;c&#96;&#42;d&#42;&#95;e&#95;&#60;img onerror=x&#62;&#38;");
  }
  SUBCASE("newlines are shown, control characters dropped, long text cut") {
    CHECK(report::markdown_escape("a\nb\x1b[0m\tc") == "a\u23ceb&#91;0m c");
    CHECK(report::markdown_escape("\u00e9\u00e9\u00e9\u00e9", 2) == "\u00e9\u00e9\u2026");
  }
}

TEST_CASE("render_markdown") {
  const auto fixture = test::make_fixture();
  const std::string md = report::render_markdown(fixture->report);
  CHECK(md.rfind("## llmrepro audit: \u274c FAIL\n", 0) == 0);
  CHECK(md.find("| unstable prompts | 2 of 5 (c=1: 1 \u00b7 c=8: 2) |") != std::string::npos);
  CHECK(md.find("| fragile prompts | 3 |") != std::string::npos);
  CHECK(md.find("| TARr | 40.0% |") != std::string::npos);
  CHECK(md.find("- \u274c `fail_on`: 2 of 5 prompts unstable (--fail-on unstable)") !=
        std::string::npos);
  CHECK(md.find(
            "| capital | 3 | 3 | 0.03 | \u201c Queens\u201d -0.680 vs \u201c New\u201d -0.710 |") !=
        std::string::npos);
  SUBCASE("hostile text cannot break the table or inject HTML") {
    CHECK(md.find("<") == std::string::npos);
    CHECK(md.find("hostile&#60;b&#62;\"id\"&#60;/b&#62;") != std::string::npos);
    std::istringstream lines(md);
    std::string line;
    bool in_worst = false;
    int rows = 0;
    while (std::getline(lines, line)) {
      if (line.rfind("| prompt |", 0) == 0) in_worst = true;
      if (in_worst && line.rfind("|", 0) == 0) {
        CHECK_MESSAGE(cells(line) == 5, line);
        ++rows;
      }
    }
    CHECK(rows == 2 + 3); // header, separator, three worst prompts
  }
  SUBCASE("short enough for a pull-request comment") {
    CHECK(md.size() < 2000);
  }
}
