#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "report/junit_report.hpp"
#include "tests/support/text_search.hpp"
#include "tests/support/reviewer_fixture.hpp"

using namespace llmrepro;

namespace {

// A strict well-formedness check of the XML subset render_junit writes: one declaration,
// balanced and properly nested elements, quoted attributes, only the five predefined entities
// and numeric references, no raw '<' or '&' in text or attributes, no characters XML 1.0
// forbids. Returns an empty string when well formed, otherwise what is wrong.
std::string xml_problem(const std::string& xml) {
  for (char ch : xml) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return "forbidden control character";
  }
  std::vector<std::string> open;
  std::size_t i = 0;
  const auto check_entity = [&](std::size_t at) -> bool {
    const std::size_t end = xml.find(';', at);
    if (end == std::string::npos) return false;
    const std::string name = xml.substr(at + 1, end - at - 1);
    if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos")
      return true;
    if (name.size() > 1 && name[0] == '#')
      return name.find_first_not_of("0123456789", 1) == std::string::npos;
    return false;
  };
  if (xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0) != 0) return "no declaration";
  i = xml.find('\n') + 1;
  bool root_seen = false;
  while (i < xml.size()) {
    if (xml[i] == '<') {
      const std::size_t end = xml.find('>', i);
      if (end == std::string::npos) return "unterminated tag";
      std::string tag = xml.substr(i + 1, end - i - 1);
      if (tag.find('<') != std::string::npos) return "'<' inside a tag";
      if (!tag.empty() && tag[0] == '/') {
        if (open.empty() || open.back() != tag.substr(1))
          return "mismatched </" + tag.substr(1) + ">";
        open.pop_back();
      } else {
        const bool self_closing = !tag.empty() && tag.back() == '/';
        if (self_closing) tag.pop_back();
        const std::string name = tag.substr(0, tag.find(' '));
        if (open.empty() && root_seen) return "second root element";
        root_seen = true;
        // Attributes: name="value" pairs, values without '<' and with valid entities.
        std::size_t a = name.size();
        while (a < tag.size()) {
          while (a < tag.size() && tag[a] == ' ') ++a;
          if (a >= tag.size()) break;
          const std::size_t eq = tag.find("=\"", a);
          if (eq == std::string::npos) return "attribute without =\" in <" + name + ">";
          const std::size_t close = tag.find('"', eq + 2);
          if (close == std::string::npos) return "unterminated attribute in <" + name + ">";
          for (std::size_t k = eq + 2; k < close; ++k) {
            if (tag[k] == '&' && !check_entity(i + 1 + k)) return "bad entity in attribute";
          }
          a = close + 1;
        }
        if (!self_closing) open.push_back(name);
      }
      i = end + 1;
    } else {
      if (xml[i] == '&' && !check_entity(i)) return "bad entity in text";
      if (xml[i] == '>') return "raw '>' in text";
      if (open.empty() && xml[i] != '\n' && xml[i] != ' ') return "text outside the root";
      ++i;
    }
  }
  return open.empty() ? std::string() : "unclosed <" + open.back() + ">";
}

using llmrepro::test::count_of;

} // namespace

TEST_CASE("xml_escape") {
  SUBCASE("markup characters become entities") {
    CHECK(report::xml_escape("<a b='c'>&\"", false) == "&lt;a b=&apos;c&apos;&gt;&amp;&quot;");
  }
  SUBCASE("characters XML 1.0 forbids are dropped, invalid UTF-8 replaced") {
    CHECK(report::xml_escape(std::string("a\x00"
                                         "b\x1b"
                                         "c\x0b\xef\xbf\xbe"
                                         "d\xff",
                                         11),
                             false) == "abcd\ufffd");
  }
  SUBCASE("whitespace survives attribute normalisation as references") {
    CHECK(report::xml_escape("a\tb\nc\rd", true) == "a&#9;b&#10;c&#13;d");
    CHECK(report::xml_escape("a\tb\nc", false) == "a\tb\nc");
  }
}

