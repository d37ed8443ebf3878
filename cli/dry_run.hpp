// --dry-run's printed plan: each wave's requests and token bound, the totals and any budget
// below them. The bounds are core/budget.hpp's.
#pragma once

#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/plan.hpp"
#include "core/suite.hpp"

namespace llmrepro::cli {

// --dry-run: prints to stdout the endpoints, each wave of `plan` (endpoint, probe, level,
// requests, token bound) and the totals (requests, token bound and, with a price, cost bound).
// False, with one line for each, when a budget (--max-requests, --max-tokens-total, --max-cost)
// is below the plan's own figure: the dry run then exits 1.
bool print_dry_run(const core::AuditConfig& config, const core::Suite& suite,
                   const std::vector<std::string>& urls, const core::Plan& plan);

} // namespace llmrepro::cli
