#include "audit/config.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "audit/judging.hpp"
#include "audit/rounds.hpp"
#include "core/budget.hpp"
#include "core/determinism_check.hpp"
#include "core/plan.hpp"
#include "core/resume_check.hpp"
#include "probes/endpoint_url.hpp"

namespace llmrepro::audit {

namespace {

// --timeout and --rate: a timeout of 30 days at most and an interval between requests of at
// most 11.6 days (1 / k_min_rate) fit libcurl's long milliseconds and the steady clock's
// nanoseconds with room to spare; 1e9 requests a second is unlimited in all but name.
constexpr double k_max_timeout_s = 30.0 * 86400.0;
constexpr double k_min_rate = 1e-6; // one request in 11.6 days
constexpr double k_max_rate = 1e9;

// "i/n" with 1 <= i <= n, as the 0-based index and the count.
core::Result<std::pair<int, int>> parse_shard(const std::string& text) {
  const auto bad = [&] {
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--shard '{}' is not i/n with 1 <= i <= n, e.g. 2/4", text));
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) return bad();
  int index = 0;
  int count = 0;
  try {
    std::size_t used_index = 0;
    std::size_t used_count = 0;
    index = std::stoi(text.substr(0, slash), &used_index);
    count = std::stoi(text.substr(slash + 1), &used_count);
    if (used_index != slash || used_count != text.size() - slash - 1) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (count < 1 || index < 1 || index > count) return bad();
  return std::pair<int, int>{index - 1, count};
}

// --serial-spacing: a finite number of seconds, 0 (none) to a day.
core::Result<void> check_serial_spacing(double seconds) {
  if (std::isfinite(seconds) && seconds >= 0.0 && seconds <= 86400.0) return {};
  return core::make_error(
      core::ErrorCode::usage,
      fmt::format("--serial-spacing must be a number of seconds from 0 to 86400 (got {})",
                  seconds));
}

// --profile adi runs the leaderboard's protocol as it is: its levels, runs and probe are the
// protocol, so a flag that would change them is an error naming the conflict; --serial-spacing
// may shorten the wait between serial requests (every output then says so).
core::Result<void> apply_adi_profile(const AuditRequest& options, core::AuditConfig& config) {
  const core::PlanFlagsGiven& flags = options.given.plan;
  for (const auto& [given, flag] :
       {std::pair{flags.concurrency, "--concurrency"}, std::pair{flags.probe, "--probe"},
        std::pair{flags.runs, "--runs"}, std::pair{flags.max_concurrency, "--max-concurrency"},
        std::pair{options.adaptive, "--adaptive"},
        std::pair{!options.restart_cmd.empty(), "--restart-cmd"}})
    if (given)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("{} conflicts with --profile adi, which runs the leaderboard's protocol "
                      "as it is (per prompt a burst of {} concurrent requests and {} serial ones "
                      "{:g} s apart); drop {} or use --profile standard",
                      flag, core::k_adi_burst, core::k_adi_serial_runs,
                      core::k_adi_serial_spacing_s, flag));
  config.plan.levels = core::adi_levels();
  config.plan.runs = core::k_adi_burst;
  config.plan.serial_runs = core::k_adi_serial_runs;
  config.plan.probes = {core::ProbeKind::sweep};
  if (!options.given.serial_spacing)
    config.requests.serial_spacing_s = core::k_adi_serial_spacing_s;
  return {};
}

// --profile deterministic sets the levels, the probe kinds and the stability gates itself. An
// explicit --concurrency or --probe would quietly test less than the profile promises, so it is
// an error naming the conflict; explicit gates win (they can only be as strict or looser, and the
// profile's own determinism gate still judges the claim). --profile adi: apply_adi_profile.
core::Result<void> apply_profile(const AuditRequest& options, core::AuditConfig& config) {
  const core::PlanFlagsGiven& flags = options.given.plan;
  LLMREPRO_TRY_ASSIGN(config.plan.profile, core::parse_audit_profile(options.profile));
  if (options.max_concurrency < 1)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--max-concurrency must be at least 1 (got {})", options.max_concurrency));
  if (options.given.serial_spacing) {
    LLMREPRO_TRY(check_serial_spacing(options.serial_spacing_s));
    config.requests.serial_spacing_s = options.serial_spacing_s;
  }
  // --resume without --profile runs the stored profile: --max-concurrency then stands for the
  // levels it implies, which the resume check compares with the stored ones.
  if (options.resume && !flags.profile) {
    if (flags.max_concurrency)
      config.plan.levels = core::deterministic_levels(options.max_concurrency);
    return {};
  }
  if (options.given.serial_spacing && config.plan.profile != core::AuditProfile::adi)
    return core::make_error(core::ErrorCode::usage,
                            "--serial-spacing spaces the serial requests of --profile adi; "
                            "give --profile adi or drop it");
  if (config.plan.profile == core::AuditProfile::adi) return apply_adi_profile(options, config);
  if (config.plan.profile == core::AuditProfile::standard) {
    if (flags.max_concurrency)
      return core::make_error(core::ErrorCode::usage,
                              "--max-concurrency caps the levels of --profile deterministic; "
                              "with the standard profile list the levels with --concurrency");
    return {};
  }
  for (const auto& [option, flag] :
       {std::pair{flags.concurrency, "--concurrency"}, std::pair{flags.probe, "--probe"}})
    if (option)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("{} conflicts with --profile deterministic, which sets the levels "
                      "(1,2,8,9,16,32,44,64,128, capped by --max-concurrency) and the probes "
                      "(sweep,mixed,prefix) itself; drop {} or use --profile standard",
                      flag, flag));
  config.plan.levels = core::deterministic_levels(options.max_concurrency);
  config.plan.probes = core::deterministic_probes();
  if (!options.restart_cmd.empty()) config.plan.probes.push_back(core::ProbeKind::restart);
  if (!options.judging.given.max_unique) config.gates.max_unique = 1;
  if (!options.judging.given.max_logprob_drift) config.gates.max_logprob_drift = 0.0;
  return {};
}

// The budgets, --price and --stop-after, checked and written into `config` where given.
core::Result<void> apply_budget_options(const AuditRequest& options, core::AuditConfig& config) {
  const GivenValues& flags = options.given;
  if (!options.price.empty())
    LLMREPRO_TRY_ASSIGN(config.analysis.price, core::parse_price(options.price));
  if (flags.max_requests) {
    if (options.max_requests < 1)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("--max-requests must be at least 1 (got {})", options.max_requests));
    config.budget.max_requests = options.max_requests;
  }
  if (flags.max_tokens_total) {
    if (options.max_tokens_total < 1)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("--max-tokens-total must be at least 1 (got {})", options.max_tokens_total));
    config.budget.max_tokens_total = options.max_tokens_total;
  }
  if (flags.max_cost) {
    LLMREPRO_TRY(check_finite_above("--max-cost", options.max_cost, 0.0, "a finite amount"));
    // A resumed audit may price with its stored --price (checked once it is read).
    if (!config.analysis.price && !options.resume)
      return core::make_error(core::ErrorCode::usage,
                              "--max-cost needs --price input=X,output=Y (per million tokens) to "
                              "count what the tokens cost");
    config.budget.max_cost = options.max_cost;
  }
  if (flags.stop_after) {
    if (options.stop_after < 1)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("--stop-after must be at least 1 (got {})", options.stop_after));
    config.plan.stop_after = options.stop_after;
  }
  if (options.dry_run && options.resume)
    return core::make_error(core::ErrorCode::usage,
                            "--dry-run plans a new audit; it does not combine with --resume");
  return {};
}

