// What an audit is asked to do: every value a command line (or a test) gives, each with its
// default, and which of them were given explicitly. The passes (audit/run.hpp) read nothing else;
// cli/ fills it from its flags, a unit test by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/audit.hpp"
#include "core/resume_check.hpp"
#include "store/output_file.hpp"

namespace llmrepro::audit {

// The names of `kinds` as --probe spells them: the default --probe list is the plan's.
inline std::vector<std::string> probe_names(const std::vector<core::ProbeKind>& kinds) {
  std::vector<std::string> names;
  for (const core::ProbeKind kind : kinds) names.emplace_back(core::to_string(kind));
  return names;
}

// The judging values `audit` and `report` share (--fail-on, --max-unique, --max-unstable-rate,
// --min-tara, --max-logprob-drift, --max-failed-rate, --fragile-gap, --fragile-window,
// --fragile-p, --compare-on), and which were given: --resume and `report` keep the stored value
// of a value not given.
struct Judging {
  std::string fail_on = core::to_string(core::GateConfig{}.fail_on);
  std::optional<int> max_unique;
  std::optional<double> max_unstable_rate;
  std::optional<double> min_tara;
  std::optional<double> min_modal_share;
  std::optional<double> max_logprob_drift;
  double max_failed_rate = core::GateConfig{}.max_failed_rate;
  double fragile_gap = core::k_default_fragile_gap;
  int fragile_window = core::k_default_fragile_window;
  std::optional<double> fragile_p;
  std::string compare_on = core::to_string(core::AnalysisConfig{}.compare_on);

  struct Given {
    bool fail_on = false;
    bool max_unique = false;
    bool max_unstable_rate = false;
    bool min_tara = false;
    bool min_modal_share = false;
    bool max_logprob_drift = false;
    bool max_failed_rate = false;
    bool fragile_gap = false;
    bool fragile_window = false;
    bool fragile_p = false;
    bool compare_on = false;
    bool any() const {
      return fail_on || max_unique || max_unstable_rate || min_tara || min_modal_share ||
             max_logprob_drift || max_failed_rate || fragile_gap || fragile_window || fragile_p ||
             compare_on;
    }
  } given;
};

// Which of the request's values were given explicitly (on the command line or in its config
// file); a value not given is its default here, and on --resume says nothing of the stored audit.
struct GivenValues {
  core::PlanFlagsGiven plan; // the plan-defining values --resume compares
  bool suite = false;
  // The budgets: a budget not given is no budget (a resumed audit keeps the stored one).
  bool max_requests = false;
  bool max_tokens_total = false;
  bool max_cost = false;
  bool stop_after = false;
  // --adaptive's settings, which need --adaptive.
  bool adaptive_epsilon = false;
  bool adaptive_initial = false;
  bool adaptive_assume = false;
  bool serial_spacing = false; // --serial-spacing (--profile adi)
};

// Where the passes say what they do (a line each, ending in '\n'): the CLI prints it on stderr
// with the run's secrets redacted; a test collects it. Empty: nothing is said.
using Notify = std::function<void(std::string_view)>;

struct AuditRequest {
  std::string suite;
  std::vector<std::string> endpoints; // --endpoint, repeatable
  std::vector<std::string> compare;   // --compare, after the endpoints
  std::vector<std::string> probes = probe_names(core::PlanSettings{}.probes);
  std::string api = core::PlanSettings{}.api;
  std::string model;
  int runs = core::PlanSettings{}.runs;
  std::vector<int> levels = core::PlanSettings{}.levels;
  std::string profile = core::to_string(core::PlanSettings{}.profile); // standard|deterministic|adi
  int max_concurrency = 128; // caps the levels of the deterministic profile
  int max_tokens = core::PlanSettings{}.max_tokens;
  int top_logprobs = core::PlanSettings{}.top_logprobs;
  bool stream = core::PlanSettings{}.stream;
  std::string logprobs_form = core::PlanSettings{}.logprobs_form; // auto|openai|together
  std::string temperature = core::to_string(core::PlanSettings{}.temperature); // 0|default
  // --no-preflight: no capability preflight before the plan (probes/capability_preflight.hpp).
  bool no_preflight = false;
  double timeout_s = core::RequestSettings{}.timeout_s;
  int retries = core::RequestSettings{}.retries;
  std::size_t max_response_bytes = 16u << 20;
  // The variables holding the keys (audit/keys.hpp): empty, the conventional rule of
  // probes/api_key_rule.hpp.
  std::string api_key_env;                      // for the endpoint(s)
  std::vector<std::string> compare_api_key_env; // one per compared endpoint, in order
  std::string embeddings_api_key_env;           // for the embeddings server
  std::vector<std::string> headers;
  bool insecure = false;
  std::string db = "llmrepro-audit.db";
  bool resume = false;
  bool overwrite = false;
  Judging judging;
  std::uint64_t seed = core::PlanSettings{}.seed;
  std::string shard = "1/1";
  double rate = core::RequestSettings{}.rate_limit;
  // --serial-spacing: the seconds between a prompt's serial requests under --profile adi.
  double serial_spacing_s = core::k_adi_serial_spacing_s;
  // Budgets and the cheap first pass (core/budget.hpp); each read only when given.
  std::string price; // input=X,output=Y per million tokens
  long max_requests = 0;
  long max_tokens_total = 0;
  double max_cost = 0.0;
  int stop_after = 0;
  bool dry_run = false; // plan and bound only: nothing is sent or written
  // Adaptive rounds (core/adaptive.hpp): runs spent where they can change a verdict.
  bool adaptive = core::AdaptiveSettings{}.enabled;
  double adaptive_epsilon = core::AdaptiveSettings{}.epsilon;
  int adaptive_initial = core::AdaptiveSettings{}.initial;
  std::string adaptive_assume = core::to_string(core::AdaptiveSettings{}.assume);
  std::string embeddings;
  std::string embeddings_model;
  double semantic_threshold = 0.9;
  // The embedded reference engine, used when no endpoint is given.
  int engine_max_num_seqs = core::EngineSettings{}.max_num_seqs;
  bool engine_batch_invariant = core::EngineSettings{}.batch_invariant;
  bool engine_prefix_cache = core::EngineSettings{}.prefix_cache;
  std::uint64_t engine_seed = core::EngineSettings{}.seed;
  // The restart probe (--restart-cmd, --restart-timeout): a shell command line that restarts the
  // endpoint, and how long one restart and the readiness wait after it may take. The command may
  // hold secrets: it is a run secret, never stored, printed or reported, and not plan-defining
  // (a resumed audit whose plan holds the restart probe needs it given again).
  std::string restart_cmd;
  double restart_timeout_s = 120.0;

  GivenValues given;

  // The report files the run will write, by the flag that names them: checked against the
  // database, the suite and each other before anything is sent (store::check_output_paths).
  std::vector<store::NamedPath> report_paths;
  bool quiet = false;    // only what is said even under --quiet is notified
  bool progress = false; // a progress line (carriage-return updated) while requests run
  Notify notify;
  core::ToolInfo tool; // the tool's identity, in every report
};

// Says `text` through the request's notify, if it has one.
inline void note(const AuditRequest& request, std::string_view text) {
  if (request.notify) request.notify(text);
}

} // namespace llmrepro::audit
