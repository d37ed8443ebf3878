#include "cli/dry_run.hpp"

#include <fmt/core.h>

#include <optional>

#include "core/budget.hpp"
#include "core/cost.hpp"

namespace llmrepro::cli {

bool print_dry_run(const core::AuditConfig& config, const core::Suite& suite,
                   const std::vector<std::string>& urls, const core::Plan& plan) {
  fmt::print("llmrepro: dry run: nothing is sent and no database is written\n");
  for (std::size_t e = 0; e < urls.size(); ++e)
    fmt::print("endpoint {}: {}{}\n", e,
               urls[e].empty() ? "the embedded reference engine" : urls[e],
               !urls[e].empty() && config.plan.api == "auto"
                   ? " (--api auto: the dialect is decided when the audit runs)"
                   : "");
  fmt::print("{:>8}  {:<6}  {:>5}  {:>8}  {:>6}  {:>11}\n", "endpoint", "probe", "level",
             "requests", "primes", "token bound");
  core::WaveBound total;
  bool fillers = false;
  long restarts = 0;
  for (const core::Wave& wave : plan.waves) {
    const core::WaveBound bound =
        core::wave_bound(wave, suite, config.plan.max_tokens, config.plan.stop_after);
    fmt::print("{:>8}  {:<6}  {:>5}  {:>8}  {:>6}  {:>11}\n", wave.endpoint_index,
               core::to_string(wave.probe), wave.concurrency, bound.requests, bound.primes,
               bound.tokens.total());
    total.requests += bound.requests;
    total.primes += bound.primes;
    total.tokens.prompt += bound.tokens.prompt;
    total.tokens.completion += bound.tokens.completion;
    fillers = fillers || core::probe_uses_fillers(wave.probe);
    if (wave.probe == core::ProbeKind::restart) restarts += config.plan.runs;
  }
  // The order the adi profile's waves keep, which the table's counts do not show.
  for (const core::Wave& wave : plan.waves) {
    if (wave.rounds)
      fmt::print("endpoint {}: level {} in {} rounds, each prompt's requests at least {:g} s "
                 "apart\n",
                 wave.endpoint_index, wave.concurrency,
                 core::planned_repeats(core::plan_config_of(config, 1), wave.probe, 1),
                 config.requests.serial_spacing_s);
    if (wave.burst)
      fmt::print("endpoint {}: level {} in bursts: each prompt's {} requests at once, one prompt "
                 "at a time\n",
                 wave.endpoint_index, wave.concurrency, config.plan.runs);
  }
  fmt::print("total: {} requests ({} audited, {} primes), at most {} tokens ({} prompt + {} "
             "completion)\n",
             total.requests + total.primes, total.requests, total.primes, total.tokens.total(),
             total.tokens.prompt, total.tokens.completion);
  std::optional<double> cost;
  if (config.analysis.price) {
    cost = core::cost_of(*config.analysis.price, static_cast<double>(total.tokens.prompt),
                         static_cast<double>(total.tokens.completion));
    fmt::print("cost bound: {:.6f} at --price {}\n", *cost,
               core::to_string(*config.analysis.price));
  }
  if (fillers)
    fmt::print("the mixed and mixed-sampling probes also send filler requests, as many as their "
               "waves last; they are not in these totals, and a budget counts each at its "
               "bound\n");
  if (restarts > 0)
    fmt::print("the restart probe runs the restart command {} times (once per round, before each "
               "round's first requests; at most --restart-timeout each); restarts are not "
               "requests\n",
               restarts);
  if (config.adaptive.enabled) {
    // The first look's requests are certain; the rest go to undecided prompts only.
    const long initial = total.requests / config.plan.runs * config.adaptive.initial;
    fmt::print("--adaptive: {} requests ({} runs of every prompt at each level) before the first "
               "look; the rest only for undecided prompts, at most the totals above\n",
               initial, config.adaptive.initial);
  }
  fmt::print("prompt bound: UTF-8 bytes + 64 per message + 64 (at most one token per byte)\n");
  // A budget below the plan's own bound: the run it plans would be stopped by it (or, adaptive,
  // could be), so the dry run says so and fails rather than approve the plan.
  bool within = true;
  const long requests = total.requests + total.primes;
  if (config.budget.max_requests && requests > *config.budget.max_requests) {
    fmt::print("over budget: the plan's {} requests are more than --max-requests {}\n", requests,
               *config.budget.max_requests);
    within = false;
  }
  if (config.budget.max_tokens_total && total.tokens.total() > *config.budget.max_tokens_total) {
    fmt::print("over budget: the token bound {} is above --max-tokens-total {}\n",
               total.tokens.total(), *config.budget.max_tokens_total);
    within = false;
  }
  if (config.budget.max_cost && cost && *cost > *config.budget.max_cost) {
    fmt::print("over budget: the cost bound {:.6f} is above --max-cost {:g}\n", *cost,
               *config.budget.max_cost);
    within = false;
  }
  return within;
}

} // namespace llmrepro::cli
