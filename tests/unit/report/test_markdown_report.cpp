#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "report/markdown_report.hpp"
#include "tests/support/audit_report_fixture.hpp"
#include "tests/support/audit_sections_fixture.hpp"
#include "tests/support/reviewer_fixture.hpp"

using namespace llmrepro;

namespace {

// Cells of a GFM table row: split on '|' (escaped text never holds a raw one).
std::size_t cells(const std::string& row) {
  std::size_t pipes = 0;
  for (char c : row) pipes += c == '|' ? 1 : 0;
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
  // The headline verbatim as the first line after the title; its markup written as references.
  CHECK(md.rfind("## llmrepro audit: \u274c FAIL\n\nFAIL: 2 of 2 gates failed: 8 of 40 requests "
                 "failed after their retries (8 x HTTP 500: &#60;html&#62;oops&#60;/html&#62;), "
                 "limit 0.000 (--max-failed-rate)\n\n",
                 0) == 0);
  // The two predictors in one row, and each level's noise in its own.
  CHECK(md.find("| flip predictors | p_flip Brier ") != std::string::npos);
  CHECK(md.find(" · gap rule (τ 0.05) Brier ") != std::string::npos);
  CHECK(md.find("| noise at c=1 | ") != std::string::npos);
  CHECK(md.find("| noise at c=8 | ") != std::string::npos);
  CHECK(
      md.find("| stable prompts | 2 of 5 |\n| unstable prompts | 2 of 5 |\n| inconclusive "
              "prompts | 1 of 5 |\n| stability tiers | bitwise 2 \u00b7 token 0 \u00b7 unstable 2 "
              "\u00b7 inconclusive 1 |\n| max logprob drift | 0 nats |\n| fragile prompts | 3 "
              "|\n| fragility unknown | 1 |\n") != std::string::npos);
  CHECK(md.find("| TARr | 40.0% |") != std::string::npos);
  // The fixture's stable prompts agree bit for bit: 46 positions compared at c=1, 40 at c=8.
  CHECK(md.find("\n| level | unstable | inconclusive | differs from serial | logprob drift |\n"
                "|---:|---:|---:|---:|---:|\n| c=1 | 1 | 1 | serial | 0 nats over 46 positions |\n"
                "| c=8 | 2 | 1 | 0 | 0 nats over 40 positions |\n") != std::string::npos);
  CHECK(md.find(
            "\n| | gate | scope | measured | limit | |\n|---|---|---|---:|---:|---|\n"
            "| \u274c | --max-failed-rate | whole audit | 0.2 | 0 | 8 of 40 requests failed after "
            "their retries (8 x HTTP 500: &#60;html&#62;oops&#60;/html&#62;), limit 0.000 "
            "(--max-failed-rate) |\n"
            "| \u274c | --fail-on unstable | endpoint 0 \u00b7 sweep | 2 | 0 | 2 of 4 judged "
            "prompts unstable, 1 inconclusive (--fail-on unstable) |\n") != std::string::npos);
  CHECK(md.find("| capital | unstable, fragile | 3 | 3 | 0.03 | \u201c Queens\u201d -0.680 vs "
                "\u201c New\u201d -0.710 |") != std::string::npos);
  CHECK(md.find("| broken | inconclusive | 0 | \u2013 | \u2013 | \u2013 |") != std::string::npos);
  CHECK(md.find("Warnings") == std::string::npos);
  CHECK(md.find("could not be judged") == std::string::npos);
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
        CHECK_MESSAGE(cells(line) == 6, line);
        ++rows;
      }
    }
    CHECK(rows == 2 + 4); // header, separator, four worst prompts (one inconclusive)
  }
  SUBCASE("short enough for a pull-request comment") { CHECK(md.size() < 3000); }
}

TEST_CASE("render_markdown verdict states, errors and warnings") {
  const auto fixture = test::make_fixture();
  core::Verdict& verdict = fixture->report.verdict;
  SUBCASE("a stability-gated pass") {
    verdict.status = core::VerdictStatus::pass;
    verdict.headline = "PASS: 2 gates passed";
    CHECK(report::render_markdown(fixture->report)
              .rfind("## llmrepro audit: \u2705 PASS\n\nPASS: 2 gates passed\n\n", 0) == 0);
  }
  SUBCASE("a pass without a stability gate is no PASS") {
    verdict.status = core::VerdictStatus::pass;
    verdict.stability_gated = false;
    verdict.headline = "NO STABILITY GATE: 2 of 4 prompts unstable, 1 inconclusive";
    const std::string md = report::render_markdown(fixture->report);
    CHECK(md.rfind("## llmrepro audit: \u26a0\ufe0f NO STABILITY GATE\n\nNO STABILITY GATE: 2 of 4 "
                   "prompts unstable, 1 inconclusive\n\n",
                   0) == 0);
    CHECK(md.find("PASS") == std::string::npos);
  }
  SUBCASE("an error with its reasons, and the warnings") {
    verdict.status = core::VerdictStatus::error;
    verdict.errors = {"interrupted: 3 of 40 planned requests recorded",
                      "the run stopped: <b>refused</b> | x"};
    verdict.headline = "ERROR: the audit could not be judged: interrupted: 3 of 40 planned "
                       "requests recorded (and 1 more)";
    fixture->report.warnings = {"the endpoint answered as 2 models (a: 1, <img>: 1)"};
    const std::string md = report::render_markdown(fixture->report);
    CHECK(md.rfind("## llmrepro audit: \u26d4 ERROR\n\nERROR: the audit could not be judged: "
                   "interrupted: 3 of 40 planned requests recorded (and 1 more)\n\n",
                   0) == 0);
    CHECK(md.find("\nThe audit could not be judged:\n\n- \u26d4 interrupted: 3 of 40 planned "
                  "requests recorded\n- \u26d4 the run stopped: &#60;b&#62;refused&#60;/b&#62; "
                  "&#124; x\n") != std::string::npos);
    CHECK(md.find("\n**Warnings**\n\n- \u26a0\ufe0f the endpoint answered as 2 models (a: 1, "
                  "&#60;img&#62;: 1)\n") != std::string::npos);
    CHECK(md.find("<") == std::string::npos);
  }
}

