// An audit as stored and reported: its configuration, endpoints, suite and recorded requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/adaptive_outcome.hpp"
#include "core/analysis_config.hpp"
#include "core/cost.hpp"
#include "core/plan.hpp"
#include "core/reasoning.hpp"
#include "core/request_record.hpp"
#include "core/semantic_agreement.hpp"
#include "core/capabilities.hpp"
#include "core/server_description.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// What `--fail-on` fails on: a list, each judged in every scope (endpoint and probe kind).
enum class FailOn { unstable, fragile, disagree, shift };
const char* to_string(FailOn fail_on);

struct FailOnSet {
  bool unstable = false; // any prompt unstable
  bool fragile = false;  // any prompt fragile, or its fragility unknown
  bool disagree = false; // endpoints' reference completions differ (--compare)
  // Any prompt's answer distribution shifted between levels, or on a --compare endpoint from
  // endpoint 0's, beyond the shift test (core/answer_distribution.hpp): distribution mode's
  // stability gate.
  bool shift = false;
  bool any() const { return unstable || fragile || disagree || shift; }
  friend bool operator==(const FailOnSet&, const FailOnSet&) = default;
};
// "none" or the comma list ("unstable,fragile"), in a fixed order.
std::string to_string(const FailOnSet& fail_on);
// "none", or a comma list of unstable, fragile, disagree and shift.
Result<FailOnSet> parse_fail_on(const std::string& text);

// The gates that decide the verdict of an audit. Judging flags: they may change on --resume and
// in `llmrepro report`, unlike the plan-defining rest of AuditConfig.
struct GateConfig {
  FailOnSet fail_on;
  std::optional<int> max_unique;           // fail when any prompt has more distinct completions
  std::optional<double> max_unstable_rate; // fail when unstable / judged prompts exceeds it
  std::optional<double> min_tara;          // fail when TARa@N falls below it
  // Fail when the largest logprob drift (nats) between runs whose tokens agree exceeds it; 0
  // demands bit-identical logprobs. Fails too when no logprob could be compared.
  std::optional<double> max_logprob_drift;
  // Fail when failed requests / recorded requests exceeds it. Always judged: by default any
  // request that failed after its retries fails the audit.
  double max_failed_rate = 0.0;
  // --min-modal-share: fail when any prompt's modal answer holds less than this share of its
  // runs (distribution mode; failures count against it).
  std::optional<double> min_modal_share;

  // Whether any gate judges stability (the headline says so when none does).
  bool stability_gated() const {
    return fail_on.unstable || fail_on.shift || max_unique || max_unstable_rate ||
           max_logprob_drift || min_modal_share;
  }
  friend bool operator==(const GateConfig&, const GateConfig&) = default;
};

// What an audit sets out to show. `standard` runs the plan and gates the flags name;
// `deterministic` tries to break a server's determinism claim: it plans the batch sizes where
// kernels change, filler traffic across 256 prompt tokens and cold and warm prefix caches, and
// demands bit-identical completions and logprobs everywhere (docs/design.md "Determinism check");
// `adi` runs the public agent-determinism leaderboard's protocol (core/adi_protocol.hpp): per
// prompt a burst of 10 concurrent requests and 3 serial requests 60 s apart, judged by byte- and
// character-level first divergence, modal share and fingerprint drift beside our own figures.
enum class AuditProfile { standard, deterministic, adi };
const char* to_string(AuditProfile profile);
// "standard", "deterministic" or "adi", else a usage error naming --profile.
Result<AuditProfile> parse_audit_profile(const std::string& text);

// The embedded reference engine's settings (--engine-*): they shape its completions as the plan
// does, so --resume keeps them.
struct EngineSettings {
  int max_num_seqs = 16;
  bool batch_invariant = false;
  bool prefix_cache = false;
  std::uint64_t seed = 0;
  friend bool operator==(const EngineSettings&, const EngineSettings&) = default;
};

