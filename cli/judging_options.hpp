// The judging flags `audit` and `report` share (--fail-on, --max-unique, --max-unstable-rate,
// --min-tara, --max-logprob-drift, --max-failed-rate, --fragile-gap, --fragile-window,
// --fragile-p, --compare-on): one definition, one validation, and the one mapping from a verdict
// to the exit code.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/audit.hpp"
#include "core/result.hpp"
#include "core/verdict.hpp"

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace llmrepro::cli {

struct JudgingOptions {
  std::string fail_on = "none";
  std::optional<int> max_unique;
  std::optional<double> max_unstable_rate;
  std::optional<double> min_tara;
  std::optional<double> max_logprob_drift;
  double max_failed_rate = core::GateConfig{}.max_failed_rate;
  double fragile_gap = core::AuditConfig{}.fragile_gap;
  int fragile_window = core::AuditConfig{}.fragile_window;
  std::optional<double> fragile_p;
  std::string compare_on = core::to_string(core::CompareOn::both);

  // Set by add_judging_options, to tell a flag given on the command line from its default.
  struct Given {
    CLI::Option* fail_on = nullptr;
    CLI::Option* max_unique = nullptr;
    CLI::Option* max_unstable_rate = nullptr;
    CLI::Option* min_tara = nullptr;
    CLI::Option* max_logprob_drift = nullptr;
    CLI::Option* max_failed_rate = nullptr;
    CLI::Option* fragile_gap = nullptr;
    CLI::Option* fragile_window = nullptr;
    CLI::Option* fragile_p = nullptr;
    CLI::Option* compare_on = nullptr;
  } options;
};

// Adds the judging flags to a subcommand, with their help texts and defaults.
void add_judging_options(CLI::App& command, JudgingOptions& judging);

// Whether the flag behind `option` was given on the command line.
bool given(const CLI::Option* option);

// Whether any judging flag was given on the command line.
bool any_judging_option_given(const JudgingOptions& judging);

// Validates every judging value (NaN, infinities and out-of-range values are usage errors naming
// the flag) and writes them into `config`: all of them, or with `given_only` only those given on
// the command line (--resume and `report` keep the stored value of the others).
core::Result<void> apply_judging_options(const JudgingOptions& judging, core::AuditConfig& config,
                                         bool given_only);

// Whether the gates of `config` can be judged by the audit it plans: --fail-on disagree needs
// two endpoints, a stability gate more than one completion per prompt. `endpoints` is how many
// endpoints the audit runs against; `hint` ends the disagree message (how to get a second).
core::Result<void> check_gates_fit(const core::AuditConfig& config, std::size_t endpoints,
                                   const std::string& hint);

// A finite number within [low, high], else a usage error naming `flag` and what it takes.
core::Result<void> check_finite_in(const char* flag, double value, double low, double high);
// A finite number greater than `low` (`what` describes the unit: "seconds"), else a usage error.
core::Result<void> check_finite_above(const char* flag, double value, double low,
                                      const char* what = "a number");
// A finite number of at least `low`, else a usage error naming `flag` and `what` it takes.
core::Result<void> check_finite_at_least(const char* flag, double value, double low,
                                         const char* what = "a number");

// The exit code of a judged audit: pass 0, fail 1, error 3; 130 when the run was interrupted.
int exit_code_of(const core::Verdict& verdict, bool interrupted = false);

// Under --quiet the terminal summary is not printed: one line on stderr still says why the exit
// code is not 0 ("llmrepro: FAIL: ..."). Nothing when the verdict passed.
void print_quiet_verdict(const core::Verdict& verdict);

} // namespace llmrepro::cli
