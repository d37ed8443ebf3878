#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/diff_report.hpp"

using namespace llmrepro;

namespace {

core::PromptAnalysis prompt(const std::string& id, std::vector<int> counts) {
  core::PromptAnalysis p;
  p.id = id;
  p.has_logprobs = true;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    core::DistinctCompletion c;
    c.count = counts[i];
    c.is_reference = i == 0;
    p.completions.push_back(c);
    p.runs += counts[i];
  }
  p.unique_completions = static_cast<int>(counts.size());
  p.unstable = counts.size() > 1;
  p.min_gap = 1.0;
  return p;
}

// A: twelve stable prompts. B: the first ten unstable, one of them with a hostile id.
core::AuditDiff regression_diff() {
  core::AuditReport a;
  core::AuditReport b;
  for (int i = 0; i < 12; ++i) {
    const std::string id =
        i == 0 ? std::string("<img src=x onerror=alert(1)>|`") : "p" + std::to_string(i);
    a.analysis.prompts.push_back(prompt(id, {10}));
    b.analysis.prompts.push_back(i < 10 ? prompt(id, {9, 1}) : prompt(id, {10}));
  }
  a.analysis.prompts.push_back(prompt("gone", {10}));
  core::DiffConfig config;
  config.bootstrap_resamples = 1000;
  config.seed = 5;
  return core::diff_audits(a, b, config);
}

} // namespace

TEST_CASE("render_diff_json") {
  const nlohmann::json j = nlohmann::json::parse(report::render_diff_json(regression_diff()));
  CHECK(j.at("schema") == "llmrepro.diff.v1");
  CHECK(j.at("paired_prompts") == 12);
  CHECK(j.at("only_in_a") == nlohmann::json::array({"gone"}));
  CHECK(j.at("config").at("bootstrap_resamples") == 1000);
  CHECK(j.at("config").at("seed") == 5);
  CHECK(j.at("verdict").at("status") == "regression");
  CHECK(j.at("verdict").at("regression") == true);
  const nlohmann::json& tarr = j.at("metrics").at(0);
  CHECK(tarr.at("name") == "tarr");
  CHECK(tarr.at("test") == "mcnemar_exact");
  CHECK(tarr.at("only_a") == 10);
  CHECK(tarr.at("only_b") == 0);
  CHECK(tarr.at("a_interval").at(1) == 1.0);
  CHECK(tarr.at("delta_interval").is_null());
  CHECK(tarr.at("sign_test_p").is_null());
  CHECK(tarr.at("beyond_noise") == true);
  CHECK(tarr.at("regression") == true);
  // Fragility unknown on both sides (no gap rule ran) and tiers inconclusive: no fragile share,
  // no bitwise share.
  const nlohmann::json& unique = j.at("metrics").at(1);
  CHECK(unique.at("name") == "mean_unique_completions");
  CHECK(unique.at("delta_interval").is_array());
  CHECK(unique.at("a_interval").is_null());
  const nlohmann::json& first = j.at("prompts").at(0);
  CHECK(first.at("id") == "<img src=x onerror=alert(1)>|`");
  CHECK(first.at("agreement_change") == "newly unstable");
  CHECK(first.at("tier_change") == "inconclusive");
  CHECK(first.at("a").at("fragile").is_null());
  CHECK(first.at("a").at("agreement") == 1.0);
  CHECK(first.at("b").at("agreement") == 0.9);
  CHECK(first.at("b").at("pass").is_null());
  CHECK(first.at("pass_p").is_null());
}

TEST_CASE("render_diff_markdown") {
  const std::string md = report::render_diff_markdown(regression_diff());
  CHECK(md.rfind("## llmrepro diff: \u274c regression beyond noise\n", 0) == 0);
  CHECK(md.find("| tarr | 100.0% | 16.7% | -83.3 pp | 0.002 | regression (beyond noise) |") !=
        std::string::npos);
  CHECK(md.find("1 prompts only in A, 0 only in B (not compared).") != std::string::npos);
  CHECK(md.find("| &#60;img src=x onerror=alert(1)&#62;&#124;&#96; | newly unstable | 1 \u2192 2 | "
                "100% \u2192 90% |") != std::string::npos);
  // No '<' but the tool's own "<0.001" (the pooled agreement's p is that small here).
  std::string unescaped = md;
  for (std::size_t at = unescaped.find("<0.001"); at != std::string::npos;
       at = unescaped.find("<0.001"))
    unescaped.erase(at, 1);
  CHECK(unescaped.find('<') == std::string::npos);
  CHECK(md.find("| pooled_agreement | 100.0% | 91.7% | -8.3 pp | <0.001 |") != std::string::npos);
  // The line under the title names what regressed, so a CI summary needs no scrolling.
  CHECK(md.find("**Regressed:** tarr 100.0% \u2192 16.7%") != std::string::npos);
}

