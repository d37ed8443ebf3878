// The server description in every report and in the diff: shown once per endpoint, its
// untrusted text escaped as each format escapes text it did not write.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/audit_diff.hpp"
#include "report/diff_report.hpp"
#include "report/html_report.hpp"
#include "report/json_report.hpp"
#include "report/junit_report.hpp"
#include "report/markdown_report.hpp"
#include "report/terminal_summary.hpp"
#include "tests/support/audit_report_fixture.hpp"

using namespace llmrepro;

namespace {

// A server whose path carries markup, a table pipe and (already replaced by server_text) no
// control character.
core::ServerDescription hostile_llama() {
  return {"llama.cpp",
          "b10470-34af94cd9",
          {{"slots", "8"}, {"model path", "<b>m|x</b>"}},
          "llama.cpp b10470-34af94cd9, 8 slots, <b>m|x</b>"};
}

} // namespace

TEST_CASE("every report shows the endpoint's server description, escaped") {
  const auto fixture = test::make_report_fixture();
  fixture->data.endpoints[0].server = hostile_llama();
  const std::string terminal = report::render_terminal_summary(fixture->report, false);
  CHECK(terminal.find("\nserver     llama.cpp b10470-34af94cd9, 8 slots, <b>m|x</b>\n") !=
        std::string::npos);
  const std::string md = report::render_markdown(fixture->report);
  CHECK(md.find("\nServing stack \u00b7 llama.cpp b10470-34af94cd9, 8 slots, "
                "&#60;b&#62;m&#124;x&#60;/b&#62;\n") != std::string::npos);
  const std::string html = report::render_html(fixture->report);
  CHECK(html.find("serving stack") != std::string::npos);
  CHECK(html.find("&lt;b&gt;m|x&lt;/b&gt;") != std::string::npos);
  CHECK(html.find("<b>m|x</b>") == std::string::npos);
  CHECK(report::render_junit(fixture->report)
            .find("<property name=\"server\" value=\"llama.cpp b10470-34af94cd9, 8 slots, "
                  "&lt;b&gt;m|x&lt;/b&gt;\"/>") != std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(report::render_json(fixture->report));
  const nlohmann::json& server = json.at("endpoints").at(0).at("server");
  CHECK(server.at("kind") == "llama.cpp");
  CHECK(server.at("version") == "b10470-34af94cd9");
  CHECK(server.at("summary") == "llama.cpp b10470-34af94cd9, 8 slots, <b>m|x</b>");
  CHECK(server.at("facts") == nlohmann::json::parse(R"([{"name":"slots","value":"8"},
        {"name":"model path","value":"<b>m|x</b>"}])"));
}

TEST_CASE("an endpoint without a description shows none") {
  const auto fixture = test::make_report_fixture();
  CHECK(report::render_terminal_summary(fixture->report, false).find("\nserver ") ==
        std::string::npos);
  CHECK(report::render_markdown(fixture->report).find("Serving stack") == std::string::npos);
  CHECK(report::render_html(fixture->report).find("serving stack") == std::string::npos);
  CHECK(report::render_junit(fixture->report).find("name=\"server\"") == std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(report::render_json(fixture->report));
  CHECK(json.at("endpoints").at(0).at("server").is_null());
}

TEST_CASE("the diff names each serving-stack change before any number") {
  const auto a = test::make_report_fixture();
  const auto b = test::make_report_fixture();
  a->data.endpoints[0].server = hostile_llama();
  core::ServerDescription newer = hostile_llama();
  newer.version = "b10500-0123abcd";
  newer.facts[0].value = "4";
  b->data.endpoints[0].server = newer;
  core::DiffConfig config;
  config.bootstrap_resamples = 200;
  const core::AuditDiff diff = core::diff_audits(a->report, b->report, config);
  CHECK(diff.server_changes ==
        std::vector<std::string>{"llama.cpp b10470-34af94cd9 -> b10500-0123abcd", "slots 8 -> 4"});
  const std::string md = report::render_diff_markdown(diff);
  const std::string line = "serving stack changed: llama.cpp b10470-34af94cd9 \u2192 "
                           "b10500-0123abcd; slots 8 \u2192 4\n\n";
  const auto at = md.find(line);
  REQUIRE(at != std::string::npos);
  // Straight after the title, before the sides and every metric.
  CHECK(md.find("\n\nA ") > at);
  CHECK(md.rfind("## llmrepro diff: ", 0) == 0);
  CHECK(md.find("\n\n") + 2 == at);
  const nlohmann::json json = nlohmann::json::parse(report::render_diff_json(diff));
  CHECK(json.at("server_changes") ==
        nlohmann::json::array({"llama.cpp b10470-34af94cd9 -> b10500-0123abcd", "slots 8 -> 4"}));
  CHECK(json.at("a").at("server").at("version") == "b10470-34af94cd9");
  CHECK(json.at("b").at("server").at("facts").at(0).at("value") == "4");
  CHECK(report::render_diff_html(diff).find("serving stack changed: llama.cpp") !=
        std::string::npos);
  // Alike on both sides: nothing named.
  const core::AuditDiff same = core::diff_audits(a->report, a->report, config);
  CHECK(same.server_changes.empty());
  CHECK(report::render_diff_markdown(same).find("serving stack") == std::string::npos);
}
