// The flags of `llmrepro audit`, as registered by audit_command.cpp and read by its passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/judging_options.hpp"
#include "cli/report_outputs.hpp"

namespace CLI {
class Option;
}

namespace llmrepro::cli {

struct AuditOptions {
  std::string config; // --config FILE (cli/config_file.hpp)
  std::string suite;
  std::vector<std::string> endpoints; // --endpoint, repeatable
  std::vector<std::string> compare;   // --compare, after the endpoints
  std::vector<std::string> probes{"sweep"};
  std::string api = "auto";
  std::string model;
  int runs = 5;
  std::vector<int> levels{1, 8, 32};
  std::string profile = "standard"; // --profile standard|deterministic
  int max_concurrency = 128;        // caps the levels of --profile deterministic
  int max_tokens = 128;
  int top_logprobs = 2;
  bool stream = false;
  std::string logprobs_form = "auto"; // --logprobs-form auto|openai|together
  double timeout_s = 120.0;
  int retries = 3;
  std::size_t max_response_bytes = 16u << 20;
  // The variables holding the keys (cli/audit_keys.hpp): empty, the conventional rule of
  // probes/api_key_rule.hpp.
  std::string api_key_env;                      // for the --endpoint(s)
  std::vector<std::string> compare_api_key_env; // one per --compare, in order
  std::string embeddings_api_key_env;           // for --embeddings
  std::vector<std::string> headers;
  bool insecure = false;
  std::string db = "llmrepro-audit.db";
  bool resume = false;
  bool overwrite = false;
  JudgingOptions judging; // --fail-on, --max-unique, ..., --fragile-gap, --fragile-window
  std::uint64_t seed = 0;
  std::string shard = "1/1";
  double rate = 0.0;
  // Budgets and the cheap first pass (core/budget.hpp); each read only when given (budget_flags).
  std::string price; // --price input=X,output=Y per million tokens
  long max_requests = 0;
  long max_tokens_total = 0;
  double max_cost = 0.0;
  int stop_after = 0;
  bool dry_run = false; // print the plan and its bounds, send nothing, write nothing
  // --adaptive (core/adaptive.hpp): runs spent where they can change a verdict.
  bool adaptive = false;
  double adaptive_epsilon = 0.01;
  int adaptive_initial = 2;
  std::string adaptive_assume = "none"; // --adaptive-assume
  std::string embeddings;
  std::string embeddings_model;
  double semantic_threshold = 0.9;
  ReportOutputs outputs;
  bool quiet = false;
  // The embedded reference engine, used when no --endpoint is given.
  int engine_max_num_seqs = 16;
  bool engine_batch_invariant = false;
  bool engine_prefix_cache = false;
  std::uint64_t engine_seed = 0;

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
    CLI::Option* profile = nullptr;
    CLI::Option* max_concurrency = nullptr;
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

} // namespace llmrepro::cli
