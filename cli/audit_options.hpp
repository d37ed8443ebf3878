// The flags of `llmrepro audit`, as registered by cli/audit_flags.cpp, and the request they make.
#pragma once

#include <string>

#include "audit/request.hpp"
#include "cli/judging_options.hpp"
#include "cli/report_outputs.hpp"

namespace CLI {
class Option;
}

namespace llmrepro::cli {

struct AuditOptions {
  std::string config;          // --config FILE (cli/config_file.hpp)
  audit::AuditRequest request; // every other flag's value, bound by cli/audit_flags.cpp
  JudgingOptions judging;      // --fail-on, --max-unique, ..., --fragile-gap, --fragile-window
  ReportOutputs outputs;

  // The plan-defining flags, to tell what was given on the command line (--resume compares
  // those with the stored audit).
  struct PlanFlags {
    CLI::Option* suite = nullptr;
    CLI::Option* endpoint = nullptr;
    CLI::Option* compare = nullptr;
    CLI::Option* api = nullptr;
    CLI::Option* model = nullptr;
    CLI::Option* runs = nullptr;
    CLI::Option* concurrency = nullptr;
    CLI::Option* max_tokens = nullptr;
    CLI::Option* top_logprobs = nullptr;
    CLI::Option* seed = nullptr;
    CLI::Option* probe = nullptr;
    CLI::Option* shard = nullptr;
    CLI::Option* stream = nullptr;
    CLI::Option* logprobs_form = nullptr;
    CLI::Option* temperature = nullptr;
    CLI::Option* profile = nullptr;
    CLI::Option* max_concurrency = nullptr;
    CLI::Option* serial_spacing = nullptr;
    CLI::Option* engine_max_num_seqs = nullptr;
    CLI::Option* engine_batch_invariant = nullptr;
    CLI::Option* engine_prefix_cache = nullptr;
    CLI::Option* engine_seed = nullptr;
  } plan_flags;

  // The budget flags, to tell a flag given from its default.
  struct BudgetFlags {
    CLI::Option* max_requests = nullptr;
    CLI::Option* max_tokens_total = nullptr;
    CLI::Option* max_cost = nullptr;
    CLI::Option* stop_after = nullptr;
  } budget_flags;

  // --adaptive's settings, to tell a flag given from its default.
  struct AdaptiveFlags {
    CLI::Option* epsilon = nullptr;
    CLI::Option* initial = nullptr;
    CLI::Option* assume = nullptr;
  } adaptive_flags;
};

// The request the audit room runs: the flags' values, which of them were given, the report
// paths, and where its notices go (stderr, the run's secrets redacted).
audit::AuditRequest request_of(const AuditOptions& options);

} // namespace llmrepro::cli
