// JUnit XML. There is no formal JUnit schema; this follows the shape the common consumers
// read (Jenkins' junit plugin, GitLab's unit test reports, GitHub test-reporter actions):
// <testsuites><testsuite name tests failures errors skipped time timestamp><properties/>
// <testcase classname name time><failure message type>details</failure></testcase>.
#include "report/junit_report.hpp"

#include <fmt/format.h>

#include "core/text_utf8.hpp"
#include "report/detail/bidi_controls.hpp"
#include "report/detail/iso_time.hpp"

namespace llmrepro::report {
namespace {

constexpr std::size_t k_token_width = 60; // code points of a candidate in a failure message

std::string quoted(const std::string& token) {
  return "\u201c" + core::truncate_utf8(token, k_token_width) + "\u201d";
}

// How a prompt's test case ends: it passes, or fails as one of these (the <failure> type).
enum class Outcome { pass, unstable, inconclusive, fragile, fragility_unknown };

const char* type_of(Outcome outcome) {
  switch (outcome) {
  case Outcome::unstable: return "unstable";
  case Outcome::inconclusive: return "inconclusive";
  case Outcome::fragile: return "fragile";
  case Outcome::fragility_unknown: return "fragility_unknown";
  case Outcome::pass: break;
  }
  return "pass";
}

// Unstable first, then inconclusive (never a passing test: its stability was not shown), then
// fragile; a prompt whose fragility is unknown fails only where --fail-on fragile asked.
Outcome outcome_of(const core::PromptAnalysis& p, bool fail_on_fragile) {
  if (p.status == core::PromptStatus::unstable) return Outcome::unstable;
  if (p.status == core::PromptStatus::inconclusive) return Outcome::inconclusive;
  if (p.fragile == true) return Outcome::fragile;
  if (!p.fragile && fail_on_fragile) return Outcome::fragility_unknown;
  return Outcome::pass;
}

// The one-line reason a prompt fails: what diverged where, how close a near-tie came, or why
// the prompt could not be judged.
std::string failure_message(const core::PromptAnalysis& p, Outcome outcome, double tau) {
  std::string out;
  if (outcome == Outcome::inconclusive) {
    out = p.runs == 0
              ? fmt::format("inconclusive: no successful completion, {} requests failed", p.failed)
              : fmt::format("inconclusive: {} successful completion{}, {} request{} failed", p.runs,
                            p.runs == 1 ? "" : "s", p.failed, p.failed == 1 ? "" : "s");
    if (p.fragile == true) out += "; also fragile";
  } else if (outcome == Outcome::fragility_unknown) {
    out = "fragility unknown (--fail-on fragile): " + p.fragility_reason;
  } else if (outcome == Outcome::unstable) {
    out = fmt::format("unstable: {} distinct completions in {} runs", p.unique_completions, p.runs);
    if (p.first_divergence)
      out += fmt::format("; first divergence at {} {}", p.text_mode ? "char" : "token",
                         *p.first_divergence);
    if (p.divergence_kind == core::DivergenceKind::length) out += " (one completion ends there)";
    if (p.candidates_at_divergence.size() >= 2) {
      const auto& c = p.candidates_at_divergence;
      out += fmt::format(": {} ({:.4f}) vs {} ({:.4f})", quoted(c[0].token), c[0].logprob,
                         quoted(c[1].token), c[1].logprob);
    }
    if (p.gap_at_divergence) out += fmt::format(", gap {:.4g} nats", *p.gap_at_divergence);
    if (p.fragile == true) out += "; also fragile";
  } else {
    out = "fragile: min gap";
    if (p.min_gap) out += fmt::format(" {:.4g} nats", *p.min_gap);
    if (p.min_gap_position) out += fmt::format(" at token {}", *p.min_gap_position);
    out += fmt::format(" is below \u03c4 = {:g}", tau);
  }
  return out;
}

// Details in the failure body: the per-level counts and each distinct completion.
std::string failure_details(const core::PromptAnalysis& p) {
  std::string out;
  for (const core::LevelAnalysis& level : p.by_concurrency) {
    out += fmt::format("concurrency {}: {}, {} runs, {} distinct, {} failed{}\n", level.concurrency,
                       core::to_string(level.status), level.runs, level.unique_completions,
                       level.failed, level.differs_from_serial ? ", differs from serial" : "");
  }
  for (const core::DistinctCompletion& c : p.completions) {
    out += fmt::format("\n[{}] {} runs", c.is_reference ? "reference" : "variant", c.count);
    if (c.divergence)
      out +=
          fmt::format(", diverges at {} {}{}", p.text_mode ? "char" : "token", *c.divergence,
                      c.divergence_kind == core::DivergenceKind::length ? " (one ends there)" : "");
    out += ":\n" + core::truncate_utf8(c.text, 2000) + "\n";
  }
  return out;
}

} // namespace

std::string xml_escape(std::string_view text, bool attribute) {
  const std::string clean = detail::mark_bidi_controls(core::sanitize_utf8(text));
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

std::string render_junit(const core::AuditReport& report) {
  const core::AuditData* data = report.data;
  const core::Verdict& verdict = report.verdict;
  const double tau = data != nullptr ? data->config.fragile_gap : 0.05;
  // Whether the verdict judged --fail-on fragile: unknown fragility then fails a prompt too.
  bool fail_on_fragile = false;
  for (const core::GateResult& gate : verdict.gates)
    fail_on_fragile = fail_on_fragile || gate.name == "fail_on_fragile";
  int failures = 0;
  int errors = 0;
  for (const core::PromptAnalysis& p : report.analysis.prompts)
    if (outcome_of(p, fail_on_fragile) != Outcome::pass) ++failures;
  // The verdict is a test case of its own unless it passed, so that the suite fails exactly when
  // the exit code does.
  if (verdict.status == core::VerdictStatus::fail) ++failures;
  if (verdict.status == core::VerdictStatus::error) ++errors;
  const int tests = static_cast<int>(report.analysis.prompts.size()) +
                    (verdict.status == core::VerdictStatus::pass ? 0 : 1);
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
  const auto property = [&](const std::string& name, const std::string& value) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(name, true),
                       xml_escape(value, true));
  };
  const auto index = static_cast<std::size_t>(report.analysis.endpoint_index);
  if (data != nullptr && index < data->endpoints.size()) {
    const core::EndpointInfo& e = data->endpoints[index];
    property("endpoint", e.embedded ? "embedded reference engine" : e.url);
    property("dialect", e.dialect);
    property("model", e.model);
    std::string fingerprints;
    for (const std::string& f : e.fingerprints)
      fingerprints += (fingerprints.empty() ? "" : ",") + f;
    property("fingerprints", fingerprints);
  }
  property("verdict", core::to_string(verdict.status));
  property("headline", verdict.headline);
  property("tarr", fmt::format("{}", report.analysis.summary.tarr));
  if (!report.tool.version.empty()) property("llmrepro", report.tool.version);
  out += "    </properties>\n";
  if (verdict.status != core::VerdictStatus::pass) {
    // Named "verdict" in a class of its own, so that no prompt id can collide with it.
    std::string body;
    const char* element = "failure";
    if (verdict.status == core::VerdictStatus::error) {
      element = "error";
      for (const std::string& error : verdict.errors) body += "could not judge: " + error + "\n";
    } else {
      for (const core::GateResult& gate : verdict.gates)
        if (!gate.passed) body += "failed: " + gate.flag + ": " + gate.message + "\n";
    }
    out += fmt::format("    <testcase classname=\"llmrepro.verdict\" name=\"verdict\" "
                       "time=\"0\">\n      <{0} message=\"{1}\" type=\"verdict\">{2}</{0}>\n"
                       "    </testcase>\n",
                       element, xml_escape(verdict.headline, true), xml_escape(body, false));
  }
  for (const core::PromptAnalysis& p : report.analysis.prompts) {
    out += fmt::format("    <testcase classname=\"llmrepro.audit\" name=\"{}\" time=\"0\"",
                       xml_escape(p.id, true));
    const Outcome outcome = outcome_of(p, fail_on_fragile);
    if (outcome != Outcome::pass) {
      out += fmt::format(
          ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
          xml_escape(failure_message(p, outcome, tau), true), type_of(outcome),
          xml_escape(failure_details(p), false));
    } else {
      out += "/>\n";
    }
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

} // namespace llmrepro::report
