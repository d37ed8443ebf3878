// The judging flags `audit` and `report` share (--fail-on, --max-unique, --max-unstable-rate,
// --min-tara, --max-logprob-drift, --max-failed-rate, --fragile-gap, --fragile-window,
// --fragile-p, --compare-on): one definition, and the one mapping from a verdict to the exit
// code. Their validation is the audit room's (audit/judging.hpp).
#pragma once

#include "audit/request.hpp"
#include "core/verdict.hpp"

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace llmrepro::cli {

// The judging flags as CLI11 binds them: their values, and the options that tell a flag given
// from its default.
struct JudgingOptions {
  audit::Judging values;

  // Set by add_judging_options, to tell a flag given on the command line from its default.
  struct Given {
    CLI::Option* fail_on = nullptr;
    CLI::Option* max_unique = nullptr;
    CLI::Option* max_unstable_rate = nullptr;
    CLI::Option* min_tara = nullptr;
    CLI::Option* min_modal_share = nullptr;
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

// The judging values with which of them were given, as the audit room takes them.
audit::Judging judging_of(const JudgingOptions& judging);

// The exit code of a judged audit: pass 0, fail 1, error 3; 130 when the run was interrupted.
int exit_code_of(const core::Verdict& verdict, bool interrupted = false);

// Under --quiet the terminal summary is not printed: one line on stderr still says why the exit
// code is not 0 ("llmrepro: FAIL: ..."). Nothing when the verdict passed.
void print_quiet_verdict(const core::Verdict& verdict);

} // namespace llmrepro::cli
