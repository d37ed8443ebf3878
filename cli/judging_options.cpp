#include "cli/judging_options.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "cli/help_export.hpp"
#include "cli/option_groups.hpp"
#include "core/reasoning.hpp"

namespace llmrepro::cli {

void add_judging_options(CLI::App& command, JudgingOptions& options) {
  const OptionGroupScope group{command, k_group_judging};
  auto& given = options.options;
  audit::Judging& judging = options.values;
  given.fail_on = command
                      .add_option("--fail-on", judging.fail_on,
                                  "none, or a comma list of unstable, fragile, disagree, shift: "
                                  "fail when any prompt is unstable, any prompt is fragile (or its "
                                  "fragility unknown), the endpoints' answers differ, or a "
                                  "prompt's answer distribution shifts between levels or from "
                                  "endpoint 0's beyond chance (family-wise 0.05)")
                      ->check(value_choices({"none", "unstable", "fragile", "disagree", "shift"}))
                      ->capture_default_str();
  given.max_unique = command.add_option("--max-unique", judging.max_unique,
                                        "Fail when a prompt has more distinct completions (>= 1)");
  given.max_unstable_rate =
      command.add_option("--max-unstable-rate", judging.max_unstable_rate,
                         "Fail when the unstable share of the judged prompts exceeds it (0..1)");
  given.min_tara =
      command.add_option("--min-tara", judging.min_tara, "Fail when TARa@N is below it (0..1)");
  given.min_modal_share = command.add_option(
      "--min-modal-share", judging.min_modal_share,
      "Fail when a prompt's most frequent answer holds less than this share of its runs, "
      "failures counted against it (0..1)");
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

audit::Judging judging_of(const JudgingOptions& judging) {
  audit::Judging values = judging.values;
  const auto& o = judging.options;
  values.given = {.fail_on = given(o.fail_on),
                  .max_unique = given(o.max_unique),
                  .max_unstable_rate = given(o.max_unstable_rate),
                  .min_tara = given(o.min_tara),
                  .min_modal_share = given(o.min_modal_share),
                  .max_logprob_drift = given(o.max_logprob_drift),
                  .max_failed_rate = given(o.max_failed_rate),
                  .fragile_gap = given(o.fragile_gap),
                  .fragile_window = given(o.fragile_window),
                  .fragile_p = given(o.fragile_p),
                  .compare_on = given(o.compare_on)};
  return values;
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
