// JUnit XML of an audit, so CI systems (GitHub, GitLab, Jenkins) list unstable and fragile
// prompts as failing tests natively.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// One <testsuite> (inside <testsuites>) whose properties carry "verdict" (pass, fail or error)
// and "headline" (the verdict's headline verbatim). Unless the verdict passed, a first
// <testcase classname="llmrepro.verdict" name="verdict"> holds an <error type="verdict"> (the
// audit could not be judged: one line per reason) or a <failure type="verdict"> (one line per
// failed gate), its message the headline; so the suite fails exactly when the exit code does.
// Then one <testcase classname="llmrepro.audit" name="PROMPT_ID"> per prompt: an unstable
// prompt is a <failure type="unstable"> whose message gives the divergence position, the two
// candidates and the gap; an inconclusive one (fewer than two successful completions, or a
// failed request) a <failure type="inconclusive">, never a passing test; a fragile one a
// <failure type="fragile">; one whose fragility is unknown a <failure type="fragility_unknown">
// where the verdict judged --fail-on fragile. Well-formed XML 1.0 whatever the model wrote.
std::string render_junit(const core::AuditReport& report);

// The same document written to `out` a prompt's test case at a time (the prompts are counted
// first, since the counts lead the document).
void write_junit(const core::AuditReport& report, std::ostream& out);

// Text made safe for XML 1.0 content and quoted attributes: invalid UTF-8 becomes U+FFFD,
// characters XML 1.0 forbids (C0 controls but tab, LF, CR; U+FFFE, U+FFFF) are dropped, and
// & < > " ' become entities; in attributes tab, LF and CR become character references so a
// parser's attribute normalisation keeps them.
std::string xml_escape(std::string_view text, bool attribute);

} // namespace llmrepro::report