TEST_CASE("render_junit") {
  const auto fixture = test::make_fixture();
  const std::string xml = report::render_junit(fixture->report);
  CHECK(xml_problem(xml) == "");
  CHECK(count_of(xml, "<testsuite ") == 1);
  // Two gates (--max-failed-rate, --fail-on unstable) and five prompts. Both gates failed; the
  // failing cases are exactly theirs and the prompts they name: the two unstable prompts and the
  // one whose requests failed. The fragile prompt is named by no gate: a finding.
  CHECK(xml.find("<testsuite name=\"llmrepro audit audit-fixture\" tests=\"7\" failures=\"5\" "
                 "errors=\"0\" "
                 "skipped=\"0\" time=\"60.000\" timestamp=\"2023-11-14T22:13:20.000Z\">") !=
        std::string::npos);
  CHECK(count_of(xml, "<testcase classname=\"llmrepro.audit\"") == 5);
  CHECK(count_of(xml, "<testcase classname=\"llmrepro.gate\"") == 2);
  CHECK(count_of(xml, "<failure ") == 5);
  CHECK(xml.find("llmrepro.verdict") == std::string::npos);
  const std::string headline = "FAIL: 2 of 2 gates failed: 8 of 40 requests failed after their "
                               "retries (8 x HTTP 500: &lt;html&gt;oops&lt;/html&gt;), limit 0.000 "
                               "(--max-failed-rate)";
  SUBCASE("the verdict, its headline and the findings are properties") {
    CHECK(xml.find("<property name=\"verdict\" value=\"fail\"/>\n      <property "
                   "name=\"headline\" value=\"" +
                   headline + "\"/>") != std::string::npos);
    CHECK(xml.find("<property name=\"unstable_prompts\" value=\"2\"/>\n      <property "
                   "name=\"fragile_prompts\" value=\"3\"/>\n      <property "
                   "name=\"inconclusive_prompts\" value=\"1\"/>") != std::string::npos);
  }
  SUBCASE("each failed gate is a failing test case naming its prompts") {
    CHECK(xml.find("    </properties>\n    <testcase classname=\"llmrepro.gate\" "
                   "name=\"--max-failed-rate\" time=\"0\">\n      <failure message=\"8 of 40 "
                   "requests failed after their retries (8 x HTTP 500: "
                   "&lt;html&gt;oops&lt;/html&gt;), limit 0.000 (--max-failed-rate)\" "
                   "type=\"max_failed_rate\">prompts: broken\n</failure>\n    </testcase>\n"
                   "    <testcase classname=\"llmrepro.gate\" name=\"--fail-on unstable\" "
                   "time=\"0\">\n      <failure message=\"2 of 4 judged prompts unstable, 1 "
                   "inconclusive (--fail-on unstable)\" type=\"fail_on_unstable\">prompts: "
                   "capital, hostile&lt;b&gt;&quot;id&quot;&lt;/b&gt;\n</failure>\n") !=
          std::string::npos);
  }
  SUBCASE("an unstable prompt fails with position, candidates, gap and the gate") {
    CHECK(xml.find(
              "<testcase classname=\"llmrepro.audit\" name=\"capital\" time=\"0\">\n      <failure "
              "message=\"unstable: 3 distinct completions in 8 runs; first divergence at token 3: "
              "\u201c "
              "Queens\u201d (-0.6800) vs \u201c New\u201d (-0.7100), gap 0.03 nats; also fragile "
              "(--fail-on unstable)\" type=\"unstable\">") != std::string::npos);
  }
  SUBCASE("a fragile prompt no gate names is a finding in system-out, not a failure") {
    CHECK(xml.find("name=\"near-tie\" time=\"0\">\n      <system-out>finding, no gate failed on "
                   "it: fragile: min gap 0.01 nats at token 1 is below \u03c4 = 0.05\n") !=
          std::string::npos);
  }
  SUBCASE("a stable prompt passes; one without completions fails by --max-failed-rate") {
    CHECK(xml.find("<testcase classname=\"llmrepro.audit\" name=\"steady\" time=\"0\"/>") !=
          std::string::npos);
    CHECK(xml.find("name=\"broken\" time=\"0\">\n      <failure message=\"inconclusive: no "
                   "successful completion, 8 requests failed (--max-failed-rate)\" "
                   "type=\"inconclusive\">concurrency "
                   "1: inconclusive, 0 runs, 0 distinct, 4 failed\n") != std::string::npos);
  }
  SUBCASE("no gate can fail: the findings are reported, nothing fails") {
    // The same audit without --fail-on and with --max-failed-rate 1: the verdict passes (exit 0),
    // so JUnit has no failure: the unstable prompts are findings, the broken one skipped.
    core::AuditData& data = fixture->data;
    data.config.gates.fail_on.unstable = false;
    data.config.gates.max_failed_rate = 1.0;
    fixture->report = core::make_audit_report(data, fixture->report.tool);
    REQUIRE(fixture->report.verdict.status == core::VerdictStatus::pass);
    const std::string open = report::render_junit(fixture->report);
    CHECK(xml_problem(open) == "");
    CHECK(open.find("tests=\"6\" failures=\"0\" errors=\"0\" skipped=\"1\"") != std::string::npos);
    CHECK(open.find("<failure") == std::string::npos);
    CHECK(open.find("<property name=\"unstable_prompts\" value=\"2\"/>") != std::string::npos);
    CHECK(open.find("name=\"capital\" time=\"0\">\n      <system-out>finding, no gate failed on "
                    "it: unstable: 3 distinct completions in 8 runs;") != std::string::npos);
    CHECK(open.find("name=\"broken\" time=\"0\">\n      <skipped message=\"inconclusive: no "
                    "successful completion, 8 requests failed\"/>") != std::string::npos);
    CHECK(open.find("<testcase classname=\"llmrepro.gate\" name=\"--max-failed-rate\" "
                    "time=\"0\">\n      <system-out>passed: 8 of 40 requests failed") !=
          std::string::npos);
    // A gate that passes fails nothing either: 2 of 4 judged prompts unstable is within 0.5.
    data.config.gates.max_unstable_rate = 0.5;
    fixture->report = core::make_audit_report(data, fixture->report.tool);
    REQUIRE(fixture->report.verdict.status == core::VerdictStatus::pass);
    const std::string within = report::render_junit(fixture->report);
    CHECK(within.find("tests=\"7\" failures=\"0\" errors=\"0\" skipped=\"1\"") !=
          std::string::npos);
    // Below the rate it fails, naming the unstable prompts only.
    data.config.gates.max_unstable_rate = 0.25;
    fixture->report = core::make_audit_report(data, fixture->report.tool);
    REQUIRE(fixture->report.verdict.status == core::VerdictStatus::fail);
    const std::string beyond = report::render_junit(fixture->report);
    CHECK(beyond.find("tests=\"7\" failures=\"3\" errors=\"0\" skipped=\"1\"") !=
          std::string::npos);
    CHECK(beyond.find("type=\"max_unstable_rate\">prompts: capital, "
                      "hostile&lt;b&gt;&quot;id&quot;&lt;/b&gt;\n") != std::string::npos);
    // --max-unique 2 names the one prompt with 3 distinct completions.
    data.config.gates.max_unstable_rate = std::nullopt;
    data.config.gates.max_unique = 2;
    fixture->report = core::make_audit_report(data, fixture->report.tool);
    const std::string unique = report::render_junit(fixture->report);
    CHECK(unique.find("tests=\"7\" failures=\"2\" errors=\"0\" skipped=\"1\"") !=
          std::string::npos);
    CHECK(unique.find("name=\"capital\" time=\"0\">\n      <failure message=\"3 distinct "
                      "completions in 8 runs, limit 2 (--max-unique)\" type=\"max_unique\">") !=
          std::string::npos);
  }
  SUBCASE("hostile text is escaped in names, messages and bodies") {
    CHECK(xml.find("name=\"hostile&lt;b&gt;&quot;id&quot;&lt;/b&gt;\"") != std::string::npos);
    CHECK(xml.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(xml.find("\u202E") == std::string::npos);
    CHECK(xml.find("|`x` \\u{202e}gnp.exe") != std::string::npos);
    CHECK(xml.find("&quot;quoted&quot; &amp; &apos;single&apos; [31m\ufffd|`x`") !=
          std::string::npos);
    CHECK(xml.find("<img") == std::string::npos);
    CHECK(xml.find("<script") == std::string::npos);
  }
  SUBCASE("the checker sees a broken document") {
    CHECK(xml_problem("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a><b></a></b>") != "");
    CHECK(xml_problem("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a>x & y</a>") != "");
    CHECK(xml_problem("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a t=\"<\"/>") != "");
  }
  SUBCASE("a gate names only the prompts of the scopes it judged") {
    core::AuditData& data = fixture->data;
    data.config.gates.fail_on.unstable = false;
    data.config.gates.max_failed_rate = 1.0;
    fixture->report = core::make_audit_report(data, fixture->report.tool);
    // A failed gate of another endpoint's scope: its own case fails, naming none of these.
    fixture->report.verdict.status = core::VerdictStatus::fail;
    fixture->report.verdict.gates.push_back({"fail_on_unstable",
                                             "--fail-on unstable",
                                             {1, core::ProbeKind::sweep, std::nullopt},
                                             1.0,
                                             0.0,
                                             "endpoint 1, sweep: 1 of 5 judged prompts unstable",
                                             false});
    const std::string other = report::render_junit(fixture->report);
    CHECK(other.find("tests=\"7\" failures=\"1\" errors=\"0\"") != std::string::npos);
    CHECK(other.find("type=\"fail_on_unstable\">no prompt named\n</failure>") != std::string::npos);
  }
  SUBCASE("an error verdict is an error test case; the gates as judged") {
    core::Verdict& verdict = fixture->report.verdict;
    verdict.status = core::VerdictStatus::error;
    verdict.errors = {"interrupted: 3 of 40 planned requests recorded", "the run stopped: <x>"};
    verdict.headline = "ERROR: the audit could not be judged: interrupted: 3 of 40 planned "
                       "requests recorded (and 1 more)";
    std::string error = report::render_junit(fixture->report);
    CHECK(xml_problem(error) == "");
    CHECK(error.find("tests=\"8\" failures=\"5\" errors=\"1\"") != std::string::npos);
    CHECK(error.find("<property name=\"verdict\" value=\"error\"/>") != std::string::npos);
    CHECK(error.find("    </properties>\n    <testcase classname=\"llmrepro.verdict\" "
                     "name=\"verdict\" time=\"0\">\n"
                     "      <error message=\"" +
                     verdict.headline +
                     "\" type=\"verdict\">could not judge: interrupted: 3 of 40 planned requests "
                     "recorded\ncould not judge: the run stopped: &lt;x&gt;\n</error>") !=
          std::string::npos);
  }
  SUBCASE("unknown fragility fails a prompt only under --fail-on fragile") {
    core::PromptAnalysis& steady = fixture->report.analysis.prompts.at(2);
    REQUIRE(steady.id == "steady");
    steady.fragile = std::nullopt;
    steady.fragility_reason = "no logprobs";
    CHECK(report::render_junit(fixture->report)
              .find("<testcase classname=\"llmrepro.audit\" name=\"steady\" time=\"0\"/>") !=
          std::string::npos);
    fixture->report.verdict.gates.push_back({"fail_on_fragile",
                                             "--fail-on fragile",
                                             {},
                                             4.0,
                                             0.0,
                                             "3 of 5 prompts fragile, 1 of unknown fragility",
                                             false});
    const std::string fragile = report::render_junit(fixture->report);
    CHECK(xml_problem(fragile) == "");
    CHECK(fragile.find("name=\"steady\" time=\"0\">\n      <failure message=\"fragility unknown "
                       "(--fail-on fragile): no logprobs\" "
                       "type=\"fragility_unknown\">") != std::string::npos);
    // The fragile prompt is now named too; the three gates and all five prompts fail.
    CHECK(fragile.find("name=\"near-tie\" time=\"0\">\n      <failure message=\"fragile: min gap "
                       "0.01 nats at token 1 is below \u03c4 = 0.05 (--fail-on fragile)\" "
                       "type=\"fragile\">") != std::string::npos);
    CHECK(fragile.find("tests=\"8\" failures=\"8\" errors=\"0\"") != std::string::npos);
  }
  // tests/browser parses this file with a real XML parser.
  if (const char* path = std::getenv("LLMREPRO_JUNIT_FIXTURE_OUT")) {
    std::ofstream out(path, std::ios::binary);
    out << xml;
    REQUIRE_MESSAGE(out.good(), "cannot write " << path);
  }
}
