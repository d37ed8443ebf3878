// The JSON report (llmrepro.audit.v1): the contract CI scripts read. Its JSON Schema is
// schemas/llmrepro.audit.v1.schema.json; every report this renders validates against it.
#pragma once

#include <ostream>
#include <string>

#include "core/audit_report.hpp"

namespace llmrepro::report {

// The schema identifier written as the report's "schema" field.
inline constexpr const char* k_json_report_schema = "llmrepro.audit.v1";

// Renders the report as JSON, 2-space indent, keys in the documented order, ending in a newline.
// Absent optional values are null; non-finite numbers are null as well (JSON has none); doubles
// are printed so that they parse back to the same value. Invalid UTF-8 in model text becomes
// U+FFFD. `report.data` must not be null.
std::string render_json(const core::AuditReport& report);

// The same document written to `out` as it is rendered, a prompt at a time, so that a large
// audit's report is never held whole in memory.
void write_json(const core::AuditReport& report, std::ostream& out);

} // namespace llmrepro::report
