// The rounds of an audit: a fixed plan sent whole, or --adaptive's rounds of waves run one look at
// a time against the database, and the adaptive settings checked. The rules live in
// core/adaptive.hpp.
#pragma once

#include <atomic>
#include <functional>

#include "audit/request.hpp"
#include "core/audit.hpp"
#include "core/plan.hpp"
#include "core/result.hpp"
#include "store/audit_database.hpp"

namespace llmrepro::audit {

struct AuditRun;

// --adaptive, --adaptive-epsilon and --adaptive-initial checked and written into `config`: the
// settings need --adaptive, which needs one endpoint, the sweep probe alone, and --runs above
// --adaptive-initial.
core::Result<void> apply_adaptive_options(const AuditRequest& options, core::AuditConfig& config);

// --resume: the adaptive settings are plan-defining; given ones must equal the stored ones.
core::Result<void> check_adaptive_resume(const AuditRequest& options,
                                         const core::AuditConfig& wanted,
                                         const core::AuditConfig& stored);

// Sends one plan's waves and records every request, returning the run's own error.
using SendPlan = std::function<core::Result<void>(const core::Plan&)>;

// The rounds of a run, one source for both plans: a fixed audit sends run.plan as its one round;
// an adaptive one (run_adaptive_rounds) plans each round from a look at the last. Returns the
// run's own error.
core::Result<void> run_rounds(AuditRun& run, const SendPlan& send,
                              const std::atomic<bool>& stop_requested);

// Runs an adaptive audit: the initial runs, then a look after each round and the next round for
// the undecided prompts, until none is left, the run is interrupted (stop_requested) or a budget
// runs out. Each
// look reads the records of the rounds planned so far back from the database, so that --resume
// replays the same decisions from what is stored. run.plan accumulates every round planned and
// run.adaptive the decisions, stored after every look and before every round; the last ones are
// stored with the run's outcome.
core::Result<void> run_adaptive_rounds(AuditRun& run, const SendPlan& send,
                                       const std::atomic<bool>& stop_requested);

} // namespace llmrepro::audit