// --restart-cmd adds the restart probe; the probe without the command has nothing to restart
// with. --restart-timeout must leave the command and the readiness wait a finite time.
// A timeout flag's seconds: finite, above 0, at most k_max_timeout_s.
core::Result<void> check_seconds(const char* flag, double seconds) {
  if (std::isfinite(seconds) && seconds > 0.0 && seconds <= k_max_timeout_s) return {};
  return core::make_error(core::ErrorCode::usage,
                          fmt::format("{} must be a number of seconds greater than 0 and at most "
                                      "{} (got {})",
                                      flag, k_max_timeout_s, seconds));
}

core::Result<void> apply_restart_options(const AuditRequest& options, core::AuditConfig& config) {
  const bool planned = std::find(config.plan.probes.begin(), config.plan.probes.end(),
                                 core::ProbeKind::restart) != config.plan.probes.end();
  if (planned && options.restart_cmd.empty() && !options.resume)
    return core::make_error(core::ErrorCode::usage,
                            "--probe restart needs --restart-cmd CMD (the shell command that "
                            "restarts the endpoint; --restart-timeout bounds it)");
  if (!options.restart_cmd.empty() && !planned)
    config.plan.probes.push_back(core::ProbeKind::restart);
  return check_seconds("--restart-timeout", options.restart_timeout_s);
}

} // namespace

