// JUnit XML. There is no formal JUnit schema; this follows the shape the common consumers
// read (Jenkins' junit plugin, GitLab's unit test reports, GitHub test-reporter actions):
// <testsuites><testsuite name tests failures errors skipped time timestamp><properties/>
// <testcase classname name time><failure message type>details</failure></testcase>.
#include "report/junit_report.hpp"

#include <fmt/format.h>

#include "core/text_utf8.hpp"
#include "report/iso_time.hpp"

namespace llmrepro::report {
namespace {

constexpr std::size_t k_token_width = 60; // code points of a candidate in a failure message

std::string quoted(const std::string &token) {
  return "\u201c" + core::truncate_utf8(token, k_token_width) + "\u201d";
}

// The one-line reason a prompt fails: what diverged where, or how close a near-tie came.
std::string failure_message(const core::PromptAnalysis &p, double tau) {
  std::string out;
  if (p.unstable) {
    out = fmt::format("unstable: {} distinct completions in {} runs", p.unique_completions, p.runs);
    if (p.first_divergence)
      out += fmt::format("; first divergence at token {}", *p.first_divergence);
    if (p.candidates_at_divergence.size() >= 2) {
      const auto &c = p.candidates_at_divergence;
      out += fmt::format(": {} ({:.4f}) vs {} ({:.4f})", quoted(c[0].token), c[0].logprob,
                         quoted(c[1].token), c[1].logprob);
    }
    if (p.gap_at_divergence) out += fmt::format(", gap {:.4g} nats", *p.gap_at_divergence);
    if (p.fragile) out += "; also fragile";
  } else {
    out = "fragile: min gap";
    if (p.min_gap) out += fmt::format(" {:.4g} nats", *p.min_gap);
    if (p.min_gap_position) out += fmt::format(" at token {}", *p.min_gap_position);
    out += fmt::format(" is below \u03c4 = {:g}", tau);
  }
  return out;
}

// Details in the failure body: the per-level counts and each distinct completion.
std::string failure_details(const core::PromptAnalysis &p) {
  std::string out;
  for (const core::LevelAnalysis &level : p.by_concurrency) {
    out += fmt::format("concurrency {}: {} runs, {} distinct, {} failed\n", level.concurrency,
                       level.runs, level.unique_completions, level.failed);
  }
  for (const core::DistinctCompletion &c : p.completions) {
    out += fmt::format("\n[{}] {} runs", c.is_reference ? "reference" : "variant", c.count);
    if (c.divergence) out += fmt::format(", diverges at token {}", *c.divergence);
    out += ":\n" + core::truncate_utf8(c.text, 2000) + "\n";
  }
  return out;
}

} // namespace

std::string xml_escape(std::string_view text, bool attribute) {
  const std::string clean = core::sanitize_utf8(text);
  std::string out;
  out.reserve(clean.size());
  for (std::size_t i = 0; i < clean.size(); ++i) {
    const char c = clean[i];
    const auto byte = static_cast<unsigned char>(c);
    // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are not XML characters.
    if (byte == 0xEF && i + 2 < clean.size() && static_cast<unsigned char>(clean[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(clean[i + 2]) == 0xBE ||
         static_cast<unsigned char>(clean[i + 2]) == 0xBF)) {
      i += 2;
      continue;
    }
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&apos;"; break;
    case '\t': out += attribute ? "&#9;" : "\t"; break;
    case '\n': out += attribute ? "&#10;" : "\n"; break;
    case '\r': out += "&#13;"; break;
    default:
      if (byte >= 0x20) out += c;
    }
  }
  return out;
}

std::string render_junit(const core::AuditReport &report) {
  const core::AuditData *data = report.data;
  const double tau = data != nullptr ? data->config.fragile_gap : 0.05;
  int failures = 0;
  int errors = 0;
  for (const core::PromptAnalysis &p : report.analysis.prompts) {
    if (p.runs == 0)
      ++errors;
    else if (p.unstable || p.fragile)
      ++failures;
  }
  const int tests = static_cast<int>(report.analysis.prompts.size());
  double seconds = 0.0;
  std::string timestamp;
  std::string id;
  if (data != nullptr) {
    id = data->info.id;
    if (data->info.finished_ms > data->info.started_ms) {
      seconds = static_cast<double>(data->info.finished_ms - data->info.started_ms) / 1000.0;
    }
    if (data->info.started_ms > 0) timestamp = format_iso_utc_ms(data->info.started_ms);
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"llmrepro\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
      tests, failures, errors, seconds);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                     "skipped=\"0\" time=\"{:.3f}\"",
                     xml_escape(id.empty() ? "llmrepro audit" : "llmrepro audit " + id, true),
                     tests, failures, errors, seconds);
  if (!timestamp.empty()) out += fmt::format(" timestamp=\"{}\"", xml_escape(timestamp, true));
  out += ">\n    <properties>\n";
  const auto property = [&](const std::string &name, const std::string &value) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(name, true),
                       xml_escape(value, true));
  };
  const auto index = static_cast<std::size_t>(report.analysis.endpoint_index);
  if (data != nullptr && index < data->endpoints.size()) {
    const core::EndpointInfo &e = data->endpoints[index];
    property("endpoint", e.embedded ? "embedded reference engine" : e.url);
    property("dialect", e.dialect);
    property("model", e.model);
    std::string fingerprints;
    for (const std::string &f : e.fingerprints)
      fingerprints += (fingerprints.empty() ? "" : ",") + f;
    property("fingerprints", fingerprints);
  }
  property("verdict", report.verdict.passed ? "pass" : "fail");
  property("tarr", fmt::format("{}", report.analysis.summary.tarr));
  if (!report.tool.version.empty()) property("llmrepro", report.tool.version);
  out += "    </properties>\n";
  for (const core::PromptAnalysis &p : report.analysis.prompts) {
    out += fmt::format("    <testcase classname=\"llmrepro.audit\" name=\"{}\" time=\"0\"",
                       xml_escape(p.id, true));
    if (p.runs == 0) {
      out += fmt::format(
          ">\n      <error message=\"{}\" type=\"no_completion\">{}</error>\n    </testcase>\n",
          xml_escape(fmt::format("no successful completion: {} requests failed", p.failed), true),
          xml_escape(failure_details(p), false));
    } else if (p.unstable || p.fragile) {
      out += fmt::format(
          ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
          xml_escape(failure_message(p, tau), true), p.unstable ? "unstable" : "fragile",
          xml_escape(failure_details(p), false));
    } else {
      out += "/>\n";
    }
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

} // namespace llmrepro::report
