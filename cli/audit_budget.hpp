// The audit's budgets and --dry-run as the audit command wires them: the ledger a run starts
// with (what a resumed audit already spent), the error line of a run a budget stopped, and the
// printed plan of a dry run. The rules live in core/budget.hpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/audit_report.hpp"
#include "core/budget.hpp"
#include "core/plan.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::cli {

// The budgets `config` sets.
core::BudgetLimits budget_limits_of(const core::AuditConfig& config);

// The ledger of an audit about to run, or empty when it has no budget. What `database` already
// holds (--resume) is spent: each record's attempts, its reported prompt tokens (else the
// prompt's bound) and completion tokens (a failed record: the bound), and the fillers and primes
// the last run counted, and at least what the last budgeted run charged durably (its requests
// in flight at a crash included). The prompt tokens reported are learned for the bounds.
core::Result<std::optional<core::BudgetLedger>> start_ledger(const core::AuditConfig& config,
                                                             const store::AuditDatabase* database);

// The error line of an audit the ledger stopped (core::budget_stop_message, or the overrun), or
// empty when it did not stop it (or stopped only side traffic after the last planned request).
// Undecided: a prompt unstable in no judged scope with fewer successful records than the plan
// holds for it.
std::string budget_stop_error(const core::BudgetLedger& ledger, const core::Plan& plan,
                              const core::AuditData& data, const core::AuditReport& report);

// --dry-run: prints to stdout the endpoints, each wave of `plan` (endpoint, probe, level,
// requests, token bound) and the totals (requests, token bound and, with a price, cost bound).
// False, with one line for each, when a budget (--max-requests, --max-tokens-total, --max-cost)
// is below the plan's own figure: the dry run then exits 1.
bool print_dry_run(const core::AuditConfig& config, const core::Suite& suite,
                   const std::vector<std::string>& urls, const core::Plan& plan);

} // namespace llmrepro::cli