// The plan-defining settings: what --resume keeps from the stored audit (a value the command line
// gives must agree with it, core/resume_check.hpp) and what every shard of one audit shares.
struct PlanSettings {
  std::string api = "auto"; // requested dialect; EndpointInfo::dialect is what was used
  std::string model;        // empty: whatever the endpoint serves
  int runs = 5;
  // Runs at level 1 where they differ from `runs` (--profile adi: 3 serial runs beside bursts of
  // 10); empty: `runs` at every level, as in audits stored before it was.
  std::optional<int> serial_runs;
  std::vector<int> levels{1, 8, 32};
  std::vector<ProbeKind> probes{ProbeKind::sweep};
  int max_tokens = 128;
  int top_logprobs = 2;
  std::uint64_t seed = 0; // sent where the API takes one, and the plan's shuffle seed
  bool stream = false;
  // --logprobs-form: "auto" (by host), "openai" or "together" (probes/dialect.hpp); it changes
  // what every openai-chat request asks for. "auto" in audits stored before it was.
  std::string logprobs_form = "auto";
  // --temperature: what was requested (each endpoint's capabilities say what was in effect).
  // 0 in audits stored before it was.
  TemperatureMode temperature = TemperatureMode::zero;
  // --stop-after: every request's max_tokens capped at this (a cheap first pass).
  std::optional<int> stop_after;
  int shard_index = 0;
  int shard_count = 1;
  // Plan-defining like the levels and probes it sets: it also shapes the mixed probe's fillers
  // and adds the determinism gate.
  AuditProfile profile = AuditProfile::standard;
  // The embedded engine's settings where the audit runs it; empty for HTTP endpoints and in
  // audits stored before they were, where --resume then compares nothing of them.
  std::optional<EngineSettings> engine;
  // The --header names in the order given, never their values (secrets: cli/audit_keys.hpp);
  // empty in audits stored before they were, where --resume compares nothing of them.
  std::optional<std::vector<std::string>> header_names;
  friend bool operator==(const PlanSettings&, const PlanSettings&) = default;
};

// How each request is sent: not plan-defining (--resume takes the values given), but every shard
// of one audit shares them.
struct RequestSettings {
  double timeout_s = 120.0;
  int retries = 3;
  double rate_limit = 0.0; // requests per second, 0: unlimited
  // --serial-spacing (--profile adi): the fewest seconds between two serial requests of one
  // prompt; 0: none.
  double serial_spacing_s = 0.0;
  friend bool operator==(const RequestSettings&, const RequestSettings&) = default;
};

// Budgets over the whole audit (core/budget.hpp), empty: none. Not plan-defining: --resume may
// give others, which replace these; each shard has its own.
struct BudgetSettings {
  std::optional<long> max_requests; // --max-requests: attempts sent, fillers and primes included
  std::optional<long> max_tokens_total; // --max-tokens-total: prompt + completion tokens
  std::optional<double> max_cost;       // --max-cost: in the currency of AnalysisConfig::price
  friend bool operator==(const BudgetSettings&, const BudgetSettings&) = default;
};

// --adaptive: runs spent where they can still change a verdict (core/adaptive.hpp), the plan's
// `runs` then being the most a prompt gets at a level. Plan-defining: --resume keeps them
// (audit/budget.cpp checks what is given) and every shard shares them.
struct AdaptiveSettings {
  bool enabled = false;
  int initial = k_default_adaptive_initial; // --adaptive-initial: runs before the first look
  // --adaptive-epsilon: the flip probability a robust prompt is below.
  double epsilon = k_default_adaptive_epsilon;
  // --adaptive-assume: what a robust bound may assume unchecked (core/adaptive_outcome.hpp).
  AdaptiveAssumption assume = AdaptiveAssumption::none;
  friend bool operator==(const AdaptiveSettings&, const AdaptiveSettings&) = default;
};

// Everything that shapes an audit's requests and analysis, in parts by how each is treated.
// Stored in the database (one JSON object, store/json_columns.cpp) so that --resume, `report` and
// `merge` see exactly what the audit ran with:
// - plan, adaptive: plan-defining; --resume keeps them, `merge` demands them alike;
// - requests: how requests are sent; --resume takes the values given, `merge` demands them alike;
// - analysis, gates: the judging settings (the price aside); --resume and `report` may replace
//   them, `merge` demands them alike since its verdict judges every shard alike;
// - budget: each run's own; --resume may replace it, `merge` ignores it.
struct AuditConfig {
  PlanSettings plan;
  RequestSettings requests;
  AnalysisConfig analysis;
  GateConfig gates;
  BudgetSettings budget;
  AdaptiveSettings adaptive;
  friend bool operator==(const AuditConfig&, const AuditConfig&) = default;
};

