// The flags of `llmrepro audit`, one function per help group (cli/option_groups.hpp), added in
// the order `--help`, the man page and docs/options.md list them.
#pragma once

#include "cli/audit_options.hpp"

namespace CLI {
class App;
}

namespace llmrepro::cli {

// Endpoint: where the requests go and how they are sent (URLs, dialect, keys, headers, TLS,
// timeouts, retries, rate).
// Every flag of `llmrepro audit`, in its groups: --config, the endpoint, plan, probe, judging,
// budget, output and engine flags below.
void add_audit_flags(CLI::App& audit, AuditOptions& options);

void add_endpoint_flags(CLI::App& audit, AuditOptions& options);
// Plan: the suite and what is asked of each prompt (runs, levels, profile, tokens, seed, shard,
// --adaptive).
void add_plan_flags(CLI::App& audit, AuditOptions& options);
// Probes: the probe kinds, and the embeddings server of the semantic comparison.
void add_probe_flags(CLI::App& audit, AuditOptions& options);
// Budgets: the price and the caps on requests, tokens and cost; --dry-run.
void add_budget_flags(CLI::App& audit, AuditOptions& options);
// Outputs: the reports, the database and the terminal.
void add_output_flags(CLI::App& audit, AuditOptions& options);
// Engine: the embedded reference engine, used when no --endpoint is given.
void add_engine_flags(CLI::App& audit, AuditOptions& options);

} // namespace llmrepro::cli
