// The audit's budgets as a run wires them: the ledger a run starts with (what a resumed audit
// already spent) and the error line of a run a budget stopped. The rules live in core/budget.hpp.
#pragma once

#include <optional>
#include <string>

#include "audit/session.hpp"
#include "core/audit.hpp"
#include "core/audit_report.hpp"
#include "core/budget.hpp"
#include "core/plan.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::audit {

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
                              const Session& session);

} // namespace llmrepro::audit
