// The adaptive audit's rules: the bounds, the decisions at each look, and the next round's waves.
#include "core/adaptive.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/adaptive_gates.hpp"
#include "core/budget.hpp"
#include "core/cost.hpp"
#include "core/random.hpp"

namespace llmrepro::core {
namespace {

// Bernoulli KL divergence KL(q ‖ p), with 0 · ln 0 = 0.
double bernoulli_kl(double q, double p) {
  double kl = 0.0;
  if (q > 0.0) kl += q * std::log(q / p);
  if (q < 1.0) kl += (1.0 - q) * std::log((1.0 - q) / (1.0 - p));
  return kl;
}

// The reference's gaps over its whole completion: the smallest and how many positions, or empty
// where the reference has no tokens or any gap is unknown.
struct ReferenceGaps {
  double min_gap = 0.0;
  int positions = 0;
};
std::optional<ReferenceGaps> reference_gaps(const PromptAnalysis& prompt) {
  const auto reference =
      std::find_if(prompt.completions.begin(), prompt.completions.end(),
                   [](const DistinctCompletion& completion) { return completion.is_reference; });
  if (reference == prompt.completions.end() || reference->tokens.empty() || prompt.text_mode)
    return std::nullopt;
  ReferenceGaps gaps{INFINITY, static_cast<int>(reference->tokens.size())};
  for (const auto& token : reference->tokens) {
    const auto gap = token.gap();
    if (!gap) return std::nullopt;
    gaps.min_gap = std::min(gaps.min_gap, *gap);
  }
  return gaps;
}

bool any_level_can_run(const AdaptivePrompt& prompt, int max_runs) {
  return std::any_of(prompt.planned.begin(), prompt.planned.end(),
                     [&](const auto& level) { return level.second < max_runs; });
}

// The bound of an agreeing prompt at this look, and what it rests on.
std::pair<double, BoundBasis> flip_bound(const AdaptiveOutcome& outcome,
                                         const AuditAnalysis& analysis,
                                         const PromptAnalysis& prompt,
                                         const AdaptivePrompt& decision) {
  const int levels = static_cast<int>(decision.planned.size());
  const double alpha = look_alpha(outcome.config.confidence, outcome.looks, levels);
  const auto gaps = reference_gaps(prompt);
  bool noise_known = gaps.has_value();
  for (const auto& [concurrency, runs] : decision.planned) {
    const auto found = analysis.noise.find(concurrency);
    if (found == analysis.noise.end() || found->second.empty()) noise_known = false;
  }
  if (!noise_known)
    return {
        runs_flip_bound(prompt.runs - 1, look_alpha(outcome.config.confidence, outcome.looks, 1)),
        BoundBasis::runs};
  double bound = 0.0;
  for (const auto& [concurrency, runs] : decision.planned)
    bound = std::max(bound, noise_flip_bound(analysis.noise.at(concurrency), gaps->min_gap,
                                             gaps->positions, alpha));
  return {bound, BoundBasis::noise};
}

} // namespace

const char* to_string(AdaptiveStop stop) {
  switch (stop) {
  case AdaptiveStop::undecided: return "undecided";
  case AdaptiveStop::unstable: return "unstable";
  case AdaptiveStop::robust: return "robust";
  case AdaptiveStop::max_runs: return "max_runs";
  case AdaptiveStop::budget: return "budget";
  }
  return "undecided";
}

Result<AdaptiveStop> parse_adaptive_stop(const std::string& text) {
  for (AdaptiveStop stop : {AdaptiveStop::undecided, AdaptiveStop::unstable, AdaptiveStop::robust,
                            AdaptiveStop::max_runs, AdaptiveStop::budget})
    if (text == to_string(stop)) return stop;
  return Error{ErrorCode::input, "unknown adaptive stop '" + text + "'"};
}

const char* to_string(BoundBasis basis) {
  switch (basis) {
  case BoundBasis::none: return "none";
  case BoundBasis::noise: return "noise";
  case BoundBasis::runs: return "runs";
  }
  return "none";
}

Result<BoundBasis> parse_bound_basis(const std::string& text) {
  for (BoundBasis basis : {BoundBasis::none, BoundBasis::noise, BoundBasis::runs})
    if (text == to_string(basis)) return basis;
  return Error{ErrorCode::input, "unknown bound basis '" + text + "'"};
}

int AdaptivePrompt::runs() const {
  int total = 0;
  for (const auto& [concurrency, count] : planned) total += count;
  return total;
}

std::size_t AdaptiveOutcome::planned_requests() const {
  std::size_t total = 0;
  for (const auto& prompt : prompts) total += static_cast<std::size_t>(prompt.runs());
  return total;
}

int AdaptiveOutcome::count(AdaptiveStop stop) const {
  return static_cast<int>(std::count_if(prompts.begin(), prompts.end(),
                                        [&](const AdaptivePrompt& p) { return p.stop == stop; }));
}

AdaptiveConfig adaptive_config_of(const AuditConfig& config) {
  AdaptiveConfig adaptive;
  adaptive.initial_runs = config.adaptive_initial;
  adaptive.max_runs = config.runs;
  adaptive.epsilon = config.adaptive_epsilon;
  adaptive.max_unique = config.gates.max_unique;
  adaptive.max_logprob_drift = config.gates.max_logprob_drift;
  adaptive.min_tara = config.gates.min_tara;
  adaptive.fragile_p = config.fragile_p;
  adaptive.fragile_window = config.fragile_window;
  return adaptive;
}

std::string adaptive_unfinished_message(const std::optional<AdaptiveOutcome>& outcome) {
  if (!outcome || outcome->finished) return {};
  std::vector<std::string> undecided;
  for (const auto& prompt : outcome->prompts)
    if (prompt.stop == AdaptiveStop::undecided) undecided.push_back(prompt.id);
  const std::string message = "adaptive: the audit ended with " + std::to_string(undecided.size()) +
                              " of " + std::to_string(outcome->prompts.size()) +
                              " prompts undecided" + named_prompts(undecided);
  return message + " (--resume continues it)";
}

double look_alpha(double confidence, int look, int levels) {
  const double looks = std::max(look, 1);
  return (1.0 - confidence) / (std::max(levels, 1) * looks * (looks + 1.0));
}

double binomial_upper_bound(long k, long n, double alpha) {
  if (n <= 0 || k >= n || alpha <= 0.0) return 1.0;
  const double observed = static_cast<double>(k) / static_cast<double>(n);
  if (k == 0) return 1.0 - std::pow(alpha, 1.0 / static_cast<double>(n));
  const double budget = std::log(1.0 / alpha) / static_cast<double>(n);
  // n · KL(k/n ‖ p) grows with p above k/n: the largest p within the budget, by bisection.
  double low = observed;
  double high = 1.0;
  for (int step = 0; step < 100; ++step) {
    const double middle = 0.5 * (low + high);
    if (bernoulli_kl(observed, middle) <= budget)
      low = middle;
    else
      high = middle;
  }
  return high;
}

double noise_flip_bound(const NoiseDistribution& noise, double min_gap, int positions,
                        double alpha) {
  const auto& sorted = noise.sorted();
  const auto above = sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), min_gap);
  const double tail =
      binomial_upper_bound(static_cast<long>(above), static_cast<long>(sorted.size()), alpha);
  return std::min(1.0, 0.5 * positions * tail);
}

