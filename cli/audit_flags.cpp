#include "cli/audit_flags.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "cli/config_file.hpp"
#include "cli/help_export.hpp"
#include "cli/judging_options.hpp"
#include "cli/option_groups.hpp"
#include "cli/report_outputs.hpp"
#include "probes/dialect.hpp"

namespace llmrepro::cli {

namespace {

// The values of --api: auto, then every dialect by the name probes::parse_dialect reads.
std::vector<std::string> api_choices() {
  std::vector<std::string> choices{"auto"};
  for (probes::Dialect dialect : probes::all_dialects()) choices.emplace_back(to_string(dialect));
  return choices;
}

} // namespace

void add_endpoint_flags(CLI::App& audit, AuditOptions& options) {
  const OptionGroupScope group{audit, k_group_endpoint};
  auto& flags = options.plan_flags;
  flags.endpoint = audit.add_option(
      "--endpoint", options.request.endpoints,
      "Base URL of the server (repeatable: the same plan runs against each and the "
      "report compares them); omitted: the embedded reference engine");
  flags.compare =
      audit.add_option("--compare", options.request.compare,
                       "Another endpoint to run the same plan against and compare (repeatable)");
  flags.api = audit
                  .add_option("--api", options.request.api,
                              "API dialect of the endpoints (auto: detect it)")
                  ->check(value_choices(api_choices()))
                  ->capture_default_str();
  flags.model = audit.add_option("--model", options.request.model,
                                 "Model name to request (default: detected)");
  flags.logprobs_form =
      audit
          .add_option("--logprobs-form", options.request.logprobs_form,
                      "How openai-chat requests ask for logprobs: openai (logprobs: true, "
                      "top_logprobs: k), together (logprobs: k, Together's API shape), auto: "
                      "together on api.together.xyz and api.together.ai, openai elsewhere")
          ->check(value_choices({"auto", "openai", "together"}))
          ->capture_default_str();
  flags.temperature =
      audit
          .add_option("--temperature", options.request.temperature,
                      "0: greedy decoding; default: no temperature sent, the provider's own "
                      "sampling, judged by whether each prompt's answer distribution holds "
                      "(chosen by the preflight where temperature 0 is refused or ignored)")
          ->check(value_choices({"0", "default"}))
          ->capture_default_str();
  audit.add_flag("--no-preflight", options.request.no_preflight,
                 "Skip the capability preflight: the few counted requests per endpoint, before "
                 "the plan, that find whether temperature 0 is accepted, refused or ignored, "
                 "whether logprobs come back, whether a seed is honoured, and which model answers");
  audit.add_option(
      "--api-key-env", options.request.api_key_env,
      "Environment variable holding the --endpoint's API key (sent as a bearer token; in "
      "x-goog-api-key with --api gemini, x-api-key with --api anthropic); must be set. Default: "
      "none, except a provider's own "
      "variable for its own https host (OPENAI_API_KEY for api.openai.com, docs/security.md "
      "'Keys')");
  audit.add_option("--compare-api-key-env", options.request.compare_api_key_env,
                   "Environment variable holding the API key of a --compare endpoint "
                   "(repeatable, in --compare order; \"\" for the default rule)");
  audit.add_option("--header", options.request.headers,
                   "Extra request header 'K: V' (repeatable); an Authorization (or "
                   "x-goog-api-key) header replaces the API key");
  audit.add_flag("--insecure", options.request.insecure, "Do not verify TLS certificates");
  audit.add_option("--timeout", options.request.timeout_s, "Per-request timeout in seconds (> 0)")
      ->capture_default_str();
  audit
      .add_option("--retries", options.request.retries,
                  "Retries for connection errors, 429 and 5xx")
      ->capture_default_str();
  audit
      .add_option("--max-response-bytes", options.request.max_response_bytes,
                  "Reject a response larger than this, without buffering it")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 34));
  audit
      .add_option("--rate", options.request.rate, "Cap on requests per second (>= 0; 0: unlimited)")
      ->capture_default_str();
}

