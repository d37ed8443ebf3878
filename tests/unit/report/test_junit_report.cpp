#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "report/junit_report.hpp"
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

std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++count;
  return count;
}

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
  // Five prompts and the failed verdict; the inconclusive prompt fails, it is no error.
  CHECK(xml.find("<testsuite name=\"llmrepro audit audit-fixture\" tests=\"6\" failures=\"5\" "
                 "errors=\"0\" "
                 "skipped=\"0\" time=\"60.000\" timestamp=\"2023-11-14T22:13:20.000Z\">") !=
        std::string::npos);
  CHECK(count_of(xml, "<testcase classname=\"llmrepro.audit\"") == 5);
  const std::string headline = "FAIL: 2 of 2 gates failed: 8 of 40 requests failed after their "
                               "retries (8 x HTTP 500: &lt;html&gt;oops&lt;/html&gt;), limit 0.000 "
                               "(--max-failed-rate)";
  SUBCASE("the verdict and its headline are properties") {
    CHECK(xml.find("<property name=\"verdict\" value=\"fail\"/>\n      <property "
                   "name=\"headline\" value=\"" +
                   headline + "\"/>") != std::string::npos);
  }
  SUBCASE("a failed verdict is a failing test case listing the failed gates") {
    CHECK(
        xml.find("    </properties>\n    <testcase classname=\"llmrepro.verdict\" "
                 "name=\"verdict\" time=\"0\">\n      <failure message=\"" +
                 headline +
                 "\" type=\"verdict\">failed: --max-failed-rate: 8 of 40 requests failed "
                 "after their retries (8 x HTTP 500: &lt;html&gt;oops&lt;/html&gt;), limit "
                 "0.000 (--max-failed-rate)\nfailed: --fail-on unstable: 2 of 4 judged prompts "
                 "unstable, 1 inconclusive (--fail-on unstable)\n</failure>\n    </testcase>\n") !=
        std::string::npos);
  }
  SUBCASE("an unstable prompt fails with position, candidates and gap") {
    CHECK(xml.find(
              "<testcase classname=\"llmrepro.audit\" name=\"capital\" time=\"0\">\n      <failure "
              "message=\"unstable: 3 distinct completions in 8 runs; first divergence at token 3: "
              "\u201c "
              "Queens\u201d (-0.6800) vs \u201c New\u201d (-0.7100), gap 0.03 nats; also fragile\" "
              "type=\"unstable\">") != std::string::npos);
  }
  SUBCASE("a stable but fragile prompt fails as fragile") {
    CHECK(xml.find("name=\"near-tie\" time=\"0\">\n      <failure message=\"fragile: min gap 0.01 "
                   "nats at token 1 "
                   "is below \u03c4 = 0.05\" type=\"fragile\">") != std::string::npos);
  }
  SUBCASE("a stable prompt passes; a prompt without completions fails as inconclusive") {
    CHECK(xml.find("<testcase classname=\"llmrepro.audit\" name=\"steady\" time=\"0\"/>") !=
          std::string::npos);
    CHECK(xml.find("name=\"broken\" time=\"0\">\n      <failure message=\"inconclusive: no "
                   "successful completion, 8 requests failed\" type=\"inconclusive\">concurrency "
                   "1: inconclusive, 0 runs, 0 distinct, 4 failed\n") != std::string::npos);
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
  SUBCASE("the verdict's other states") {
    core::Verdict& verdict = fixture->report.verdict;
    verdict.status = core::VerdictStatus::error;
    verdict.errors = {"interrupted: 3 of 40 planned requests recorded", "the run stopped: <x>"};
    verdict.headline = "ERROR: the audit could not be judged: interrupted: 3 of 40 planned "
                       "requests recorded (and 1 more)";
    std::string error = report::render_junit(fixture->report);
    CHECK(xml_problem(error) == "");
    CHECK(error.find("tests=\"6\" failures=\"4\" errors=\"1\"") != std::string::npos);
    CHECK(error.find("<property name=\"verdict\" value=\"error\"/>") != std::string::npos);
    CHECK(error.find("<testcase classname=\"llmrepro.verdict\" name=\"verdict\" time=\"0\">\n"
                     "      <error message=\"" +
                     verdict.headline +
                     "\" type=\"verdict\">could not judge: interrupted: 3 of 40 planned requests "
                     "recorded\ncould not judge: the run stopped: &lt;x&gt;\n</error>") !=
          std::string::npos);
    verdict.status = core::VerdictStatus::pass;
    verdict.errors.clear();
    verdict.headline = "PASS: 2 gates passed";
    const std::string pass = report::render_junit(fixture->report);
    CHECK(pass.find("tests=\"5\" failures=\"4\" errors=\"0\"") != std::string::npos);
    CHECK(pass.find("llmrepro.verdict") == std::string::npos);
    CHECK(pass.find("<property name=\"verdict\" value=\"pass\"/>") != std::string::npos);
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
                       "(--fail-on fragile): no logprobs\" type=\"fragility_unknown\">") !=
          std::string::npos);
    CHECK(fragile.find("tests=\"6\" failures=\"6\" errors=\"0\"") != std::string::npos);
  }
  // tests/browser parses this file with a real XML parser.
  if (const char* path = std::getenv("LLMREPRO_JUNIT_FIXTURE_OUT")) {
    std::ofstream out(path, std::ios::binary);
    out << xml;
    REQUIRE_MESSAGE(out.good(), "cannot write " << path);
  }
}
