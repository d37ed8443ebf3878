#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "report/markdown_report.hpp"
#include "tests/unit/report/audit_sections_fixture.hpp"
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

TEST_CASE("render_markdown probe kinds, endpoint comparison and semantic agreement") {
  const auto fixture = test::make_fixture();
  const std::string plain = report::render_markdown(fixture->report);
  CHECK(plain.find("### Probe kinds") == std::string::npos);
  CHECK(plain.find("### Endpoints compared") == std::string::npos);
  CHECK(plain.find("### Semantic agreement") == std::string::npos);

  test::add_audit_sections(*fixture);
  const std::string md = report::render_markdown(fixture->report);
  const std::string hostile = "drift&#60;i&#62;&#124;&#96;x&#96;\u23ceid";
  SUBCASE("one row per probe kind, stability beside cost") {
    CHECK(md.find("\n### Probe kinds\n\n| probe | unstable | distinct completions | TARr | TARa | "
                  "requests (failed) | per level |\n") != std::string::npos);
    CHECK(md.find("| sweep | 0 of 2 | 2 | 100.0% | 100.0% | 8 (1) | c=1: 0 unstable, 100.0 "
                  "tok/s, 12.5 ms \u00b7 c=4: 0 unstable, 300.0 tok/s, 40.5 ms |\n") !=
          std::string::npos);
    CHECK(md.find("| mixed | 1 of 2 | 3 | 50.0% | 100.0% | 8 (1) | c=1: 1 unstable, 80.0 tok/s, "
                  "12.5 ms \u00b7 c=4: 1 unstable, 240.0 tok/s, 40.5 ms |\n") != std::string::npos);
    CHECK(md.find("| prefix | 2 of 2 | 4 | 0.0% | 50.0% |") != std::string::npos);
  }
  SUBCASE("prefix drift apart from batch drift, with the flushes") {
    CHECK(md.find("\nPrefix cache (warm against cold, apart from batch drift): 1 of 2 prompts "
                  "drift; 4 flushes through /reset&#95;prefix&#95;cache.\n") != std::string::npos);
    CHECK(md.find("| " + hostile + " | 1 | 1 | 5 |\n") != std::string::npos);
  }
  SUBCASE("endpoints compared") {
    CHECK(md.find("\n### Endpoints compared\n\n1 of 2 prompts give the same reference completion "
                  "on every endpoint (sweep probe).\n") != std::string::npos);
    CHECK(md.find("| 1 | http://127.0.0.1:9/&#60;b&#62;&#124;&#96;v1&#96; | 1 of 2 | 50.0% | "
                  "50.0% | c=1: 1 unstable, 250.0 tok/s, 12.5 ms \u00b7 c=4: 1 unstable, 750.0 "
                  "tok/s, 40.5 ms |\n") != std::string::npos);
    CHECK(md.find("| " + hostile + " | endpoint 1: from token 7 |\n") != std::string::npos);
    CHECK(md.find("| p1 |") == std::string::npos); // agreeing prompts are not listed
  }
  SUBCASE("semantic agreement, with the prompts below the threshold") {
    CHECK(md.find("\n### Semantic agreement\n\n50.0% of 2 prompts have every pair of distinct "
                  "completions at cosine \u2265 0.9 (embedding model embed&#60;x&#62;).\n") !=
          std::string::npos);
    CHECK(md.find("| capital | 3 | 0.8125 | 0.0625 | 0.7500 |\n") != std::string::npos);
  }
  SUBCASE("every table row keeps its cells; no HTML gets through") {
    CHECK(md.find("<") == std::string::npos);
    std::istringstream lines(md);
    std::string line;
    std::size_t expected = 0;
    while (std::getline(lines, line)) {
      if (line.rfind("|", 0) != 0) {
        expected = 0;
        continue;
      }
      if (expected == 0) expected = cells(line);
      CHECK_MESSAGE(cells(line) == expected, line);
    }
    CHECK(md.size() < 4000);
  }
}
