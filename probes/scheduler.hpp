// The audit's request loop: sends a plan's waves through HttpTransport, keeping exactly each
// wave's concurrency in flight, retrying what is worth retrying, and recording every request.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/budget.hpp"
#include "core/clock.hpp"
#include "core/plan.hpp"
#include "core/probe_text.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"
#include "core/suite.hpp"
#include "probes/dialect.hpp"

namespace llmrepro::probes {

// One endpoint of the audit; Wave::endpoint_index indexes a vector of these.
struct EndpointTarget {
  std::string base_url; // validated (validate_base_url); API paths are joined onto it
  Dialect dialect = Dialect::openai_chat;
  std::vector<std::string> headers; // extra "Name: value" lines
  std::string api_key;              // sent as the dialect's key header; never recorded
  bool insecure = false;
  std::string model;            // the model requested here; empty: SchedulerConfig::params.model
  bool llamacpp_router = false; // llama.cpp without -m: native requests name the model
  bool model_given = false;     // --model named `model`: native llama.cpp requests name it too
  // What the capability preflight found refused (capability_preflight.hpp), left out of every
  // request: logprobs, the temperature (also where the provider's default was asked for), the seed.
  bool rejects_logprobs = false;
  bool provider_temperature = false;
  bool omit_seed = false;
  LogprobsForm logprobs_form = LogprobsForm::by_host; // --logprobs-form (openai-chat only)
  // The tokens one request may hold at this server (its context per slot, context_per_slot of
  // its description); empty where it said nothing. The mixed probe's fillers and the long probe's
  // context are cut to fit it (core::sized_filler, core::sized_long_prompt).
  std::optional<int> context_per_slot;
};

struct SchedulerConfig {
  GenerationParams params;
  double timeout_s = 120;         // per attempt
  int retries = 3;                // attempts = 1 + retries at most
  double backoff_initial_s = 0.5; // doubled per retry, capped at backoff_max_s, plus <10% jitter
  double backoff_max_s = 8;
  double rate_limit = 0; // attempt starts per second over the whole run; 0 = unlimited
  // The fewest seconds between two requests of one prompt in a wave of rounds (Wave::rounds,
  // --serial-spacing); 0: none.
  double serial_spacing_s = 0;
  std::size_t max_response_bytes = 16u << 20;
  // The mixed probe's filler lengths: across 256 tokens under --profile deterministic.
  core::FillerShape filler_shape;
  // --stop-after: every request's max_tokens (a prompt's own, the fillers' too) capped at this.
  std::optional<int> stop_after;
};

// The restart probe's command (--restart-cmd) and how long one restart may take, the command's
// time and the readiness wait together (--restart-timeout). The command may hold secrets: it is
// never recorded, printed or put into a message.
struct RestartSettings {
  std::string command;
  double timeout_s = 120;
};

struct SchedulerProgress {
  std::size_t done = 0;   // recorded, successes and failures
  std::size_t failed = 0; // recorded as failed
  std::size_t total = 0;  // to run in this call (already recorded ones excluded)
  int concurrency = 0;    // the level of the wave running now
};

// What run_plan works from and reports to. The references must outlive the call.
struct RunPlanInputs {
  const core::Plan& plan;
  const core::Suite& suite;                   // the prompts the plan indexes
  const std::vector<EndpointTarget>& targets; // indexed by Wave::endpoint_index
  const SchedulerConfig& config;
  core::RecordSink& sink; // receives every recorded request, on the calling thread
  const std::atomic<bool>& stop_requested;
  // The timestamps of the records (started_ms, finished_ms); timing itself (timeouts, backoff,
  // rate limit) runs on the steady clock.
  const core::Clock& clock;
  // Requests to skip (--resume: already recorded); empty: none.
  std::function<bool(const core::PlannedRequest&)> already_recorded = {};
  // Called whenever a wave starts and a request is recorded; empty: none.
  std::function<void(const SchedulerProgress&)> on_progress = {};
  // The probe kinds' side traffic per endpoint, resized to the number of targets; null: not kept.
  std::vector<core::ProbeActivity>* activity = nullptr;
  // The audit's budgets; null: none. Every attempt of an audited request, every filler and every
  // priming request must fit it before it is sent (BudgetLedger::try_start) and is settled when
  // it ends; once it refuses one or a request reports more than its bound, nothing new starts.
  // Its journal is written (BudgetLedger::write_journal) before every transport poll and every
  // blocking request, so that what was reserved is charged durably before it is sent.
  core::BudgetLedger* budget = nullptr;
  // The restart probe's command; null: none (a plan with restart waves then fails at once).
  const RestartSettings* restart = nullptr;
};

// Runs every wave of `inputs.plan` in order against targets[wave.endpoint_index] and hands each
// request's RequestRecord to the sink on this thread as it finishes.
//
// Concurrency: exactly wave.concurrency logical requests are active at once (fewer only at the
// wave's tail). A request waiting out its backoff keeps its slot, so the endpoint sees exactly
// the load the level names. Requests start in the wave's order; already_recorded ones are skipped.
//
// Outcomes: 2xx parsed by parse_response is a success. A 2xx that does not parse, a 429, 408 or
// 425 (waiting Retry-After when given, at most 60 s), a 5xx, an error the endpoint sent in a 2xx
// body or mid-stream (endpoint_error_of), a connection failure, a timeout or a connection closed
// mid-response is retried with backoff, up to config.retries times; another 4xx, a 5xx or an
// endpoint error whose body names a refusal of this request (names_request_refusal), a TLS
// failure or an oversize response fails at once. A failure is recorded once, after its last
// attempt, with error "<reason> after N attempts".
//
// Unreachable endpoint: the first wave that has work is watched until either min(8, A) of its
// attempts have completed (A = the most attempts that wave may make) or one of its requests
// has spent all its attempts. If every attempt until then failed to connect (connection
// refused, host not found, TLS failure), the run starts nothing more, records every request
// that made an attempt as failed, and returns ErrorCode::endpoint "cannot reach <url>: <error>".
// At level >= 8 that is one round trip; at level 1 it is one request's retries (about 3.5 s
// with the default backoff), which also gives a server that is still starting a chance.
// A server that answers anything, even an error status, is reachable: the rule is then off.
//
// Order (--profile adi): in a burst wave (Wave::burst) a prompt's requests start only once the
// previous prompt's have all ended, so each burst is in flight alone; in a wave of rounds
// (Wave::rounds) a prompt's next request starts only once config.serial_spacing_s have passed
// since its previous one started. A resumed audit resends only what is missing, so a burst it
// completes is smaller than the protocol's.
//
// Side traffic of the probe kinds, counted per endpoint into `activity`:
// - each request is sent as core::probe_prompt(prompt, wave.probe) gives it;
// - mixed waves keep wave.concurrency filler requests (core::filler_prompt) in flight beside the
//   audited ones while any audited request of the wave is active; fillers are never recorded,
//   retried or judged beyond counting failures (per level: core::FillerLevel), and the wave ends
//   when its last filler returns; where the target names its context per slot, each filler is
//   first cut to fit it (core::sized_filler), and one that cannot fit is not sent;
// - mixed-sampling waves do the same with their fillers sent with sampling on (temperature 1,
//   top_p 1, seed detail::filler_seed), counted apart (core::FillerLevel::sampled);
// - long waves send their prompts with the long context cut to fit the target's context per slot
//   (core::sized_long_prompt), counted in activity.long_shortened;
// - prefix waves run their requests one at a time: before a warm trial (prefix_trial_is_warm) a
//   priming request with the shared prefix; before a cold trial a cache flush, by the first of
//   POST /flush_cache (SGLang) and POST /reset_prefix_cache (vLLM) that answers 2xx, looked up
//   once per endpoint; when none does, cold trials run without a flush and activity says so;
// - restart waves run their requests one at a time in the plan's order; before the first request
//   of each round (core::restart_round_of) still to run, the restart command runs and the
//   endpoint's readiness route is polled (detail::restart_endpoint), counted in activity. When
//   that fails, the round's remaining requests are not sent: each is recorded as failed with the
//   cause as its error (attempts 0), so that nothing recorded goes missing and the restart cell
//   counts no request that never followed a restart. Under --resume a round with requests left
//   restarts again before them.
//
// Budget (inputs.budget): an audited request's bound is its prompt's (BudgetLedger::bound_of, of
// the prompt as sent) with its max_tokens; a priming request's is its prompt's with 1 token. A
// success spends its reported completion tokens and its reported prompt tokens (the bound where
// the endpoint reports none); a non-2xx status spends no tokens; a transfer that failed, a 2xx
// that does not parse and every filler (never parsed) spend their bound. A refusal or an overrun
// stops the run as Stop does. Cache flushes generate nothing and are not counted.
//
// Stop: once stop_requested is true nothing new starts; transfers in flight finish (bounded by
// their timeout) and are recorded if they succeeded or failed for good; a request that would
// still retry is abandoned unrecorded, so that --resume runs it again. Returns success.
//
// A sink error aborts the transfers in flight and is returned.
core::Result<void> run_plan(const RunPlanInputs& inputs);

// The scheduler's settings for an audit run with `config`: its generation parameters (requesting
// `model` where a target names none), timeout, retries and rate limit; a response larger than
// `max_response_bytes` is refused. The backoff keeps its defaults.
SchedulerConfig scheduler_config_of(const core::AuditConfig& config, const std::string& model,
                                    std::size_t max_response_bytes);

// The cache-flush routes tried, in order.
inline constexpr const char* k_flush_routes[] = {"/flush_cache", "/reset_prefix_cache"};

// The delay before retry number `retry` (1-based): backoff_initial_s * 2^(retry-1), capped at
// backoff_max_s, times (1 + 0.1 * jitter) with jitter in [0, 1). Exposed for tests.
double backoff_delay_s(const SchedulerConfig& config, int retry, double jitter);

} // namespace llmrepro::probes
