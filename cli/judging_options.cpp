#include "cli/judging_options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cmath>
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/help_export.hpp"
#include "cli/option_groups.hpp"
#include "core/reasoning.hpp"
#include "core/result.hpp"

namespace llmrepro::cli {

void add_judging_options(CLI::App& command, JudgingOptions& judging) {
  const OptionGroupScope group{command, k_group_judging};
  auto& given = judging.options;
  given.fail_on = command
                      .add_option("--fail-on", judging.fail_on,
                                  "none, or a comma list of unstable, fragile, disagree: fail when "
                                  "any prompt is unstable, any prompt is fragile (or its fragility "
                                  "unknown), or the endpoints' answers differ")
                      ->check(value_choices({"none", "unstable", "fragile", "disagree"}))
                      ->capture_default_str();
  given.max_unique = command.add_option("--max-unique", judging.max_unique,
                                        "Fail when a prompt has more distinct completions (>= 1)");
  given.max_unstable_rate =
      command.add_option("--max-unstable-rate", judging.max_unstable_rate,
                         "Fail when the unstable share of the judged prompts exceeds it (0..1)");
  given.min_tara =
      command.add_option("--min-tara", judging.min_tara, "Fail when TARa@N is below it (0..1)");
  given.max_logprob_drift =
      command.add_option("--max-logprob-drift", judging.max_logprob_drift,
                         "Fail when a logprob moves by more between runs whose tokens agree (nats, "
                         ">= 0; 0 demands bit-identical logprobs)");
  given.max_failed_rate =
      command
          .add_option("--max-failed-rate", judging.max_failed_rate,
                      "Fail when the share of requests that failed after their retries exceeds "
                      "it (0..1)")
          ->capture_default_str();
  given.fragile_gap = command
                          .add_option("--fragile-gap", judging.fragile_gap,
                                      "τ: fragile when a top-1/top-2 gap is below it (nats, > 0)")
                          ->capture_default_str();
  given.fragile_window = command
                             .add_option("--fragile-window", judging.fragile_window,
                                         "W: tokens of the reference searched for the gap (>= 1)")
                             ->capture_default_str();
  given.fragile_p = command.add_option(
      "--fragile-p", judging.fragile_p,
      "Fragile when the flip probability within W is at least this (0 < P <= 1), instead of a "
      "gap below τ");
  given.compare_on =
      command
          .add_option("--compare-on", judging.compare_on,
                      "What of each completion is compared: a reasoning model's answer, "
                      "reasoning or both, or the sequence of tool calls (tool_calls); checkers "
                      "always read the answer")
          ->check(value_choices({core::to_string(core::CompareOn::answer),
                                 core::to_string(core::CompareOn::reasoning),
                                 core::to_string(core::CompareOn::both),
                                 core::to_string(core::CompareOn::tool_calls)}))
          ->capture_default_str();
}

bool given(const CLI::Option* option) { return option != nullptr && option->count() > 0; }

bool any_judging_option_given(const JudgingOptions& judging) {
  const auto& o = judging.options;
  return given(o.fail_on) || given(o.max_unique) || given(o.max_unstable_rate) ||
         given(o.min_tara) || given(o.max_logprob_drift) || given(o.max_failed_rate) ||
         given(o.fragile_gap) || given(o.fragile_window) || given(o.fragile_p) ||
         given(o.compare_on);
}

core::Result<void> check_finite_in(const char* flag, double value, double low, double high) {
  if (std::isfinite(value) && value >= low && value <= high) return {};
  return core::make_error(
      core::ErrorCode::usage,
      fmt::format("{} must be a finite number within {}..{} (got {})", flag, low, high, value));
}

core::Result<void> check_finite_above(const char* flag, double value, double low,
                                      const char* what) {
  if (std::isfinite(value) && value > low) return {};
  return core::make_error(core::ErrorCode::usage,
                          fmt::format("{} must be {} greater than {} (got {})", flag,
                                      what == nullptr ? "a number" : what, low, value));
}

core::Result<void> check_finite_at_least(const char* flag, double value, double low,
                                         const char* what) {
  if (std::isfinite(value) && value >= low) return {};
  return core::make_error(core::ErrorCode::usage,
                          fmt::format("{} must be {} at least {} (got {})", flag,
                                      what == nullptr ? "a number" : what, low, value));
}

core::Result<void> apply_judging_options(const JudgingOptions& judging, core::AuditConfig& config,
                                         bool given_only) {
  const auto& o = judging.options;
  const auto take = [given_only](const CLI::Option* option) {
    return !given_only || given(option);
  };
  // Every value is validated, given or not, so that a bad one is reported whatever the mode.
  core::FailOnSet fail_on;
  LLMREPRO_TRY_ASSIGN(fail_on, core::parse_fail_on(judging.fail_on));
  if (judging.max_unique && *judging.max_unique < 1)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--max-unique must be at least 1 (got {})", *judging.max_unique));
  if (judging.max_unstable_rate)
    if (auto valid = check_finite_in("--max-unstable-rate", *judging.max_unstable_rate, 0.0, 1.0);
        !valid)
      return valid;
  if (judging.min_tara) LLMREPRO_TRY(check_finite_in("--min-tara", *judging.min_tara, 0.0, 1.0));
  if (judging.max_logprob_drift)
    LLMREPRO_TRY(check_finite_at_least("--max-logprob-drift", *judging.max_logprob_drift, 0.0,
                                       "a finite number of nats"));
  LLMREPRO_TRY(check_finite_in("--max-failed-rate", judging.max_failed_rate, 0.0, 1.0));
  if (auto valid =
          check_finite_above("--fragile-gap", judging.fragile_gap, 0.0, "a finite number of nats");
      !valid)
    return valid;
  if (judging.fragile_window < 1)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--fragile-window must be at least 1 (got {})", judging.fragile_window));
  if (judging.fragile_p &&
      !(std::isfinite(*judging.fragile_p) && *judging.fragile_p > 0.0 && *judging.fragile_p <= 1.0))
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--fragile-p must be a probability above 0 and at most 1 (got {})",
                    *judging.fragile_p));

  core::CompareOn compare_on = core::CompareOn::both;
  LLMREPRO_TRY_ASSIGN(compare_on, core::parse_compare_on(judging.compare_on));

  if (take(o.fail_on)) config.gates.fail_on = fail_on;
  if (take(o.max_unique)) config.gates.max_unique = judging.max_unique;
  if (take(o.max_unstable_rate)) config.gates.max_unstable_rate = judging.max_unstable_rate;
  if (take(o.min_tara)) config.gates.min_tara = judging.min_tara;
  if (take(o.max_logprob_drift)) config.gates.max_logprob_drift = judging.max_logprob_drift;
  if (take(o.max_failed_rate)) config.gates.max_failed_rate = judging.max_failed_rate;
  if (take(o.fragile_gap)) config.fragile_gap = judging.fragile_gap;
  if (take(o.fragile_window)) config.fragile_window = judging.fragile_window;
  if (take(o.fragile_p)) config.fragile_p = judging.fragile_p;
  if (take(o.compare_on)) config.compare_on = compare_on;
  return {};
}

core::Result<void> check_gates_fit(const core::AuditConfig& config, std::size_t endpoints,
                                   const std::string& hint) {
  if (config.gates.fail_on.disagree && endpoints < 2)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--fail-on disagree compares the endpoints' answers and needs at least two "
                    "endpoints, but the audit has {}{}",
                    endpoints, hint.empty() ? "" : ": " + hint));
  if (config.runs == 1 && config.levels.size() == 1 && config.gates.stability_gated())
    return core::make_error(core::ErrorCode::usage,
                            "one completion per prompt cannot show instability: --runs 1 at one "
                            "concurrency level; raise --runs or add a level");
  return {};
}

int exit_code_of(const core::Verdict& verdict, bool interrupted) {
  if (interrupted) return k_exit_interrupted;
  switch (verdict.status) {
  case core::VerdictStatus::pass: return k_exit_pass;
  case core::VerdictStatus::fail: return k_exit_gate_failed;
  case core::VerdictStatus::error: return k_exit_endpoint;
  }
  return k_exit_internal;
}

void print_quiet_verdict(const core::Verdict& verdict) {
  if (verdict.passed()) return;
  std::fprintf(stderr, "llmrepro: %s\n", verdict.headline.c_str());
}

} // namespace llmrepro::cli