// The name of a --header line "Name: value", trimmed; empty where the line has no colon.
std::string header_name(const std::string& line);

struct EndpointInfo {
  std::string url;     // base URL with any credentials removed
  std::string dialect; // the adapter used: openai-chat, openai-completions, llamacpp, ...
  std::string model;
  bool embedded = false;                 // the in-process reference engine
  std::vector<std::string> fingerprints; // distinct system_fingerprint values seen, sorted
  // What the server said about itself when the run that last connected to it started (empty
  // for the embedded engine, servers without such a route, and audits stored before it was).
  ServerDescription server;
  // What the capability preflight found before the plan ran (core/capabilities.hpp); unchecked
  // where none ran.
  EndpointCapabilities capabilities;
};

struct AuditInfo {
  std::string id;
  std::int64_t started_ms = 0;
  std::int64_t finished_ms = 0;
  std::string status = "partial"; // "complete" once every planned request is recorded
};

// The fillers of one filler probe at one level (one wave's worth, summed over the run's waves
// there): the mixed probe's greedy fillers, or the mixed-sampling probe's sampled ones.
struct FillerLevel {
  int level = 1;
  bool sampled = false; // the mixed-sampling probe's (sent with sampling on)
  int sent = 0;
  // Answered with a status that will not change on a retry (4xx other than 408, 425 and 429):
  // the server refused the filler itself, so the audited requests never shared a batch with it.
  int refused = 0;
  // Cut to fit the endpoint's context per slot (core::sized_filler) before they were sent.
  int shortened = 0;
  // No filler was sent: not even one word and one token fit the context per slot.
  bool unfit = false;
  std::string refusal; // the first refusal in words (core::server_text): "HTTP 400: ..."
  friend bool operator==(const FillerLevel&, const FillerLevel&) = default;
};

// What the probes sent to one endpoint besides the audited requests: the mixed probe's filler,
// the prefix probe's priming requests and cache flushes. Counted by the run that sent them and
// stored with the audit (a resumed run's counts replace the earlier run's), so that `report`
// shows them too.
struct ProbeActivity {
  int filler_sent = 0; // every filler, greedy and sampled: the run's filler numbering
  int filler_failed = 0;
  // Of those, the mixed-sampling probe's (sent with sampling on); the mixed probe's are the rest.
  int sampled_filler_sent = 0;
  int sampled_filler_failed = 0;
  int primes_sent = 0;
  int primes_failed = 0;
  int flushes_sent = 0;
  int flushes_failed = 0;
  bool flush_looked_up = false; // the prefix probe ran and looked for a flush route
  std::string flush_route;      // the route that flushed ("/flush_cache"); empty: none answered
  // The cold trials asked the server to leave its prompt cache out of each request (llama.cpp's
  // `"cache_prompt": false`) instead of flushing it.
  bool cold_per_request = false;
  // The mixed probe's fillers per level, in the order the levels first ran (stored since the
  // fillers were sized to the server's context; absent in older audits: none known).
  std::vector<FillerLevel> filler_levels;
  // Long-probe requests whose context was cut to fit the endpoint's context per slot, and the
  // fewest words of context one of them kept (0 where none was cut).
  int long_shortened = 0;
  int long_context_words_min = 0;
  // The prefix probe's shared prefix was cut to `prefix_words` of core::k_prefix_words words to
  // fit the endpoint's context per slot beside every prompt (0: not one word fit).
  bool prefix_shortened = false;
  int prefix_words = 0;
  // The restart probe's rounds: restart commands run, those that failed (non-zero exit, past
  // --restart-timeout, or the endpoint never ready within it), and the longest a successful one
  // took from the command's start until the endpoint answered its readiness route.
  int restarts_run = 0;
  int restarts_failed = 0;
  int restart_ready_ms_max = 0;
};