TEST_CASE("render_diff_html") {
  const std::string html = report::render_diff_html(regression_diff());
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("<span class=\"badge\">REGRESSION</span>") != std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<code>&lt;img src=x onerror=alert(1)&gt;|`</code>") != std::string::npos);
  CHECK(html.find("<td class=\"num\">10/10 \u2192 9/10</td>") != std::string::npos);
  CHECK(html.find("<div>Regressed: tarr 100.0% \u2192 16.7%") != std::string::npos);
}

TEST_CASE("render_diff_html puts regressed prompts first and names them") {
  core::AuditDiff diff;
  for (const char* id : {"fine", "worse<b>", "better"}) {
    core::PromptDiff p;
    p.id = id;
    p.a.runs = p.b.runs = 10;
    p.agreement_change = "stable";
    diff.prompts.push_back(p);
  }
  diff.prompts[1].beyond_noise = diff.prompts[1].regression = true;
  diff.prompts[2].beyond_noise = diff.prompts[2].improvement = true;
  const std::string html = report::render_diff_html(diff);
  const auto worse = html.find("<tr><td><code>worse&lt;b&gt;</code>");
  const auto better = html.find("<tr><td><code>better</code>");
  const auto fine = html.find("<tr><td><code>fine</code>");
  REQUIRE(worse != std::string::npos);
  REQUIRE(better != std::string::npos);
  REQUIRE(fine != std::string::npos);
  CHECK(worse < better);
  CHECK(better < fine);
  CHECK(html.find("<div>Regressed: 1 prompt (worse&lt;b&gt;)</div>") != std::string::npos);
  const std::string md = report::render_diff_markdown(diff);
  CHECK(md.find("**Regressed:** 1 prompt (worse&#60;b&#62;)") != std::string::npos);
}

TEST_CASE("the diff's serving speed per level, in JSON, Markdown and HTML") {
  core::AuditDiff diff = regression_diff();
  diff.speeds = {{1, 200.0, 150.0, 40.0, 50.0, 50.0, 61.0, 0.75, 1.25},
                 {8, 0.0, 900.0, 0.0, 90.0, 0.0, 99.0, std::nullopt, std::nullopt}};
  const nlohmann::json j = nlohmann::json::parse(report::render_diff_json(diff));
  REQUIRE(j.at("speeds").size() == 2);
  CHECK(j.at("speeds").at(0) == nlohmann::json{{"concurrency", 1},
                                               {"a_tokens_per_second", 200.0},
                                               {"b_tokens_per_second", 150.0},
                                               {"throughput_ratio", 0.75},
                                               {"a_mean_latency_ms", 40.0},
                                               {"b_mean_latency_ms", 50.0},
                                               {"latency_ratio", 1.25},
                                               {"a_p95_latency_ms", 50.0},
                                               {"b_p95_latency_ms", 61.0}});
  CHECK(j.at("speeds").at(1).at("throughput_ratio").is_null());
  const std::string md = report::render_diff_markdown(diff);
  CHECK(md.find("| level | A tok/s | B tok/s | B/A | A latency ms (p95) | B latency ms (p95) | "
                "B/A |\n") != std::string::npos);
  CHECK(md.find("| c=1 | 200.0 | 150.0 | 0.75 | 40.0 (50) | 50.0 (61) | 1.25 |\n") !=
        std::string::npos);
  CHECK(md.find("| c=8 | 0.0 | 900.0 | \u2013 | 0.0 (0) | 90.0 (99) | \u2013 |\n") !=
        std::string::npos);
  const std::string html = report::render_diff_html(diff);
  CHECK(html.find("<section class=\"panel\" id=\"speeds\">") != std::string::npos);
  CHECK(html.find("<td class=\"num\">50.0 (61)</td><td class=\"num\">1.25</td>") !=
        std::string::npos);
}
