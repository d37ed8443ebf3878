#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "report/detail/html_prompt_detail.hpp"
#include "report/html_report.hpp"
#include "report/detail/html_style.hpp"
#include "report/detail/svg_chart.hpp"
#include "tests/support/text_search.hpp"
#include "tests/support/audit_report_fixture.hpp"
#include "tests/support/audit_sections_fixture.hpp"
#include "tests/support/reviewer_fixture.hpp"

using namespace llmrepro;

namespace {

using llmrepro::test::count_of;

} // namespace

TEST_CASE("html_escape") {
  SUBCASE("markup and quotes become entities") {
    CHECK(report::html_escape("<a href='x'>&\"</a>") ==
          "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  }
  SUBCASE("control characters become visible pictures, tab and newline stay") {
    CHECK(report::html_escape(std::string("a\x1b[0m\tb\nc\x00", 10)) == "a\u241b[0m\tb\nc\u2400");
    CHECK(report::html_escape("\x7f") == "\u2421");
  }
  SUBCASE("invalid UTF-8 becomes U+FFFD, valid multibyte text is kept") {
    CHECK(report::html_escape("\xff\xe2\x80 \xc3\xa9") == "\ufffd\ufffd\ufffd \u00e9");
  }
}

TEST_CASE("render_divergence_tree") {
  const auto fixture = test::make_fixture();
  const core::PromptAnalysis& capital = fixture->report.analysis.prompts.at(0);
  const std::string tree = report::render_divergence_tree(capital);
  // Shared "The capital is" for all 8 runs; then " Queens, ..." 7 vs " New York City" 1; then
  // " New York" 6 vs " NY" 1 at token 5.
  CHECK(tree.find("The capital is</span><span class=\"muted\">(3 tokens)</span><span class=\"count "
                  "major\">8 runs "
                  "100.0%</span>") != std::string::npos);
  CHECK(tree.find("at token 3</span><span class=\"completion\"><mark> Queens</mark>,</span>"
                  "<span class=\"muted\">(2 tokens)</span><span class=\"count major\">7 runs "
                  "87.5%</span>") != std::string::npos);
  CHECK(tree.find("<mark> New</mark> York City</span><span class=\"muted\">(3 tokens)</span>"
                  "<span class=\"count minor\">1 run 12.5%</span>") != std::string::npos);
  CHECK(tree.find("at token 5</span><span class=\"completion\"><mark> New</mark> York</span>"
                  "<span class=\"muted\">(2 tokens)</span><span class=\"count major\">6 runs "
                  "75.0%</span>") != std::string::npos);
  CHECK(tree.find("<mark> NY</mark></span><span class=\"muted\">(1 tokens)</span><span "
                  "class=\"count minor\">1 run "
                  "12.5%</span>") != std::string::npos);
  CHECK(count_of(tree, "<li>") == 5);
}

TEST_CASE("render_prompt_detail") {
  const auto fixture = test::make_fixture();
  const core::PromptAnalysis& capital = fixture->report.analysis.prompts.at(0);
  const std::string detail = report::render_prompt_detail(capital, 0.05);
  SUBCASE("the reference's token at the divergence carries both candidates on hover") {
    CHECK(detail.find("<span class=\"shared\">The capital is</span><mark class=\"ref\" "
                      "title=\"token 3: \u201c "
                      "Queens\u201d logprob -0.6800\ntop-1: \u201c Queens\u201d -0.6800\ntop-2: "
                      "\u201c New\u201d "
                      "-0.7100\ngap 0.03 nats\"> Queens</mark>") != std::string::npos);
  }
  SUBCASE("each variant is shown beside the reference with its divergence") {
    CHECK(count_of(detail, "<div class=\"pair\">") == 2);
    CHECK(detail.find("variant 1 \u00b7 1 run (c=8: 1) \u00b7 diverges at token 3") !=
          std::string::npos);
    CHECK(detail.find("variant 2 \u00b7 1 run (c=8: 1) \u00b7 diverges at token 5") !=
          std::string::npos);
  }
  SUBCASE("the gap line marks tau and the first divergence") {
    CHECK(detail.find("class=\"chart-threshold\"") != std::string::npos);
    CHECK(detail.find("first divergence @3") != std::string::npos);
  }
  SUBCASE("the facts first: status, unit, divergence kind, fragility") {
    CHECK(detail.rfind("<p class=\"facts\">status <b class=\"status-unstable\">unstable</b> \u00b7 "
                       "compared by tokens \u00b7 first divergence at token 3, where two tokens "
                       "differ \u00b7 fragile: yes \u00b7 8 successful, 0 failed \u00b7 tier "
                       "<b class=\"tier-unstable\">unstable</b> \u00b7 logprob drift 0 nats over "
                       "43 positions \u00b7 fewest candidates 2</p>",
                       0) == 0);
  }
  SUBCASE("each distinct completion: runs, divergence, finish reasons, models, fingerprints") {
    CHECK(detail.find("<table class=\"completions\"><thead><tr><th>completion</th><th "
                      "class=\"num\">runs</th><th>by level</th><th>diverges at</th><th>finish "
                      "reasons</th><th>models</th><th>fingerprints</th></tr></thead><tbody>"
                      "<tr><td>reference</td><td class=\"num\">6</td><td class=\"nowrap\">c=1: 4, "
                      "c=8: 2</td><td class=\"nowrap\"><span class=\"muted\">\u2013</span></td>"
                      "<td><code>stop</code>: 6</td><td><span class=\"muted\">(none)</span>: 6</td>"
                      "<td><code>fp_test</code>: 6</td></tr>") != std::string::npos);
    CHECK(detail.find("<tr><td>variant 2</td><td class=\"num\">1</td><td class=\"nowrap\">c=8: 1"
                      "</td><td class=\"nowrap\">token 5</td>") != std::string::npos);
  }
}

TEST_CASE("render_prompt_detail of a prompt compared by text, with hostile models") {
  core::PromptAnalysis prompt;
  prompt.id = "text";
  prompt.runs = 3;
  prompt.failed = 1;
  prompt.unique_completions = 2;
  prompt.status = core::PromptStatus::unstable;
  prompt.tier = core::StabilityTier::unstable;
  prompt.unstable = true;
  prompt.text_mode = true;
  prompt.first_divergence = 3;
  prompt.divergence_kind = core::DivergenceKind::length;
  prompt.fragility_reason = "text mode: a completion came back without tokens";
  prompt.token_text_mismatch = 1;
  prompt.non_greedy_tokens = 2;
  prompt.numbers.nan = 1;
  core::DistinctCompletion reference;
  reference.text = "abc";
  reference.tokens = {{"ab", -0.1, {}}, {"c", -0.1, {}}}; // tokens, but compared by characters
  reference.count = 2;
  reference.count_by_concurrency = {{1, 2}};
  reference.is_reference = true;
  reference.finish_reasons = {{"length", 2}};
  reference.models = {{"m<script>", 2}};
  reference.fingerprints = {{"", 2}};
  core::DistinctCompletion variant;
  variant.text = "abcd";
  variant.count = 1;
  variant.count_by_concurrency = {{8, 1}};
  variant.divergence = 3;
  variant.divergence_kind = core::DivergenceKind::length;
  variant.finish_reasons = {{"stop", 1}};
  variant.models = {{"m2", 1}};
  prompt.completions = {reference, variant};
  const std::string detail = report::render_prompt_detail(prompt, 0.05);
  CHECK(detail.rfind("<p class=\"facts\">status <b class=\"status-unstable\">unstable</b> \u00b7 "
                     "compared by characters (a completion came back without tokens) \u00b7 first "
                     "divergence at char 3, where one completion ends and another goes on \u00b7 "
                     "fragile: <span class=\"fragile-unknown\">unknown</span> (text mode: a "
                     "completion came back without tokens) \u00b7 3 successful, 1 failed \u00b7 "
                     "tier <b class=\"tier-unstable\">unstable</b> \u00b7 logprob drift "
                     "no logprobs compared \u00b7 2 "
                     "tokens not the top candidate \u00b7 1 completions whose tokens do not match "
                     "their text \u00b7 1 log probabilities not finite (NaN 1, Infinity 0, "
                     "-Infinity 0, overflow 0, null 0)</p>",
                     0) == 0);
  CHECK(detail.find("<td class=\"nowrap\">char 3, where one ends</td><td><code>stop</code>: 1</td>"
                    "<td><code>m2</code>: 1</td><td><span class=\"muted\">\u2013</span></td>") !=
        std::string::npos);
  CHECK(detail.find("<td><code>m&lt;script&gt;</code>: 2</td><td><span class=\"muted\">(none)"
                    "</span>: 2</td>") != std::string::npos);
  CHECK(detail.find("<script") == std::string::npos);
  // Positions count characters: the variant's extra "d" is character 3, not token 3.
  CHECK(detail.find("diverges at char 3 (one ends there)</h4>") != std::string::npos);
  CHECK(detail.find("<span class=\"shared\">abc</span><mark title=\"\">d</mark>") !=
        std::string::npos);
  CHECK(detail.find("<span class=\"muted\">at char 3</span>") != std::string::npos);
  CHECK(detail.find("(3 chars)") != std::string::npos);
}

TEST_CASE("render_prompt_detail of completions with equal tokens and different texts") {
  // A stream chunk without logprobs: both completions came back as tokens " a", " c", their texts
  // differ in the chunk the tokens lack. They are shown by text, so the tree can branch.
  core::PromptAnalysis prompt;
  prompt.id = "spell";
  prompt.runs = 4;
  prompt.unique_completions = 2;
  prompt.status = core::PromptStatus::unstable;
  prompt.unstable = true;
  prompt.token_text_mismatch = 4;
  prompt.first_divergence = 1;
  prompt.divergence_kind = core::DivergenceKind::token;
  core::DistinctCompletion lower;
  lower.text = " a b c";
  lower.tokens = {{" a", -0.1, {}}, {" c", -0.1, {}}};
  lower.count = 2;
  lower.is_reference = true;
  core::DistinctCompletion upper = lower;
  upper.text = " a B c";
  upper.is_reference = false;
  upper.divergence = 1;
  upper.divergence_kind = core::DivergenceKind::token;
  prompt.completions = {lower, upper};
  const std::string tree = report::render_divergence_tree(prompt);
  CHECK(tree.find("<span class=\"completion\"> a </span><span class=\"muted\">(3 chars)</span>") !=
        std::string::npos);
  CHECK(tree.find("<span class=\"muted\">at char 3</span><span class=\"completion\"><mark>b</mark> "
                  "c</span>") != std::string::npos);
  const std::string detail = report::render_prompt_detail(prompt, 0.05);
  CHECK(detail.find("variant 1 \u00b7 2 runs () \u00b7 diverges at token 1</h4><pre "
                    "class=\"completion\"><span class=\"shared\"> a </span><mark "
                    "title=\"\">B</mark> c</pre>") != std::string::npos);
  // Equal shown units cannot recurse for ever either.
  upper.text = lower.text;
  prompt.completions = {lower, upper};
  CHECK(report::render_divergence_tree(prompt).find("<ul class=\"tree\"><li>") == 0);
}

TEST_CASE("render_bar_chart") {
  report::BarChart chart;
  chart.title = "t<i>";
  chart.categories = {"a", "b"};
  chart.series.push_back({"s", {1.0, 3.0}});
  chart.threshold_edge = 1.0;
  chart.threshold_label = "tau";
  const std::string svg = report::render_bar_chart(chart);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 560 250\"", 0) == 0);
  CHECK(svg.find("t&lt;i&gt;") != std::string::npos);
  CHECK(count_of(svg, "<rect class=\"chart-bar-0\"") == 2);
  // Plot is 494 px wide from x=52: the boundary between the two categories is at 52 + 247.
  CHECK(svg.find("<line class=\"chart-threshold\" x1=\"299.0\"") != std::string::npos);
  SUBCASE("an empty chart says why") {
    report::BarChart empty;
    empty.title = "none";
    empty.empty_message = "nothing to draw";
    CHECK(report::render_bar_chart(empty).find(">nothing to draw</text>") != std::string::npos);
  }
}