// The entry of `level` (greedy or `sampled` fillers) in `activity.filler_levels`, added (in
// arrival order) where missing.
FillerLevel& filler_level(ProbeActivity& activity, int level, bool sampled = false);
// That entry, or null where no such filler ran at `level`.
const FillerLevel* find_filler_level(const ProbeActivity& activity, int level,
                                     bool sampled = false);
// The activity a resumed run starts from, per endpoint: only the earlier runs' sizing of the
// shared prefix (every count starts afresh), so that it sends the prefix their trials had.
std::vector<ProbeActivity> earlier_prefix_sizing(const std::vector<ProbeActivity>& before);
// The sizing of the shared prefix in words, for every report: "shared prefix cut to 52 of 160
// words to fit the server's context per slot", or why the prefix cells are not tested; empty
// where it was not cut.
std::string prefix_sizing_text(const ProbeActivity& activity);

// The fillers of `probe` sent and failed: the mixed probe's greedy ones, the mixed-sampling
// probe's sampled ones; 0 for a probe without fillers.
int fillers_sent(const ProbeActivity& activity, ProbeKind probe);
int fillers_failed(const ProbeActivity& activity, ProbeKind probe);

// How the prefix probe's cold trials were made cold on this endpoint, in words for every report:
// "with the prompt cache off per request (cache_prompt: false)", "after a flush through
// /flush_cache", or empty where the endpoint offered no cold mode (no flush route answered, no
// per-request switch): its "cold" trials were then not cold, and the check says so.
std::string cold_mode_text(const ProbeActivity& activity);

// The whole audit in memory: what the database holds and what the renderers read.
struct AuditData {
  AuditInfo info;
  AuditConfig config;
  std::vector<EndpointInfo> endpoints;
  Suite suite;
  std::vector<RequestRecord> records; // in the order they were recorded
  // Records a streaming load counted but did not keep (successes, store::AuditDatabase::load
  // with KeptRecords::failures): recorded_requests() counts them with `records`.
  std::size_t records_not_kept = 0;
  std::vector<std::string> errors; // audit-level problems worth reporting (not per request)
  std::vector<ProbeActivity> probe_activity; // per endpoint, counted by the last run; stored
  // Semantic agreement of endpoint 0's distinct completions (--embeddings); empty when not
  // measured.
  std::optional<SemanticAgreement> semantic;
  // The decisions of an adaptive audit (--adaptive) as the last run left them; stored.
  std::optional<AdaptiveOutcome> adaptive;
  // The error line of the last run when a budget stopped it (RunFacts::budget_stop); stored, so
  // that `report` names the budget; empty otherwise.
  std::string budget_stop;
};

// Every request recorded: the records kept and those a streaming load only counted.
std::size_t recorded_requests(const AuditData& data);

// The temperature an audit ran at: the provider's default where it was requested, or where the
// preflight found temperature 0 refused or ignored at any endpoint (distribution mode,
// docs/design.md); else 0.
TemperatureMode temperature_in_effect(const AuditData& data);

// The plan an audit configuration implies for `endpoints` endpoints.
PlanConfig plan_config_of(const AuditConfig& config, int endpoints);

// Whether two configurations judge differently: their gates differ, or the analysis settings
// that judge (the fragility rule and --compare-on; not the price). The rest is not compared.
// --resume stores the judging settings it was given only when they differ.
bool judging_differs(const AuditConfig& a, const AuditConfig& b);

// Whether an audit is complete: every one of the `planned` requests is recorded (`recorded`
// counts successes and failures alike) and the run that just ended was not interrupted.
bool audit_complete(std::size_t recorded, std::size_t planned, bool interrupted);

// The status an audit is stored with: "complete" or "partial".
const char* audit_status(bool complete);

// The tool's own identity, printed by --version and written into every report.
struct ToolInfo {
  std::string version;
  std::string build; // compiler, build type and dependency versions
  std::string cuda;  // "compiled (CUDA 13.0)" or "not compiled"
};

} // namespace llmrepro::core
