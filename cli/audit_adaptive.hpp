// --adaptive as the audit command wires it: its flags checked, and the rounds of waves run one
// look at a time against the database. The rules live in core/adaptive.hpp.
#pragma once

#include <atomic>
#include <functional>

#include "cli/audit_options.hpp"
#include "core/audit.hpp"
#include "core/plan.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::cli {

struct AuditRun;

// --adaptive, --adaptive-epsilon and --adaptive-initial checked and written into `config`: the
// settings need --adaptive, which needs one endpoint, the sweep probe alone, and --runs above
// --adaptive-initial.
core::Result<void> apply_adaptive_options(const AuditOptions& options, core::AuditConfig& config);

// --resume: the adaptive settings are plan-defining; given ones must equal the stored ones.
core::Result<void> check_adaptive_resume(const AuditOptions& options,
                                         const core::AuditConfig& wanted,
                                         const core::AuditConfig& stored);

// Sends one plan's waves and records every request, returning the run's own error.
using SendPlan = std::function<core::Result<void>(const core::Plan&)>;

// Runs an adaptive audit: the initial runs, then a look after each round and the next round for
// the undecided prompts, until none is left, the run is interrupted (stop_requested) or a budget
// runs out. Each
// look reads the records of the rounds planned so far back from the database, so that --resume
// replays the same decisions from what is stored. run.plan accumulates every round planned; the
// decisions are stored after every look and before every round.
core::Result<void> run_adaptive_rounds(AuditRun& run, const SendPlan& send,
                                       const std::atomic<bool>& stop_requested);

} // namespace llmrepro::cli