double runs_flip_bound(int agreeing, double alpha) {
  if (agreeing <= 0) return 1.0;
  return 1.0 - std::pow(alpha, 1.0 / agreeing);
}

Plan initial_adaptive_plan(const Suite& suite, const PlanConfig& plan, const AdaptiveConfig& config,
                           AdaptiveOutcome& outcome) {
  PlanConfig first = plan;
  first.runs = std::min(config.initial_runs, config.max_runs);
  Plan initial = make_plan(suite, first);
  outcome = AdaptiveOutcome{config, 0, false, {}};
  const int shard_count = std::max(plan.shard_count, 1);
  for (std::size_t p = 0; p < suite.prompts.size(); ++p) {
    if (static_cast<int>(p % static_cast<std::size_t>(shard_count)) != plan.shard_index) continue;
    AdaptivePrompt prompt;
    prompt.prompt_index = static_cast<int>(p);
    prompt.id = suite.prompts[p].id;
    for (int level : plan.levels) prompt.planned[level] = first.runs;
    outcome.prompts.push_back(std::move(prompt));
  }
  return initial;
}

void judge_look(AdaptiveOutcome& outcome, const AuditAnalysis& analysis) {
  ++outcome.looks;
  std::map<int, const PromptAnalysis*> by_index;
  for (const auto& prompt : analysis.prompts) by_index[prompt.prompt_index] = &prompt;
  // From the prompts stopped before this look only: their records are final.
  const bool drift_failed = drift_gate_already_failed(outcome, analysis);
  for (AdaptivePrompt& decision : outcome.prompts) {
    if (decision.stop != AdaptiveStop::undecided) continue;
    const auto found = by_index.find(decision.prompt_index);
    const bool can_run = any_level_can_run(decision, outcome.config.max_runs);
    const auto stop = [&](AdaptiveStop why) {
      decision.stop = why;
      decision.stopped_at_look = outcome.looks;
    };
    if (found != by_index.end()) {
      const PromptAnalysis& prompt = *found->second;
      const bool gates_allow = gates_allow_stop(outcome.config, prompt, drift_failed);
      if (prompt.status == PromptStatus::unstable) {
        if (gates_allow) {
          stop(AdaptiveStop::unstable);
          continue;
        }
      } else if (prompt.status == PromptStatus::stable) {
        const auto [bound, basis] = flip_bound(outcome, analysis, prompt, decision);
        decision.p_flip_bound = bound;
        decision.basis = basis;
        if (bound < outcome.config.epsilon && gates_allow) {
          stop(AdaptiveStop::robust);
          continue;
        }
      }
    }
    if (!can_run) stop(AdaptiveStop::max_runs);
  }
  outcome.finished = outcome.count(AdaptiveStop::undecided) == 0;
}