void add_plan_flags(CLI::App& audit, AuditOptions& options) {
  const OptionGroupScope group{audit, k_group_plan};
  auto& flags = options.plan_flags;
  flags.suite = audit.add_option("--suite", options.request.suite,
                                 "JSON Lines suite (or one prompt per line)");
  flags.runs =
      audit.add_option("--runs", options.request.runs, "Runs of each prompt at each level")
          ->capture_default_str();
  flags.concurrency = audit
                          .add_option("--concurrency", options.request.levels,
                                      "Concurrency levels, e.g. 1,8,32 (each once)")
                          ->delimiter(',')
                          ->capture_default_str();
  flags.profile =
      audit
          .add_option("--profile", options.request.profile,
                      "standard; deterministic: try to break a determinism claim (levels "
                      "1,2,8,9,16,32,44,64,128, probes sweep,mixed,prefix, fillers across 256 "
                      "tokens) and demand bit-identical tokens and logprobs everywhere; adi: the "
                      "agent-determinism leaderboard's protocol (per prompt a burst of 10 "
                      "concurrent requests and 3 serial ones 60 s apart)")
          ->check(value_choices({"standard", "deterministic", "adi"}))
          ->capture_default_str();
  flags.max_concurrency =
      audit
          .add_option("--max-concurrency", options.request.max_concurrency,
                      "--profile deterministic: drop the levels above it (>= 1)")
          ->capture_default_str();
  flags.serial_spacing =
      audit
          .add_option("--serial-spacing", options.request.serial_spacing_s,
                      "--profile adi: the fewest seconds between two serial requests of one "
                      "prompt (0..86400)")
          ->capture_default_str();
  flags.max_tokens =
      audit.add_option("--max-tokens", options.request.max_tokens, "Default max_tokens")
          ->capture_default_str();
  flags.top_logprobs = audit
                           .add_option("--top-logprobs", options.request.top_logprobs,
                                       "Candidates per token (2..20)")
                           ->capture_default_str();
  flags.stream =
      audit.add_flag("--stream", options.request.stream, "Use streaming (SSE) responses");
  flags.seed = audit
                   .add_option("--seed", options.request.seed,
                               "Seed sent to the endpoint and used for the shuffle")
                   ->capture_default_str();
  flags.shard =
      audit
          .add_option("--shard", options.request.shard,
                      "Audit only slice i of n of the suite (every n-th prompt from the i-th); "
                      "join the slices with `llmrepro merge`")
          ->capture_default_str();
  audit.add_flag("--adaptive", options.request.adaptive,
                 "Spend runs where they change the verdict: --adaptive-initial runs of every "
                 "prompt at each level, then more only for undecided prompts, up to --runs");
  options.adaptive_flags.epsilon =
      audit
          .add_option("--adaptive-epsilon", options.request.adaptive_epsilon,
                      "--adaptive: stop a prompt whose runs agree once its flip probability is "
                      "below this, at 95% confidence")
          ->capture_default_str();
  options.adaptive_flags.initial =
      audit
          .add_option("--adaptive-initial", options.request.adaptive_initial,
                      "--adaptive: runs of every prompt at each level before the first look (>= 2)")
          ->capture_default_str();
  options.adaptive_flags.assume =
      audit
          .add_option("--adaptive-assume", options.request.adaptive_assume,
                      "--adaptive: 'none' (a noise bound only where the audit's records support "
                      "the noise model) or 'greedy-shared-noise' (trust greedy decoding and noise "
                      "shared across prompts unchecked; every report says so)")
          ->capture_default_str();
}

