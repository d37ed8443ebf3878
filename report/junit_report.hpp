// JUnit XML of an audit, so CI systems (GitHub, GitLab, Jenkins) list unstable and fragile
// prompts as failing tests natively.
#pragma once

#include <string>
#include <string_view>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// One <testsuite> (inside <testsuites>) with one <testcase classname="llmrepro.audit"
// name="PROMPT_ID"> per prompt. An unstable or fragile prompt is a <failure> whose message
// gives the divergence position, the two candidates and the gap; a prompt with no successful
// completion is an <error>. Well-formed XML 1.0 whatever the model wrote.
std::string render_junit(const core::AuditReport &report);

// Text made safe for XML 1.0 content and quoted attributes: invalid UTF-8 becomes U+FFFD,
// characters XML 1.0 forbids (C0 controls but tab, LF, CR; U+FFFE, U+FFFF) are dropped, and
// & < > " ' become entities; in attributes tab, LF and CR become character references so a
// parser's attribute normalisation keeps them.
std::string xml_escape(std::string_view text, bool attribute);

} // namespace llmrepro::report
