// JUnit XML. There is no formal JUnit schema; this follows the shape the common consumers
// read (Jenkins' junit plugin, GitLab's unit test reports, GitHub test-reporter actions):
// <testsuites><testsuite name tests failures errors skipped time timestamp><properties/>
// <testcase classname name time><failure message type>details</failure></testcase>, with
// <skipped message/> and <system-out> for what passed with a finding.
#include "report/junit_report.hpp"

#include <fmt/format.h>

#include <optional>
#include <ostream>
#include <sstream>
#include <vector>

#include "core/text_utf8.hpp"
#include "report/detail/bidi_controls.hpp"
#include "report/detail/iso_time.hpp"

namespace llmrepro::report {
namespace {

constexpr std::size_t k_candidate_width = 60; // code points of a candidate in a failure message

std::string quoted_candidate(const std::string& token) {
  return "\u201c" + core::truncate_utf8(token, k_candidate_width) + "\u201d";
}

// What a prompt's test case reports: nothing, or one of these.
enum class Outcome { pass, unstable, inconclusive, fragile, fragility_unknown };

// What the audit saw of a prompt, the worst first: unstable, inconclusive (its stability was not
// shown), fragile. Unknown fragility is no finding of its own: --fail-on fragile names it.
Outcome outcome_of(const core::PromptAnalysis& p) {
  if (p.status == core::PromptStatus::unstable) return Outcome::unstable;
  if (p.status == core::PromptStatus::inconclusive) return Outcome::inconclusive;
  if (p.fragile == true) return Outcome::fragile;
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
      out += fmt::format(": {} ({:.4f}) vs {} ({:.4f})", quoted_candidate(c[0].token.str()),
                         c[0].logprob, quoted_candidate(c[1].token.str()), c[1].logprob);
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
std::string failure_details(const core::AuditReport& report, const core::PromptAnalysis& prompt) {
  core::PromptAnalysis scratch;
  const core::PromptAnalysis& p = core::detailed(report, prompt, scratch);
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

namespace {

// Why a failing gate names a prompt: the <failure> type and the one-line reason.
struct Naming {
  const core::GateResult* gate = nullptr;
  std::string type;
  std::string message;
};

// Whether the gate's scope holds the judged scope (an empty member holds every one).
bool covers(const core::GateScope& gate, const core::JudgedScope& scope) {
  return (!gate.endpoint || *gate.endpoint == scope.endpoint) &&
         (!gate.probe || *gate.probe == scope.probe);
}

// The comparison of prompt `p` on the scope's endpoint with endpoint 0; null where none.
const core::EndpointDivergence* compared_with_endpoint_0(const core::AuditReport& report,
                                                         const core::PromptAnalysis& p,
                                                         const core::JudgedScope& scope) {
  if (!report.comparison) return nullptr;
  for (const core::PromptComparison& compared : report.comparison->prompts) {
    if (compared.id != p.id) continue;
    for (const core::EndpointDivergence& other : compared.endpoints)
      if (other.endpoint_index == scope.endpoint) return &other;
  }
  return nullptr;
}

// The prompt a failing gate names in `scope`, with why; nothing where the gate says nothing of
// it. A gate names what makes its figure exceed its limit: the unstable prompts for
// --fail-on unstable and --max-unstable-rate, those whose answers disagree for --min-tara, the
// fragile (and, as --fail-on fragile counts them, unknown) ones, those with more distinct
// completions than --max-unique, more drift than --max-logprob-drift, failed requests for
// --max-failed-rate, another reference than endpoint 0's for --fail-on disagree, answers that
// shifted between levels or from endpoint 0's for --fail-on shift, and the prompt where
// --profile deterministic first broke.
std::optional<Naming> naming_of(const core::GateResult& gate, const core::JudgedScope& scope,
                                const core::PromptAnalysis& p, const core::AuditReport& report,
                                double tau) {
  if (gate.passed || !covers(gate.scope, scope)) return std::nullopt;
  const std::string& name = gate.name;
  if (name == "fail_on_unstable" || name == "max_unstable_rate") {
    if (p.status == core::PromptStatus::unstable)
      return Naming{&gate, "unstable", failure_message(p, Outcome::unstable, tau)};
  } else if (name == "min_tara") {
    if (!p.answers_agree)
      return Naming{&gate, "answers_disagree",
                    p.status == core::PromptStatus::unstable
                        ? failure_message(p, Outcome::unstable, tau)
                        : std::string("answers disagree (TARa)")};
  } else if (name == "fail_on_shift") {
    if (p.shifted)
      return Naming{&gate, "answer_distribution_shifted",
                    "its answer distribution shifted between levels (--fail-on shift)"};
  } else if (name == "min_modal_share") {
    if (gate.limit && p.modal.runs > 0 && p.modal.share < *gate.limit)
      return Naming{
          &gate, "modal_share_below",
          fmt::format("its most frequent answer held {:.2f} of {} runs (--min-modal-share)",
                      p.modal.share, p.modal.runs)};
  } else if (name == "fail_on_fragile") {
    if (p.fragile == true)
      return Naming{&gate, "fragile", failure_message(p, Outcome::fragile, tau)};
    if (!p.fragile)
      return Naming{&gate, "fragility_unknown",
                    failure_message(p, Outcome::fragility_unknown, tau)};
  } else if (name == "max_unique") {
    if (gate.limit && p.unique_completions > *gate.limit)
      return Naming{&gate, "max_unique",
                    fmt::format("{} distinct completions in {} runs, limit {:g}",
                                p.unique_completions, p.runs, *gate.limit)};
  } else if (name == "max_logprob_drift") {
    if (gate.limit && p.status != core::PromptStatus::inconclusive &&
        p.logprob_drift.positions_compared > 0 && p.logprob_drift.max_abs > *gate.limit)
      return Naming{&gate, "logprob_drift",
                    fmt::format("logprob drift {:.3g} nats, limit {:.3g}", p.logprob_drift.max_abs,
                                *gate.limit)};
  } else if (name == "max_failed_rate") {
    if (p.status == core::PromptStatus::inconclusive)
      return Naming{&gate, "inconclusive", failure_message(p, Outcome::inconclusive, tau)};
    if (p.failed > 0)
      return Naming{&gate, "failed_requests",
                    fmt::format("{} of {} requests failed", p.failed, p.runs + p.failed)};
  } else if (name == "fail_on_endpoint_shift") {
    if (const core::EndpointDivergence* other = compared_with_endpoint_0(report, p, scope);
        other != nullptr && other->shifted && other->shift_p_adjusted)
      return Naming{&gate, "answer_distribution_shifted_from_endpoint_0",
                    fmt::format("its answer distribution shifted from endpoint 0's (p {:.2g}) "
                                "(--fail-on shift)",
                                *other->shift_p_adjusted)};
  } else if (name == "fail_on_disagree") {
    if (const core::EndpointDivergence* other = compared_with_endpoint_0(report, p, scope);
        other != nullptr && !other->agrees)
      return Naming{&gate, "disagree",
                    other->has_reference
                        ? "reference completion differs from endpoint 0's"
                        : std::string("no successful completion to compare with endpoint 0's")};
  } else if (name == "determinism") {
    const auto e = static_cast<std::size_t>(scope.endpoint);
    if (e < report.determinism.size() && report.determinism[e].first_break &&
        report.determinism[e].first_break->prompt == p.id &&
        report.determinism[e].first_break->probe == scope.probe)
      return Naming{&gate, "determinism", gate.message};
  }
  return std::nullopt;
}

// What the audit saw of a prompt that no failing gate names: findings, not failures.
std::string finding_of(const core::PromptAnalysis& p, double tau) {
  const Outcome outcome = outcome_of(p);
  if (outcome == Outcome::pass) return {};
  return failure_message(p, outcome, tau);
}

// A test case's name for a gate: its flag, and where several scopes are judged, the scope.
std::string gate_case_name(const core::GateResult& gate, bool several) {
  std::string name = gate.flag;
  // Beside the same flag's gates of each endpoint's levels.
  if (gate.name == "fail_on_endpoint_shift")
    return name + (gate.scope.endpoint
                       ? " (endpoint " + std::to_string(*gate.scope.endpoint) + " vs endpoint 0)"
                       : std::string(" (between endpoints)"));
  if (!several) return name;
  std::string scope;
  if (gate.scope.endpoint) scope = "endpoint " + std::to_string(*gate.scope.endpoint);
  if (gate.scope.probe && gate.name != "determinism")
    scope += (scope.empty() ? "" : ", ") + std::string(core::to_string(*gate.scope.probe));
  return scope.empty() ? name : name + " (" + scope + ")";
}

// The prompts' class: endpoint 0's primary probe kind is "llmrepro.audit", another scope
// "llmrepro.audit.endpoint-1.long".
std::string class_of(const core::JudgedScope& scope, bool first) {
  if (first) return "llmrepro.audit";
  return fmt::format("llmrepro.audit.endpoint-{}.{}", scope.endpoint, core::to_string(scope.probe));
}

} // namespace

namespace {

// How one prompt's test case counts.
struct PromptCase {
  bool failed = false;
  bool skipped = false;
};

// One prompt's test case: how it counts and, where `text` is given, its XML appended there (the
// prompt's detail read back for its failure body).
PromptCase prompt_case(const core::AuditReport& report, const core::JudgedScope& scope,
                       const core::PromptAnalysis& p, const std::string& classname, double tau,
                       std::string* text) {
  PromptCase counted;
  std::vector<Naming> namings;
  for (const core::GateResult& gate : report.verdict.gates)
    if (auto naming = naming_of(gate, scope, p, report, tau)) namings.push_back(*naming);
  std::string finding;
  if (namings.empty()) {
    finding = finding_of(p, tau);
    counted.skipped = !finding.empty() && p.status == core::PromptStatus::inconclusive;
  }
  counted.failed = !namings.empty();
  if (text == nullptr) return counted;
  std::string& cases = *text;
  cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\"", classname,
                       xml_escape(p.id, true));
  if (!namings.empty()) {
    // The reason, then each gate that names the prompt (unless the reason names it).
    std::string message = namings.front().message;
    std::string flags;
    for (const Naming& naming : namings)
      if (message.find(naming.gate->flag) == std::string::npos &&
          flags.find(naming.gate->flag) == std::string::npos)
        flags += (flags.empty() ? "" : ", ") + naming.gate->flag;
    if (!flags.empty()) message += " (" + flags + ")";
    cases +=
        fmt::format(">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                    xml_escape(message, true), namings.front().type,
                    xml_escape(failure_details(report, p), false));
  } else if (finding.empty()) {
    cases += "/>\n";
  } else if (counted.skipped) {
    cases += fmt::format(">\n      <skipped message=\"{}\"/>\n      <system-out>{}</system-out>\n"
                         "    </testcase>\n",
                         xml_escape(finding, true), xml_escape(failure_details(report, p), false));
  } else {
    cases += fmt::format(">\n      <system-out>finding, no gate failed on it: {}\n\n{}"
                         "</system-out>\n    </testcase>\n",
                         xml_escape(finding, false), xml_escape(failure_details(report, p), false));
  }
  return counted;
}

} // namespace

// One test case per gate and one per prompt of each judged scope. A gate's case fails when the
// gate failed; a prompt's case fails when a failing gate names it (naming_of), so the suite fails
// exactly when the exit code does and for the same gates. What no failing gate names (an
// unstable prompt with no stability gate, a fragile one without --fail-on fragile) is a finding:
// written to the case's <system-out>, or, for a prompt that could not be judged, <skipped>.
void write_junit(const core::AuditReport& report, std::ostream& stream) {
  const core::AuditData* data = report.data;
  const core::Verdict& verdict = report.verdict;
  const double tau =
      data != nullptr ? data->config.analysis.fragile_gap : core::k_default_fragile_gap;
  const std::vector<core::JudgedScope> scopes = core::judged_scopes(report);
  const bool several = scopes.size() > 1;

  std::string cases;
  int tests = 0;
  int failures = 0;
  int errors = 0;
  int skipped = 0;
  if (verdict.status == core::VerdictStatus::error) {
    // Named "verdict" in a class of its own, so that no prompt id can collide with it.
    std::string body;
    for (const std::string& error : verdict.errors) body += "could not judge: " + error + "\n";
    cases += fmt::format("    <testcase classname=\"llmrepro.verdict\" name=\"verdict\" "
                         "time=\"0\">\n      <error message=\"{}\" type=\"verdict\">{}</error>\n"
                         "    </testcase>\n",
                         xml_escape(verdict.headline, true), xml_escape(body, false));
    ++tests;
    ++errors;
  }
  for (const core::GateResult& gate : verdict.gates) {
    ++tests;
    cases += fmt::format("    <testcase classname=\"llmrepro.gate\" name=\"{}\" time=\"0\"",
                         xml_escape(gate_case_name(gate, several), true));
    if (gate.passed) {
      cases += fmt::format(">\n      <system-out>passed: {}</system-out>\n    </testcase>\n",
                           xml_escape(gate.message, false));
      continue;
    }
    ++failures;
    std::string named;
    for (const core::JudgedScope& scope : scopes)
      for (const core::PromptAnalysis& p : scope.analysis->prompts)
        if (naming_of(gate, scope, p, report, tau))
          named += (named.empty() ? "" : ", ") + p.id +
                   (several ? fmt::format(" (endpoint {}, {})", scope.endpoint,
                                          core::to_string(scope.probe))
                            : "");
    cases += fmt::format(
        ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n"
        "    </testcase>\n",
        xml_escape(gate.message, true), xml_escape(gate.name, true),
        xml_escape(named.empty() ? std::string("no prompt named\n") : "prompts: " + named + "\n",
                   false));
  }
  // The counts lead the document: the prompts' cases are counted first, without their text, and
  // written after the properties a case at a time.
  for (const core::JudgedScope& scope : scopes)
    for (const core::PromptAnalysis& p : scope.analysis->prompts) {
      ++tests;
      const PromptCase counted = prompt_case(report, scope, p, {}, tau, nullptr);
      failures += counted.failed ? 1 : 0;
      skipped += counted.skipped ? 1 : 0;
    }

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
  out += fmt::format("<testsuites name=\"llmrepro\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                     "skipped=\"{}\" time=\"{:.3f}\">\n",
                     tests, failures, errors, skipped, seconds);
  out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
                     "skipped=\"{}\" time=\"{:.3f}\"",
                     xml_escape(id.empty() ? "llmrepro audit" : "llmrepro audit " + id, true),
                     tests, failures, errors, skipped, seconds);
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
    // Only where the server described itself: a CI dashboard shows the serving stack audited.
    if (e.server.known()) property("server", e.server.summary);
    // What the preflight found, and what was requested against what was in effect.
    if (e.capabilities.checked()) {
      property("capabilities", core::capabilities_line(e.capabilities));
      property("temperature_in_effect", core::to_string(e.capabilities.in_effect));
    }
  }
  property("verdict", core::to_string(verdict.status));
  property("headline", verdict.headline);
  property("tarr", fmt::format("{}", report.analysis.summary.tarr));
  // The findings of endpoint 0's primary probe kind, whatever the gates made of them.
  const core::AuditSummary& summary = report.analysis.summary;
  property("unstable_prompts", std::to_string(summary.unstable_prompts));
  property("fragile_prompts", std::to_string(summary.fragile_prompts));
  property("inconclusive_prompts", std::to_string(summary.inconclusive_prompts));
  if (summary.max_logprob_drift)
    property("max_logprob_drift", fmt::format("{:g}", *summary.max_logprob_drift));
  // --profile adi: the leaderboard protocol's figures, a property a line.
  for (const std::string& line : core::adi_lines(report.adi)) property("adi", line);
  if (!report.tool.version.empty()) property("llmrepro", report.tool.version);
  out += "    </properties>\n";
  out += cases;
  stream.write(out.data(), static_cast<std::streamsize>(out.size()));
  for (std::size_t s = 0; s < scopes.size(); ++s) {
    const std::string classname = xml_escape(class_of(scopes[s], s == 0), true);
    for (const core::PromptAnalysis& p : scopes[s].analysis->prompts) {
      out.clear();
      prompt_case(report, scopes[s], p, classname, tau, &out);
      stream.write(out.data(), static_cast<std::streamsize>(out.size()));
    }
  }
  stream << "  </testsuite>\n</testsuites>\n";
}

std::string render_junit(const core::AuditReport& report) {
  std::ostringstream out;
  write_junit(report, out);
  return std::move(out).str();
}

} // namespace llmrepro::report
