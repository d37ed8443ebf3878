// What the last run of an audit decided and why it stopped, kept in `meta`: the decisions of an
// adaptive audit (--adaptive) as one JSON document under `adaptive`, absent from every other
// audit, the error line of a run a budget stopped under `budget_stop`, and what the budgets
// have charged (sent or in flight) under `budget_charge`, and each endpoint's description of
// its server under `server:<index>` (absent where it gave none, and in audits stored before
// descriptions were). Private to store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/adaptive_outcome.hpp"
#include "core/budget.hpp"
#include "core/result.hpp"
#include "core/server_description.hpp"
#include "store/detail/sqlite.hpp"

namespace llmrepro::store::detail {

// Replaces the stored decisions with `outcome`.
core::Result<void> write_adaptive(const Connection& connection,
                                  const core::AdaptiveOutcome& outcome);

// The stored decisions; empty when the audit is not adaptive. ErrorCode::input when the document
// is unreadable.
core::Result<std::optional<core::AdaptiveOutcome>> read_adaptive(const Connection& connection);

// Replaces the stored budget stop with `line`; an empty line removes it (the last run was not
// stopped by a budget).
core::Result<void> write_budget_stop(const Connection& connection, const std::string& line);

// The stored budget stop; empty when none.
core::Result<std::string> read_budget_stop(const Connection& connection);

// Replaces the stored budget charge (meta 'budget_charge': {"requests", "prompt_tokens",
// "completion_tokens"}).
core::Result<void> write_budget_charge(const Connection& connection,
                                       const core::BudgetCharge& charge);

// The stored budget charge; empty when no budgeted run stored one. ErrorCode::input when it is
// unreadable.
core::Result<std::optional<core::BudgetCharge>> read_budget_charge(const Connection& connection);

// Replaces endpoint `index`'s stored server description (meta 'server:<index>': {"kind",
// "version", "summary", "facts": [[name, value], ...]}); an unknown description removes it.
core::Result<void> write_server(const Connection& connection, int index,
                                const core::ServerDescription& description);

// Endpoint `index`'s stored description; empty when none is stored. ErrorCode::input when it is
// unreadable.
core::Result<core::ServerDescription> read_server(const Connection& connection, int index);

// Replaces endpoint `index`'s stored capability preflight (meta 'capabilities:<index>':
// {"requests", "model", "requested", "in_effect", "temperature": [outcome, detail], "logprobs":
// [...], "candidates": [requested, returned], "seed": [...], "failure"}); one that did not run
// removes it.
core::Result<void> write_capabilities(const Connection& connection, int index,
                                      const core::EndpointCapabilities& capabilities);

// Endpoint `index`'s stored preflight; unchecked when none is stored. ErrorCode::input when it
// is unreadable.
core::Result<core::EndpointCapabilities> read_capabilities(const Connection& connection, int index);

// The agent settings of the suite's prompts (meta 'agent_prompts': {"<prompt index>": {"tools":
// canonical JSON text, "tool_results": [[name, arguments, result], ...], "max_steps"}} for each
// prompt with tools); no row where none has them.
core::Result<void> write_agent_prompts(const Connection& connection, const core::Suite& suite);
// Puts them back into `suite`, whose prompts were read already. ErrorCode::input when unreadable.
core::Result<void> read_agent_prompts(const Connection& connection, core::Suite& suite);

// Both of endpoint `index`'s meta rows: its server description and its capabilities.
core::Result<void> write_endpoint_meta(const Connection& connection, int index,
                                       const core::EndpointInfo& endpoint);
core::Result<void> read_endpoint_meta(const Connection& connection, int index,
                                      core::EndpointInfo& endpoint);

} // namespace llmrepro::store::detail