// Every flag's value checked (NaN, infinities and out-of-range values are usage errors naming
// the flag) and gathered into the configuration a new audit runs with.
core::Result<core::AuditConfig> config_from(const AuditRequest& options) {
  core::AuditConfig config;
  config.plan.api = options.api;
  config.plan.model = options.model;
  config.plan.logprobs_form = options.logprobs_form;
  LLMREPRO_TRY_ASSIGN(config.plan.temperature, core::parse_temperature_mode(options.temperature));
  // The determinism check demands bit-identical greedy completions: under sampling it would
  // fail by design and say nothing about the server.
  if (config.plan.temperature == core::TemperatureMode::provider_default &&
      options.profile == core::to_string(core::AuditProfile::deterministic))
    return core::make_error(core::ErrorCode::usage,
                            "--profile deterministic checks greedy decoding: it cannot run with "
                            "--temperature default");
  // Only openai-chat requests carry the form; told another dialect, the flag would do nothing.
  if (options.logprobs_form != "auto" && options.api != "auto" && options.api != "openai-chat")
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--logprobs-form applies to --api openai-chat (or auto), "
                                        "not --api {}",
                                        options.api));
  // Gemini names the model in the request's path: there is no route to ask it for one. A
  // resumed audit runs with the model it stored.
  if (!options.resume && options.api == "gemini" && options.model.empty())
    return core::make_error(core::ErrorCode::usage,
                            "--api gemini needs --model (the model is part of the URL, "
                            ".../models/MODEL:generateContent)");
  if (options.runs < 1)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--runs must be at least 1 (got {})", options.runs));
  config.plan.runs = options.runs;
  if (options.levels.empty())
    return core::make_error(core::ErrorCode::usage, "--concurrency needs at least one level");
  for (std::size_t i = 0; i < options.levels.size(); ++i) {
    const int level = options.levels[i];
    if (level < 1 || level > 4096)
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--concurrency level {} is out of range 1..4096", level));
    if (std::find(options.levels.begin(), options.levels.begin() + static_cast<long>(i), level) !=
        options.levels.begin() + static_cast<long>(i))
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--concurrency lists level {} twice", level));
  }
  config.plan.levels = options.levels;
  if (options.max_tokens < 1)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--max-tokens must be at least 1 (got {})", options.max_tokens));
  config.plan.max_tokens = options.max_tokens;
  if (options.top_logprobs < 2 || options.top_logprobs > 20)
    return core::make_error(
        core::ErrorCode::usage,
        "--top-logprobs must be between 2 and 20 (the gap needs two candidates)");
  config.plan.top_logprobs = options.top_logprobs;
  config.plan.seed = options.seed;
  config.plan.probes.clear();
  for (const auto& name : options.probes) {
    auto probe = core::parse_probe_kind(name);
    if (!probe) return probe.error();
    if (std::find(config.plan.probes.begin(), config.plan.probes.end(), *probe) !=
        config.plan.probes.end())
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--probe names '{}' twice", name));
    config.plan.probes.push_back(*probe);
  }
  if (config.plan.probes.empty())
    return core::make_error(core::ErrorCode::usage, "--probe needs at least one probe kind");
  LLMREPRO_TRY(apply_restart_options(options, config));
  auto shard = parse_shard(options.shard);
  if (!shard) return shard.error();
  std::tie(config.plan.shard_index, config.plan.shard_count) = *shard;
  // The interval between starts (1 / rate) must fit the steady clock and libcurl's long
  // milliseconds, as must the timeout: bounds well inside both.
  if (!(std::isfinite(options.rate) &&
        (options.rate == 0.0 || (options.rate >= k_min_rate && options.rate <= k_max_rate))))
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--rate must be 0 (unlimited) or a number of requests per second within "
                    "{}..{} (got {})",
                    k_min_rate, k_max_rate, options.rate));
  config.requests.rate_limit = options.rate;
  if (auto valid = check_finite_in("--semantic-threshold", options.semantic_threshold, -1.0, 1.0);
      !valid)
    return valid.error();
  if (!options.embeddings.empty())
    if (auto valid = probes::validate_base_url(options.embeddings); !valid)
      return core::make_error(core::ErrorCode::usage, "--embeddings: " + valid.error().message);
  config.plan.stream = options.stream;
  if (auto valid = check_seconds("--timeout", options.timeout_s); !valid) return valid.error();
  config.requests.timeout_s = options.timeout_s;
  if (options.retries < 0)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--retries must be >= 0 (got {})", options.retries));
  config.requests.retries = options.retries;
  if (options.engine_max_num_seqs < 1)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--engine-max-num-seqs must be at least 1 (got {})",
                                        options.engine_max_num_seqs));
  LLMREPRO_TRY(apply_judging(options.judging, config, false));
  LLMREPRO_TRY(apply_profile(options, config));
  LLMREPRO_TRY(apply_budget_options(options, config));
  LLMREPRO_TRY(apply_adaptive_options(options, config));
  return config;
}

// The embedded engine's settings as the --engine-* flags give them.
core::EngineSettings engine_settings_of(const AuditRequest& options) {
  return core::EngineSettings{options.engine_max_num_seqs, options.engine_batch_invariant,
                              options.engine_prefix_cache, options.engine_seed};
}

// The names of the --header lines given; their values are secrets and are never stored.
std::vector<std::string> header_names_of(const AuditRequest& options) {
  std::vector<std::string> names;
  for (const std::string& line : options.headers)
    if (std::string name = core::header_name(line); !name.empty()) names.push_back(name);
  return names;
}

} // namespace llmrepro::audit
