#include "audit/judging.hpp"

#include <fmt/core.h>

#include <cmath>

#include "core/reasoning.hpp"
#include "core/verdict.hpp"

namespace llmrepro::audit {

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

core::Result<void> apply_judging(const Judging& judging, core::AuditConfig& config,
                                 bool given_only) {
  const Judging::Given& o = judging.given;
  const auto take = [given_only](bool given) { return !given_only || given; };
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
  if (judging.min_modal_share)
    LLMREPRO_TRY(check_finite_in("--min-modal-share", *judging.min_modal_share, 0.0, 1.0));
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
  if (take(o.min_modal_share)) config.gates.min_modal_share = judging.min_modal_share;
  if (take(o.max_logprob_drift)) config.gates.max_logprob_drift = judging.max_logprob_drift;
  if (take(o.max_failed_rate)) config.gates.max_failed_rate = judging.max_failed_rate;
  if (take(o.fragile_gap)) config.analysis.fragile_gap = judging.fragile_gap;
  if (take(o.fragile_window)) config.analysis.fragile_window = judging.fragile_window;
  if (take(o.fragile_p)) config.analysis.fragile_p = judging.fragile_p;
  if (take(o.compare_on)) config.analysis.compare_on = compare_on;
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
  if (config.plan.runs == 1 && config.plan.levels.size() == 1 && config.gates.stability_gated())
    return core::make_error(core::ErrorCode::usage,
                            "one completion per prompt cannot show instability: --runs 1 at one "
                            "concurrency level; raise --runs or add a level");
  return {};
}

} // namespace llmrepro::audit