void add_probe_flags(CLI::App& audit, AuditOptions& options) {
  const OptionGroupScope group{audit, k_group_probes};
  options.plan_flags.probe =
      audit
          .add_option("--probe", options.request.probes,
                      "Probe kinds: sweep, mixed (filler traffic), mixed-sampling (filler traffic "
                      "sent with sampling on), prefix (warm vs cold shared prefix), long (long "
                      "prompts), restart (first requests after --restart-cmd vs later ones)")
          ->delimiter(',')
          ->check(value_choices({"sweep", "mixed", "mixed-sampling", "prefix", "long", "restart"}))
          ->capture_default_str();
  audit.add_option("--restart-cmd", options.request.restart_cmd,
                   "Shell command (sh -c, its own process group) that restarts the endpoint; "
                   "adds the restart probe. Never stored or printed; give it again on --resume");
  audit
      .add_option("--restart-timeout", options.request.restart_timeout_s,
                  "Seconds one restart may take: the command, then the wait until the endpoint "
                  "answers its readiness route")
      ->capture_default_str();
  audit.add_option("--embeddings", options.request.embeddings,
                   "After the run, embed each prompt's distinct completions with this "
                   "OpenAI-compatible /v1/embeddings server and report their cosine similarity");
  audit.add_option("--embeddings-model", options.request.embeddings_model,
                   "Embedding model to request (default: the server's)");
  audit.add_option("--embeddings-api-key-env", options.request.embeddings_api_key_env,
                   "Environment variable holding the API key of the --embeddings server");
  audit
      .add_option("--semantic-threshold", options.request.semantic_threshold,
                  "A prompt agrees semantically when its least similar pair reaches this cosine "
                  "(-1..1)")
      ->capture_default_str();
}

void add_budget_flags(CLI::App& audit, AuditOptions& options) {
  const OptionGroupScope group{audit, k_group_budgets};
  auto& budget = options.budget_flags;
  audit.add_option("--price", options.request.price,
                   "Price per million tokens, input=X,output=Y: stored with the audit, and what "
                   "--max-cost and --dry-run count in");
  budget.max_requests = audit.add_option(
      "--max-requests", options.request.max_requests,
      "Budget: requests sent over the whole audit (>= 1; retries, fillers and primes count)");
  budget.max_tokens_total =
      audit.add_option("--max-tokens-total", options.request.max_tokens_total,
                       "Budget: prompt + completion tokens over the whole audit (>= 1)");
  budget.max_cost = audit.add_option("--max-cost", options.request.max_cost,
                                     "Budget: cost over the whole audit at --price (> 0)");
  budget.stop_after = audit.add_option(
      "--stop-after", options.request.stop_after,
      "Cap every request's max_tokens at W (>= 1), a cheap first pass: divergence beyond token "
      "W is not seen");
  audit.add_flag("--dry-run", options.request.dry_run,
                 "Print the plan, its requests and its token and cost bounds; send nothing and "
                 "write no database; exit 1 if a budget is below the plan's bound");
}

void add_output_flags(CLI::App& audit, AuditOptions& options) {
  const OptionGroupScope group{audit, k_group_outputs};
  add_report_output_options(audit, options.outputs);
  audit.add_option("--db", options.request.db, "Audit database (SQLite)")->capture_default_str();
  audit.add_flag("--resume", options.request.resume,
                 "Continue the audit stored in --db with its stored plan; judging flags given "
                 "replace the stored ones");
  audit.add_flag("--overwrite", options.request.overwrite, "Replace an existing --db");
  audit.add_flag("--quiet", options.request.quiet,
                 "Print nothing but errors and, unless the verdict is pass, its headline");
}

void add_engine_flags(CLI::App& audit, AuditOptions& options) {
  const OptionGroupScope group{audit, k_group_engine};
  auto& flags = options.plan_flags;
  flags.engine_max_num_seqs =
      audit
          .add_option("--engine-max-num-seqs", options.request.engine_max_num_seqs,
                      "Embedded engine: sequences per batch")
          ->capture_default_str();
  flags.engine_batch_invariant =
      audit.add_flag("--engine-batch-invariant", options.request.engine_batch_invariant,
                     "Embedded engine: fix every reduction order");
  flags.engine_prefix_cache =
      audit.add_flag("--engine-prefix-cache", options.request.engine_prefix_cache,
                     "Embedded engine: reuse cached prompt prefixes");
  flags.engine_seed = audit.add_option("--engine-seed", options.request.engine_seed,
                                       "Embedded engine: weight seed");
}

void add_audit_flags(CLI::App& audit, AuditOptions& options) {
  add_config_option(audit, options.config);
  add_endpoint_flags(audit, options);
  add_plan_flags(audit, options);
  add_probe_flags(audit, options);
  add_judging_options(audit, options.judging);
  add_budget_flags(audit, options);
  add_output_flags(audit, options);
  add_engine_flags(audit, options);
}

} // namespace llmrepro::cli