Plan next_adaptive_round(AdaptiveOutcome& outcome, const PlanConfig& plan) {
  Plan round;
  SplitMix64 random(plan.seed ^ 0x616461707469766FULL ^
                    (static_cast<std::uint64_t>(outcome.looks) << 32));
  for (int level : plan.levels) {
    Wave wave{0, level, ProbeKind::sweep, {}};
    // One run for each undecided prompt that can take one here, never more: a prompt that the
    // next look stops has then had no run it did not need. The endpoint sees a batch of `level`
    // only while that many prompts are undecided.
    for (AdaptivePrompt& prompt : outcome.prompts) {
      if (prompt.stop != AdaptiveStop::undecided) continue;
      int& planned = prompt.planned[level];
      if (planned >= outcome.config.max_runs) continue;
      wave.requests.push_back({0, prompt.prompt_index, level, ProbeKind::sweep, planned});
      ++planned;
    }
    if (wave.requests.empty()) continue;
    for (std::size_t i = wave.requests.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(random.below(i));
      std::swap(wave.requests[i - 1], wave.requests[j]);
    }
    round.waves.push_back(std::move(wave));
  }
  return round;
}

void close_undecided(AdaptiveOutcome& outcome, AdaptiveStop stop) {
  for (AdaptivePrompt& prompt : outcome.prompts) {
    if (prompt.stop != AdaptiveStop::undecided) continue;
    prompt.stop = stop;
    prompt.stopped_at_look = outcome.looks;
  }
  outcome.finished = true;
}

std::string adaptive_guarantee(const AdaptiveOutcome& outcome) {
  const int robust = outcome.count(AdaptiveStop::robust);
  const std::string confidence = shortest_decimal(outcome.config.confidence * 100.0) + "%";
  const std::string epsilon = shortest_decimal(outcome.config.epsilon);
  std::string text =
      robust == 0
          ? "no prompt was shown robust (a flip probability below " + epsilon + " at " +
                confidence + " confidence), so every prompt whose runs agree ran to --runs " +
                std::to_string(outcome.config.max_runs)
          : "each of the " + std::to_string(robust) + " prompt" + (robust == 1 ? "" : "s") +
                " stopped as robust has, with " + confidence +
                " confidence (valid at every look), a probability below " + epsilon +
                " that one more run at any level departs from its reference (a bound from the "
                "noise rests on the noise model: docs/design.md \"Adaptive runs\")";
  return text + "; unstable prompts were seen to differ; prompts stopped at --runs or by a "
                "budget carry no bound";
}

} // namespace llmrepro::core

namespace llmrepro::core {

std::size_t fixed_plan_requests(const AdaptiveOutcome& outcome) {
  std::size_t total = 0;
  for (const auto& prompt : outcome.prompts)
    total += prompt.planned.size() * static_cast<std::size_t>(outcome.config.max_runs);
  return total;
}

std::string adaptive_line(const AdaptiveOutcome& outcome) {
  const std::size_t planned = outcome.planned_requests();
  const std::size_t fixed = fixed_plan_requests(outcome);
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%",
                fixed == 0 ? 0.0
                           : 100.0 * static_cast<double>(planned) / static_cast<double>(fixed));
  std::string text = "adaptive: " + std::to_string(planned) + " of " + std::to_string(fixed) +
                     " requests (" + share + ") over " + std::to_string(outcome.looks) +
                     (outcome.looks == 1 ? " look" : " looks") +
                     "; stopped: " + std::to_string(outcome.count(AdaptiveStop::unstable)) +
                     " unstable, " + std::to_string(outcome.count(AdaptiveStop::robust)) +
                     " robust, " + std::to_string(outcome.count(AdaptiveStop::max_runs)) +
                     " at --runs " + std::to_string(outcome.config.max_runs);
  if (const int budget = outcome.count(AdaptiveStop::budget); budget > 0)
    text += ", " + std::to_string(budget) + " by a budget";
  if (const int undecided = outcome.count(AdaptiveStop::undecided); undecided > 0)
    text += "; " + std::to_string(undecided) + " undecided";
  return text;
}

} // namespace llmrepro::core