TEST_CASE("render_markdown logprob drift") {
  const auto fixture = test::make_fixture();
  auto& summary = fixture->report.analysis.summary;
  SUBCASE("a drift rounded to three digits, per level with its positions") {
    summary.bitwise_stable_prompts = 1;
    summary.max_logprob_drift = 0.0009765625;
    summary.by_concurrency[1].logprob_drift = {0.0009765625, 0.0009765625, 12};
    const std::string md = report::render_markdown(fixture->report);
    CHECK(md.find("| stability tiers | bitwise 1 \u00b7 token 1 \u00b7 unstable 2 \u00b7 "
                  "inconclusive 1 |\n| max logprob drift | 0.000977 nats |\n") !=
          std::string::npos);
    CHECK(md.find("| c=8 | 2 | 1 | 0 | 0.000977 nats over 12 positions |\n") != std::string::npos);
  }
  SUBCASE("nothing compared") {
    summary.max_logprob_drift.reset();
    for (auto& level : summary.by_concurrency) level.logprob_drift = {};
    const std::string md = report::render_markdown(fixture->report);
    CHECK(md.find("| max logprob drift | no logprobs compared |\n") != std::string::npos);
    CHECK(md.find("| c=1 | 1 | 1 | serial | no logprobs compared |\n") != std::string::npos);
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
                  "requests (failed) | per level | bitwise | max logprob drift |\n") !=
          std::string::npos);
    CHECK(md.find("| sweep | 0 of 2 | 2 | 100.0% | 100.0% | 8 (1) | c=1: 0 unstable, 100.0 "
                  "tok/s, 12.5 ms \u00b7 c=4: 0 unstable, 300.0 tok/s, 40.5 ms | 2 | 0 nats |\n") !=
          std::string::npos);
    CHECK(md.find("| mixed | 1 of 2 | 3 | 50.0% | 100.0% | 8 (1) | c=1: 1 unstable, 80.0 tok/s, "
                  "12.5 ms \u00b7 c=4: 1 unstable, 240.0 tok/s, 40.5 ms | 1 | 0.0625 nats |\n") !=
          std::string::npos);
    CHECK(md.find("| prefix | 2 of 2 | 4 | 0.0% | 50.0% |") != std::string::npos);
  }
  SUBCASE("inconclusive prompts beside the unstable ones") {
    fixture->report.probes[1].analysis.summary.inconclusive_prompts = 1;
    fixture->report.endpoints[1].summary.inconclusive_prompts = 2;
    const std::string again = report::render_markdown(fixture->report);
    CHECK(again.find("| mixed | 1 of 2 (1 inconclusive) | 3 |") != std::string::npos);
    CHECK(again.find("&#96;v1&#96; | 1 of 2 (2 inconclusive) | 50.0% |") != std::string::npos);
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
                  "tok/s, 40.5 ms | 1 | 0.0625 nats |\n") != std::string::npos);
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

TEST_CASE("render_markdown: what the requests used, overall and per level, and its cost") {
  const auto fixture = test::make_report_fixture();
  const std::string md = report::render_markdown(fixture->report);
  CHECK(md.find("\n| usage | tokens in 400 (16 of 17 requests reported theirs) \u00b7 out 170 "
                "(30 reasoning) \u00b7 cost at least 0.00216 |\n| usage per level | c=1: tokens "
                "in 216 \u00b7 out 90 (18 reasoning) \u00b7 cost 0.001152; c=8: tokens in 184 (7 "
                "of 8 requests reported theirs) \u00b7 out 80 (12 reasoning) \u00b7 cost at least "
                "0.001008 |\n") != std::string::npos);
  SUBCASE("no price: tokens alone") {
    fixture->report.analysis.summary.usage.cost.reset();
    const std::string unpriced = report::render_markdown(fixture->report);
    CHECK(unpriced.find("| usage | tokens in 400 (16 of 17 requests reported theirs) \u00b7 out "
                        "170 (30 reasoning) |\n") != std::string::npos);
  }
}