TEST_CASE("render_html") {
  const auto fixture = test::make_fixture();
  const std::string html = report::render_html(fixture->report);

  SUBCASE("one self-contained page: nothing fetched, one script, ours") {
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(count_of(html, "<script") == 1);
    CHECK(count_of(html, "</script") == 1);
    CHECK(html.find("<script id=\"llmrepro-script\">") != std::string::npos);
    CHECK(html.find("src=\"") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    CHECK(html.find("@import") == std::string::npos);
    CHECK(html.find("url(") == std::string::npos);
  }
  SUBCASE("hostile model text stays text") {
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(html.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
    CHECK(html.find("&quot;quoted&quot; &amp; &#39;single&#39; \u241b[31m\ufffd") !=
          std::string::npos);
    CHECK(html.find("hostile&lt;b&gt;&quot;id&quot;&lt;/b&gt;") != std::string::npos);
    CHECK(html.find("<b>") == std::string::npos);
    CHECK(html.find('\x1b') == std::string::npos);
    CHECK(html.find("|`x` \\u{202e}gnp.exe") != std::string::npos);
    CHECK(html.find("\u202E") == std::string::npos);
  }
  SUBCASE("verdict, summary cards and worst prompts come first") {
    const auto verdict =
        html.find("<section class=\"verdict fail\" id=\"verdict\" data-status=\"fail\"><span "
                  "class=\"badge\">FAIL</span>");
    const auto cards = html.find("id=\"summary\"");
    const auto worst = html.find("id=\"worst\"");
    const auto levels = html.find("id=\"levels\"");
    const auto charts = html.find("id=\"charts\"");
    REQUIRE(verdict != std::string::npos);
    CHECK(verdict < cards);
    CHECK(cards < worst);
    CHECK(worst < levels);
    CHECK(levels < charts);
    CHECK(
        html.find("<strong>2 of 5 prompts unstable</strong> \u00b7 2 stable \u00b7 1 inconclusive "
                  "\u00b7 3 fragile \u00b7 1 of unknown fragility \u00b7 TARr 40.0% \u00b7 8 of 40 "
                  "requests failed") != std::string::npos);
    for (const char* label :
         {"endpoint", "model", "fingerprints", "prompts", "requests", "failures", "unstable",
          "inconclusive", "fragile", "TARr", "predictor P / R", "verdict"}) {
      CHECK_MESSAGE(html.find(std::string("<div class=\"label\">") + label + "</div>") !=
                        std::string::npos,
                    label);
    }
    CHECK(html.find("fp_a, fp_b") != std::string::npos);
    // Worst first: both unstable prompts have 3 and 2 distinct completions.
    const auto capital_row =
        html.find("<a href=\"#prompt-0\"><code>capital</code></a></td><td class=\"num\">3</td>");
    const auto hostile_row = html.find("<a href=\"#prompt-1\"><code>hostile");
    CHECK(capital_row < hostile_row);
  }
  SUBCASE("four charts, the noise section's two, and a gap line per prompt with logprobs") {
    CHECK(count_of(html, "<svg") == 4 + 2 + 4);
    CHECK(html.find("Noise per level") != std::string::npos);
    CHECK(html.find("Reliability of p_flip") != std::string::npos);
    CHECK(html.find("<section class=\"panel\" id=\"noise\"><h2>Noise and flip probability</h2>"
                    "<p class=\"flip-predictors\">p_flip Brier ") != std::string::npos);
    CHECK(html.find("<th class=\"sortable num\">p_flip</th>") != std::string::npos);
    CHECK(html.find("Distinct completions by concurrency level") != std::string::npos);
    CHECK(html.find("First-divergence positions") != std::string::npos);
    CHECK(html.find("at divergence (n=2)") != std::string::npos);
    CHECK(html.find("Throughput by concurrency level") != std::string::npos);
  }
  SUBCASE("one table row and one section per prompt; the worst one open") {
    CHECK(count_of(html, "<tr data-problem=") == 5);
    CHECK(count_of(html, "<details class=\"prompt\"") == 5);
    CHECK(html.find("<details class=\"prompt\" id=\"prompt-0\" open>") != std::string::npos);
  }
  SUBCASE("the headline verbatim, escaped, with each gate in its scope") {
    CHECK(html.find("<div class=\"headline fail\" id=\"verdict-headline\">FAIL: 2 of 2 gates "
                    "failed: 8 of 40 requests failed after their retries (8 x HTTP 500: "
                    "&lt;html&gt;oops&lt;/html&gt;), limit 0.000 (--max-failed-rate)</div>") !=
          std::string::npos);
    CHECK(fixture->report.verdict.headline ==
          "FAIL: 2 of 2 gates failed: 8 of 40 requests failed after their retries (8 x HTTP 500: "
          "<html>oops</html>), limit 0.000 (--max-failed-rate)");
    CHECK(html.find("<li class=\"failed\">\u2718 <code title=\"fail_on_unstable\">--fail-on "
                    "unstable</code> 2 of 4 judged prompts unstable, 1 inconclusive (--fail-on "
                    "unstable) <span class=\"scope\">(endpoint 0 \u00b7 sweep)</span></li>") !=
          std::string::npos);
    CHECK(html.find("<span class=\"scope\">(whole audit)</span>") != std::string::npos);
    CHECK(html.find("<html>oops") == std::string::npos);
    CHECK(html.find("id=\"warnings\"") == std::string::npos); // none to show
    CHECK(html.find("id=\"verdict-errors\"") == std::string::npos);
  }
  SUBCASE("per level: unstable, inconclusive, differs from serial") {
    CHECK(html.find("<tr><td class=\"num\">8</td><td class=\"num\">16</td><td class=\"num\">2"
                    "</td><td class=\"num\">1</td><td class=\"num\">0</td><td class=\"num\">4"
                    "</td><td class=\"num\">77.5</td><td class=\"num\">40.0</td><td class=\"num\">"
                    "0 nats over 40 positions</td></tr>") != std::string::npos);
    CHECK(html.find("<td class=\"num\"><span class=\"muted\">serial</span></td>") !=
          std::string::npos);
  }
  SUBCASE("the prompt table: status and fragile yes / no / unknown, the reason as title") {
    CHECK(html.find("<td data-sort=\"1\"><span class=\"tag fail\">unstable \u00b7 3</span></td>"
                    "<td data-sort=\"2\"><span class=\"tag warn\">yes</span></td><td "
                    "class=\"tier\">unstable</td><td class=\"num\" data-sort=\"0\">0</td></tr>") !=
          std::string::npos);
    CHECK(html.find("<td data-sort=\"0\"><span class=\"tag pass\">stable</span></td><td "
                    "data-sort=\"0\">no</td><td class=\"tier\">bitwise</td><td class=\"num\" "
                    "data-sort=\"0\">0</td></tr>") != std::string::npos);
    CHECK(html.find("<td data-sort=\"2\"><span class=\"tag warn\">inconclusive \u00b7 no "
                    "completion</span> <span class=\"tag fail\">8 failed</span></td><td "
                    "data-sort=\"1\" title=\"no successful completion\"><span class=\"tag "
                    "info\">unknown</span></td><td class=\"tier\">inconclusive</td><td "
                    "class=\"num\" data-sort=\"\">\u2013</td></tr>") != std::string::npos);
    CHECK(html.find("<div id=\"tiers\">stability tiers: bitwise 2 \u00b7 token 0 \u00b7 unstable 2 "
                    "\u00b7 inconclusive 1 \u00b7 max logprob drift 0 nats</div>") !=
          std::string::npos);
    CHECK(html.find("<tr data-problem=\"1\" data-id=\"broken\">") != std::string::npos);
    CHECK(html.find("<tr data-problem=\"0\" data-id=\"steady\">") != std::string::npos);
  }

  // The browser test (tests/browser) renders this page in headless Chromium.
  if (const char* path = std::getenv("LLMREPRO_HTML_FIXTURE_OUT")) {
    std::ofstream out(path, std::ios::binary);
    out << html;
    REQUIRE_MESSAGE(out.good(), "cannot write " << path);
  }
}

TEST_CASE("render_html verdict states") {
  const auto fixture = test::make_fixture();
  core::Verdict& verdict = fixture->report.verdict;
  SUBCASE("a pass a stability gate judged is green") {
    verdict.status = core::VerdictStatus::pass;
    verdict.stability_gated = true;
    verdict.headline = "PASS: 2 gates passed";
    for (auto& gate : verdict.gates) gate.passed = true;
    const std::string html = report::render_html(fixture->report);
    CHECK(html.find("<section class=\"verdict pass\" id=\"verdict\" data-status=\"pass\"><span "
                    "class=\"badge\">PASS</span><div><div class=\"headline pass\" "
                    "id=\"verdict-headline\">PASS: 2 gates passed</div>") != std::string::npos);
    CHECK(html.find("<div class=\"card pass\"><div class=\"label\">verdict</div><div "
                    "class=\"value\">PASS</div>") != std::string::npos);
  }
  SUBCASE("a pass without a stability gate is no green PASS") {
    verdict.status = core::VerdictStatus::pass;
    verdict.stability_gated = false;
    verdict.headline = "NO STABILITY GATE: 2 of 4 prompts unstable, 1 inconclusive";
    verdict.gates.resize(1);
    verdict.gates[0].passed = true;
    const std::string html = report::render_html(fixture->report);
    CHECK(html.find("<section class=\"verdict nogate\" id=\"verdict\" data-status=\"pass\"><span "
                    "class=\"badge\">NO GATE</span><div><div class=\"headline nogate\" "
                    "id=\"verdict-headline\">NO STABILITY GATE: 2 of 4 prompts unstable, 1 "
                    "inconclusive</div>") != std::string::npos);
    CHECK(html.find("class=\"verdict pass\"") == std::string::npos);
    CHECK(html.find(">PASS<") == std::string::npos);
    CHECK(html.find("<div class=\"card warn\"><div class=\"label\">verdict</div><div "
                    "class=\"value\">NO GATE</div>") != std::string::npos);
  }
  SUBCASE("an error names every reason the audit could not be judged") {
    verdict.status = core::VerdictStatus::error;
    verdict.errors = {"interrupted: 3 of 40 planned requests recorded",
                      "the run stopped: <b>refused</b>"};
    verdict.headline = "ERROR: the audit could not be judged: interrupted: 3 of 40 planned "
                       "requests recorded (and 1 more)";
    const std::string html = report::render_html(fixture->report);
    CHECK(html.find("<section class=\"verdict error\" id=\"verdict\" data-status=\"error\"><span "
                    "class=\"badge\">ERROR</span><div><div class=\"headline error\" "
                    "id=\"verdict-headline\">ERROR: the audit could not be judged: interrupted: 3 "
                    "of 40 planned requests recorded (and 1 more)</div>") != std::string::npos);
    CHECK(html.find("<ul class=\"verdict-errors\" id=\"verdict-errors\"><li>\u2718 could not "
                    "judge: interrupted: 3 of 40 planned requests recorded</li><li>\u2718 could "
                    "not judge: the run stopped: &lt;b&gt;refused&lt;/b&gt;</li></ul>") !=
          std::string::npos);
  }
  SUBCASE("every warning, one <li> each, escaped") {
    fixture->report.warnings = {"the endpoint answered as 2 models (a: 1, <img src=x>: 1)",
                                "3 prompts have tokens that are not the top candidate"};
    const std::string html = report::render_html(fixture->report);
    CHECK(
        html.find("<section class=\"panel warnings\" id=\"warnings\"><h2>Warnings</h2><ul><li>the "
                  "endpoint answered as 2 models (a: 1, &lt;img src=x&gt;: 1)</li><li>3 prompts "
                  "have tokens that are not the top candidate</li></ul></section>") !=
        std::string::npos);
    CHECK(html.find("id=\"verdict\"") < html.find("id=\"warnings\""));
    CHECK(html.find("id=\"warnings\"") < html.find("id=\"summary\""));
    CHECK(html.find("<img") == std::string::npos);
  }
}

TEST_CASE("render_html probe kinds, endpoint comparison and semantic agreement") {
  const auto fixture = test::make_fixture();
  SUBCASE("an audit of the sweep alone on one endpoint has none of these sections") {
    fixture->report.probes.resize(std::min<std::size_t>(fixture->report.probes.size(), 1));
    if (!fixture->report.probes.empty()) fixture->report.probes[0].probe = core::ProbeKind::sweep;
    fixture->report.comparison.reset();
    const std::string html = report::render_html(fixture->report);
    CHECK(html.find("id=\"probes\"") == std::string::npos);
    CHECK(html.find("id=\"comparison\"") == std::string::npos);
    CHECK(html.find("id=\"semantic\"") == std::string::npos);
  }
  test::add_audit_sections(*fixture);
  const std::string html = report::render_html(fixture->report);
  SUBCASE("in reading order, after the charts and before the prompt table") {
    const auto charts = html.find("id=\"charts\"");
    const auto probes = html.find("<section id=\"probes\"><h2>Probe kinds</h2>");
    const auto sweep = html.find("<div class=\"panel probe\" id=\"probe-sweep\"><h3>sweep</h3>");
    const auto mixed = html.find("<div class=\"panel probe\" id=\"probe-mixed\"><h3>mixed</h3>");
    const auto prefix = html.find("<div class=\"panel probe\" id=\"probe-prefix\"><h3>prefix</h3>");
    const auto comparison = html.find("<section class=\"panel\" id=\"comparison\">");
    const auto semantic = html.find("<section class=\"panel\" id=\"semantic\">");
    const auto prompts = html.find("id=\"prompts\"");
    REQUIRE(charts != std::string::npos);
    REQUIRE(prompts != std::string::npos);
    CHECK(charts < probes);
    CHECK(probes < sweep);
    CHECK(sweep < mixed);
    CHECK(mixed < prefix);
    CHECK(prefix < comparison);
    CHECK(comparison < semantic);
    CHECK(semantic < prompts);
    CHECK(html.find("id=\"probe-long\"") == std::string::npos);
  }
  SUBCASE("each probe kind: unstable, distinct completions, TARr, TARa, activity, cost per level") {
    CHECK(
        html.find("<p class=\"probe-summary\"><b>1</b> of 2 prompts unstable \u00b7 0 "
                  "inconclusive \u00b7 3 distinct completions \u00b7 TARr 50.0% \u00b7 TARa 100.0% "
                  "\u00b7 8 requests (1 failed) \u00b7 1 bitwise \u00b7 max logprob drift 0.0625 "
                  "nats</p>") != std::string::npos);
    CHECK(html.find("Filler requests beside the audited ones: 17 sent, 1 failed") !=
          std::string::npos);
    CHECK(html.find("<tr><td class=\"num\">4</td><td class=\"num\">4</td><td class=\"num\">1"
                    "</td><td class=\"num\">0</td><td class=\"num\">1</td><td class=\"num\">1"
                    "</td><td class=\"num\">240.0</td><td class=\"num\">40.5</td><td "
                    "class=\"num\">0.0625 nats over 12 positions</td></tr>") != std::string::npos);
    CHECK(html.find("<tr><td><code>p1</code></td><td class=\"num\">4</td><td class=\"num\">1</td>"
                    "<td class=\"num\"><span class=\"muted\">\u2013</span></td><td><span "
                    "class=\"tag pass\">stable</span></td></tr>") != std::string::npos);
  }
  SUBCASE("the prefix probe's warm-against-cold drift is kept apart from batch drift") {
    CHECK(html.find("<h3>Warm against cold</h3><p>Prefix-cache drift, kept apart from batch "
                    "drift: <b>1</b> of 2 prompts") != std::string::npos);
    CHECK(html.find("cache flushed through <code>/reset_prefix_cache</code> before each cold "
                    "trial \u00b7 flush requests: 5 sent, 1 failed") != std::string::npos);
    CHECK(html.find("<tr><td><code>drift&lt;i&gt;|`x`\nid</code></td><td class=\"num\">2</td>"
                    "<td class=\"num\">1</td><td class=\"num\">2</td><td class=\"num\">1</td>"
                    "<td><span class=\"tag fail\">drift</span></td><td class=\"num\">5</td>"
                    "</tr>") != std::string::npos);
    CHECK(html.find("<tr><td><code>p1</code></td><td class=\"num\">2</td><td class=\"num\">2</td>"
                    "<td class=\"num\">2</td><td class=\"num\">2</td><td><span class=\"tag "
                    "pass\">same</span></td><td class=\"num\"><span class=\"muted\">\u2013"
                    "</span></td></tr>") != std::string::npos);
  }
  SUBCASE("endpoints compared: stability beside cost, and per prompt agreement") {
    CHECK(html.find("<b>1</b> of 2 prompts give the same reference completion everywhere") !=
          std::string::npos);
    CHECK(html.find("<tr><td class=\"num\">1</td><td><code>http://127.0.0.1:9/&lt;b&gt;|`v1`"
                    "</code></td><td class=\"num\">1 of 2</td><td class=\"num\">50.0%</td>"
                    "<td class=\"num\">50.0%</td><td class=\"nowrap\">c=1: 1 \u00b7 250.0 tok/s "
                    "\u00b7 12.5 ms<br>c=4: 1 \u00b7 750.0 tok/s \u00b7 40.5 ms</td><td "
                    "class=\"num\">1</td><td class=\"num\">0.0625 nats</td></tr>") !=
          std::string::npos);
    CHECK(html.find("<th>endpoint 1 vs 0</th>") != std::string::npos);
    fixture->report.endpoints[1].summary.inconclusive_prompts = 2;
    CHECK(report::render_html(fixture->report)
              .find("</code></td><td class=\"num\">1 of 2 (2 inconclusive)</td>") !=
          std::string::npos);
    CHECK(html.find("<td><span class=\"tag fail\">differ</span></td><td>differs from token 7"
                    "</td>") != std::string::npos);
    CHECK(html.find("<td><code>p1</code></td><td><span class=\"tag pass\">agree</span></td>"
                    "<td>same</td>") != std::string::npos);
  }
  SUBCASE("semantic agreement") {
    CHECK(html.find("(embedding model <code>embed&lt;x&gt;</code>): <b>50.0%</b> of 2 prompts "
                    "have every pair at or above 0.9.") != std::string::npos);
    CHECK(html.find("<tr><td><code>capital</code></td><td class=\"num\">3</td><td "
                    "class=\"num\">3</td><td class=\"num\">0.8125</td><td class=\"num\">0.0625"
                    "</td><td class=\"num\">0.7500</td><td><span class=\"tag fail\">no</span>"
                    "</td></tr>") != std::string::npos);
  }
  SUBCASE("hostile ids and URLs stay text") {
    CHECK(html.find("<i>") == std::string::npos);
    CHECK(html.find("<b>|") == std::string::npos);
    CHECK(html.find("<x>") == std::string::npos);
  }

  // The browser test (tests/browser, --sections) renders this page in headless Chromium.
  if (const char* path = std::getenv("LLMREPRO_HTML_SECTIONS_FIXTURE_OUT")) {
    std::ofstream out(path, std::ios::binary);
    out << html;
    REQUIRE_MESSAGE(out.good(), "cannot write " << path);
  }
}

TEST_CASE("render_html: what the requests used and its cost, in the verdict panel") {
  const auto fixture = test::make_fixture();
  auto& summary = fixture->report.analysis.summary;
  const core::Price price{2.0, 8.0};
  summary.usage = core::UsageSummary{17, 16, 400, 170, 30, std::nullopt}.priced(price);
  REQUIRE(summary.by_concurrency.size() == 2);
  summary.by_concurrency[0].usage =
      core::UsageSummary{9, 9, 216, 90, 18, std::nullopt}.priced(price);
  summary.by_concurrency[1].usage =
      core::UsageSummary{8, 7, 184, 80, 12, std::nullopt}.priced(price);
  const std::string html = report::render_html(fixture->report);
  CHECK(html.find("<div id=\"usage\">tokens in 400 (16 of 17 requests reported theirs) \u00b7 out "
                  "170 (30 reasoning) \u00b7 cost at least 0.00216 \u00b7 per level: c=1: tokens "
                  "in 216 \u00b7 out 90 (18 reasoning) \u00b7 cost 0.001152; c=8: tokens in 184 "
                  "(7 of 8 requests reported theirs) \u00b7 out 80 (12 reasoning) \u00b7 cost at "
                  "least 0.001008</div>") != std::string::npos);
}

TEST_CASE("render_html: a rate that is no finite number draws no bar") {
  // The JSON fixture's c=8 level has an infinite tokens/s (a rate over no time): the throughput
  // chart must still render, with that level's bar at zero height.
  const auto fixture = test::make_report_fixture();
  const std::string html = report::render_html(fixture->report);
  CHECK(html.find("Throughput by concurrency level") != std::string::npos);
  CHECK(html.find("<title>c=8 0</title>") != std::string::npos);
  CHECK(html.find("inf tok/s") != std::string::npos);
}
