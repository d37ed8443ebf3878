#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include "tests/support/audit_report_fixture.hpp"
#include "tests/support/audit_sections_fixture.hpp"
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
    CHECK(escape_terminal_text("\xc2\x9b"
                               "2J",
                               0) == "\\u{009b}2J");
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

  SUBCASE("the expected lines, without color: the verdict first, then the warnings") {
    const std::string text = report::render_terminal_summary(fixture->report, false);
    CHECK(text.find('\x1b') == std::string::npos);
    const auto lines = lines_of(text);
    REQUIRE(lines.size() == 31);
    CHECK(lines[0] == test::k_fixture_headline);
    CHECK(lines[1] == "  \u2714 1 of 18 requests failed after their retries (1 x HTTP 503: queue "
                      "full), limit 0.100 (--max-failed-rate)");
    CHECK(lines[2] ==
          "  \u2718 2 of 2 judged prompts unstable, 1 inconclusive (--fail-on unstable)");
    CHECK(lines[3] ==
          "  \u2718 most distinct completions: 3 (prompt queens), limit 2 (--max-unique)");
    CHECK(lines[4] ==
          "warning: the endpoint answered as 2 models (tiny-model: 16, evil\\x1b[2J: 1): "
          "completions that differ may come from different models, not from batch drift");
    CHECK(lines[5] == "warning: the endpoint returned as few as 1 candidates at a position where "
                      "--top-logprobs asked for 2: gaps there are unknown");
    CHECK(lines[6] == "llmrepro audit audit-1700000000123  (complete)");
    CHECK(lines[7] == "endpoint   http://127.0.0.1:8000   model tiny-model   dialect openai-chat");
    CHECK(lines[8] == "prompts    3   requests 18   failed 1");
    CHECK(lines[9] == "stable     0 of 3   unstable 2   inconclusive 1");
    CHECK(lines[10] == "tiers      bitwise 0   token 0   unstable 2   inconclusive 1   max logprob "
                       "drift 0.333 nats");
    CHECK(lines[11] ==
          "  c=1      unstable 0   inconclusive 1   (serial)   drift 0 nats over 40 positions");
    CHECK(lines[12] == "  c=8      unstable 2   inconclusive 1   differs from serial 1   drift "
                       "0.333 nats over 100 positions");
    CHECK(lines[13] == "speed      c=1 812.5 tok/s, latency mean 20.2 ms, median 18 ms, p95 31 ms");
    CHECK(lines[14] ==
          "           c=8 unknown tok/s, latency mean 95.0 ms, median 90 ms, p95 140 ms");
    CHECK(lines[15] ==
          "usage      tokens in 400 (16 of 17 requests reported theirs) \u00b7 out 170 "
          "(30 reasoning) \u00b7 cost at least 0.00216");
    CHECK(lines[16] ==
          "           c=1 tokens in 216 \u00b7 out 90 (18 reasoning) \u00b7 cost 0.001152");
    CHECK(lines[17] ==
          "           c=8 tokens in 184 (7 of 8 requests reported theirs) \u00b7 out 80 "
          "(12 reasoning) \u00b7 cost at least 0.001008");
    CHECK(lines[18] == "fragile    2 of 3   (top-2 gap < 0.05 nats within the first 50 tokens)");
    CHECK(lines[19] ==
          "           fragility unknown: 1 of 3 (first: hostile\\x1b[2J\\x1b]0;pw\u2026: "
          "text mode: a completion came back without tokens)");
    CHECK(lines[20] == "           prompts without logprobs: 1 (judged on text alone)");
    CHECK(lines[21] == "failures   1 x HTTP 503: queue full");
    CHECK(lines[22] == "TARr       33.3%   TARa n/a");
    CHECK(lines[23] == "predictor  precision 0.50  recall n/a  (tp 1 fp 1 fn 1 tn 0)");
    CHECK(lines[24] == "flip model p_flip Brier 0.062 AUC n/a · gap rule (τ 0.05) Brier 0.000 "
                       "AUC n/a (1 prompt, 1 unstable) · noise implies τ 0.25");
    CHECK(lines[25] == "noise      c=1 zero (40 positions)");
    CHECK(lines[26] == "           c=8 median 0, p99 0.25, max 0.25 (100 positions, 10 moved)");
    CHECK(lines[27] == "worst prompts");
    CHECK(lines[28] == "  queens                   3 unique  diverges at token 102  gap 0.0123  "
                       "\" Queens\" (-0.6931) vs \" Manhattan\" (-0.7054)");
    CHECK(lines[29] == "  hostile\\x1b[2J\\x1b]0;pw\u2026 2 unique  diverges at char 0 (one "
                       "completion ends there)  \"\\x1b[31mred\\r\\n\u2026\" (-1.0000) vs "
                       "\"\\u{202e}gnp.exe\" (-1.5000)  (no logprobs)");
    CHECK(lines[30] == "  stable                   1 unique  inconclusive (5 successful, 1 failed)"
                       "  min gap 0.0100 at token 7");
    CHECK(text.find("every prompt stable") == std::string::npos);
  }
  SUBCASE("the stability tiers and logprob drift: none compared") {
    auto& summary = fixture->report.analysis.summary;
    summary.max_logprob_drift.reset();
    for (auto& level : summary.by_concurrency) level.logprob_drift = {};
    const auto lines = lines_of(report::render_terminal_summary(fixture->report, false));
    REQUIRE(lines.size() == 31);
    CHECK(lines[10] == "tiers      bitwise 0   token 0   unstable 2   inconclusive 1   max logprob "
                       "drift no logprobs compared");
    CHECK(lines[11] ==
          "  c=1      unstable 0   inconclusive 1   (serial)   drift no logprobs compared");
  }
  SUBCASE("each probe kind and each endpoint with its bitwise prompts and largest drift") {
    test::add_audit_sections(*fixture);
    const std::string text = report::render_terminal_summary(fixture->report, false);
    CHECK(text.find("\nprobe sweep  unstable 0 of 2   bitwise 2   max drift 0 nats   TARr "
                    "100.0%\n") != std::string::npos);
    CHECK(text.find("\nprobe mixed  unstable 1 of 2   bitwise 1   max drift 0.0625 nats   TARr "
                    "50.0%   filler 17 sent, 1 failed\n") != std::string::npos);
    CHECK(text.find("\n  #1 http://127.0.0.1:9/<b>|`v1`  unstable 1 of 2  bitwise 1  max drift "
                    "0.0625 nats  c=1:") != std::string::npos);
  }
  SUBCASE("the probe column fits the longest probe name shown") {
    test::add_audit_sections(*fixture);
    fixture->report.probes[1].probe = core::ProbeKind::mixed_sampling;
    fixture->data.config.plan.probes[1] = core::ProbeKind::mixed_sampling;
    fixture->data.probe_activity[0].sampled_filler_sent = 6;
    fixture->data.probe_activity[0].sampled_filler_failed = 2;
    const auto lines = lines_of(report::render_terminal_summary(fixture->report, false));
    std::vector<std::string> probes;
    for (const auto& line : lines)
      if (line.rfind("probe ", 0) == 0) probes.push_back(line);
    CHECK(probes == std::vector<std::string>{
                        "probe sweep          unstable 0 of 2   bitwise 2   max drift 0 nats   "
                        "TARr 100.0%",
                        "probe mixed-sampling unstable 1 of 2   bitwise 1   max drift 0.0625 "
                        "nats   TARr 50.0%   sampled filler 6 sent, 2 failed",
                        "probe prefix         unstable 2 of 2   bitwise 0   max drift 0.125 nats "
                        "  TARr 0.0%   warm vs cold drift 1 of 2   (flushed via "
                        "/reset_prefix_cache)"});
  }
  SUBCASE("color only when asked; a failing verdict is red") {
    const std::string text = report::render_terminal_summary(fixture->report, true);
    CHECK(text.rfind("\x1b[1;31m" + test::k_fixture_headline + "\x1b[0m\n", 0) == 0);
    CHECK(text.find("\x1b[33munstable 2\x1b[0m") != std::string::npos);
    CHECK(text.find("\x1b[33mwarning: the endpoint answered as 2 models") != std::string::npos);
    // The only escapes are ours: every ESC starts one of the SGR codes used.
    for (std::size_t at = text.find('\x1b'); at != std::string::npos;
         at = text.find('\x1b', at + 1)) {
      const std::string rest = text.substr(at, 7);
      const bool ours = rest.rfind("\x1b[0m", 0) == 0 || rest.rfind("\x1b[1m", 0) == 0 ||
                        rest.rfind("\x1b[33m", 0) == 0 || rest.rfind("\x1b[1;31m", 0) == 0 ||
                        rest.rfind("\x1b[1;32m", 0) == 0;
      CHECK_MESSAGE(ours, "escape at " << at);
    }
  }
  SUBCASE("embedded engine, partial audit, a stability-gated pass, nothing to list") {
    fixture->data.endpoints[0].embedded = true;
    fixture->data.info.status = "partial";
    fixture->report.analysis.prompts.clear();
    auto& summary = fixture->report.analysis.summary;
    summary.stable_prompts = 3;
    summary.unstable_prompts = 0;
    summary.inconclusive_prompts = 0;
    summary.fragility_unknown_prompts = 0;
    fixture->report.warnings.clear();
    core::Verdict& verdict = fixture->report.verdict;
    verdict.status = core::VerdictStatus::pass;
    verdict.headline = "PASS: 2 gates passed";
    verdict.gates = {{"fail_on_unstable",
                      "--fail-on unstable",
                      {},
                      0.0,
                      0.0,
                      "0 of 3 judged prompts unstable (--fail-on unstable)",
                      true},
                     {"max_unique",
                      "--max-unique",
                      {},
                      1.0,
                      1.0,
                      "most distinct completions: 1, limit 1 (--max-unique)",
                      true}};
    const auto lines = lines_of(report::render_terminal_summary(fixture->report, false));
    CHECK(lines[0] == "PASS: 2 gates passed");
    CHECK(lines[1] == "  \u2714 0 of 3 judged prompts unstable (--fail-on unstable)");
    CHECK(lines[2] == "  \u2714 most distinct completions: 1, limit 1 (--max-unique)");
    CHECK(lines[3] == "llmrepro audit audit-1700000000123  (partial: 2 of 18 planned requests "
                      "recorded)");
    CHECK(lines[4] ==
          "endpoint   embedded reference engine   model tiny-model   dialect openai-chat");
    CHECK(lines.back() == "worst      none: every prompt stable and none fragile");
    const std::string colored = report::render_terminal_summary(fixture->report, true);
    CHECK(colored.rfind("\x1b[1;32mPASS: 2 gates passed\x1b[0m\n", 0) == 0);
  }
  SUBCASE("a pass without a stability gate is yellow, and never says every prompt is stable") {
    fixture->report.analysis.prompts.clear();
    core::Verdict& verdict = fixture->report.verdict;
    verdict.status = core::VerdictStatus::pass;
    verdict.stability_gated = false;
    verdict.headline = "NO STABILITY GATE: 2 of 2 prompts unstable, 1 inconclusive";
    verdict.gates = {verdict.gates[0]};
    const std::string text = report::render_terminal_summary(fixture->report, false);
    const auto lines = lines_of(text);
    CHECK(lines[0] == "NO STABILITY GATE: 2 of 2 prompts unstable, 1 inconclusive");
    CHECK(lines.back() == "worst      none listed (0 of 3 prompts stable)");
    CHECK(text.find("every prompt stable") == std::string::npos);
    CHECK(text.find("PASS") == std::string::npos);
    const std::string colored = report::render_terminal_summary(fixture->report, true);
    CHECK(
        colored.rfind("\x1b[33mNO STABILITY GATE: 2 of 2 prompts unstable, 1 inconclusive\x1b[0m\n",
                      0) == 0);
    fixture->report.analysis.summary.stable_prompts = 3;
    CHECK(
        lines_of(report::render_terminal_summary(fixture->report, false)).back() ==
        "worst      none: every prompt stable, none known to be fragile (1 of unknown fragility)");
  }
  SUBCASE("an error verdict is red and names every reason") {
    core::Verdict& verdict = fixture->report.verdict;
    verdict.status = core::VerdictStatus::error;
    verdict.errors = {"interrupted: 2 of 18 planned requests recorded",
                      "no prompt has two successful \x1b[2Jcompletions to compare"};
    verdict.headline =
        "ERROR: the audit could not be judged: interrupted: 2 of 18 planned requests "
        "recorded (and 1 more)";
    verdict.gates.clear();
    const auto lines = lines_of(report::render_terminal_summary(fixture->report, false));
    CHECK(lines[0] == verdict.headline);
    CHECK(lines[1] == "  error: interrupted: 2 of 18 planned requests recorded");
    CHECK(lines[2] == "  error: no prompt has two successful \\x1b[2Jcompletions to compare");
    CHECK(report::render_terminal_summary(fixture->report, true).rfind("\x1b[1;31mERROR: ", 0) ==
          0);
  }
  SUBCASE("failures grouped by reason, at most five listed") {
    auto& reasons = fixture->report.analysis.summary.failure_reasons;
    reasons = {{"HTTP 503: queue full", 9},
               {"timeout after 120 s", 4},
               {"HTTP 500: a\nb", 3},
               {"r4", 2},
               {"r5", 1},
               {"r6", 1},
               {"r7", 1}};
    const std::string text = report::render_terminal_summary(fixture->report, false);
    CHECK(text.find("failures   9 x HTTP 503: queue full\n"
                    "           4 x timeout after 120 s\n"
                    "           3 x HTTP 500: a\\nb\n"
                    "           2 x r4\n"
                    "           1 x r5\n"
                    "           2 more reasons\n") != std::string::npos);
  }
}
