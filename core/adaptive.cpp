// The adaptive audit's rules: the bounds, the decisions at each look, and the next round's waves.
#include "core/adaptive.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/adaptive_evidence.hpp"
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

// The bound of an agreeing prompt at this look, what it rests on, and why it rests on the runs
// where the noise was known. The runs bound needs no model; the noise bound replaces it only
// where the audit's evidence supports the noise model for this prompt at every level (or
// --adaptive-assume greedy-shared-noise says to trust it unchecked).
struct FlipBound {
  double bound = 1.0;
  BoundBasis basis = BoundBasis::runs;
  std::string reason;
};
FlipBound flip_bound(const AdaptiveOutcome& outcome, const AuditAnalysis& analysis,
                     const PromptAnalysis& prompt, const AdaptivePrompt& decision) {
  const int levels = static_cast<int>(decision.planned.size());
  const double alpha = look_alpha(outcome.config.confidence, outcome.looks, levels);
  const auto gaps = reference_gaps(prompt);
  bool noise_known = gaps.has_value();
  for (const auto& [concurrency, runs] : decision.planned) {
    const auto found = analysis.noise.find(concurrency);
    if (found == analysis.noise.end() || found->second.empty()) noise_known = false;
  }
  FlipBound runs_bound{
      runs_flip_bound(prompt.runs - 1, look_alpha(outcome.config.confidence, outcome.looks, 1)),
      BoundBasis::runs,
      {}};
  if (!noise_known) return runs_bound;
  if (outcome.config.assumption == AdaptiveAssumption::none)
    for (const auto& [concurrency, runs] : decision.planned) {
      if (outcome.contradicted.count(concurrency) != 0) {
        runs_bound.reason = "the noise model is contradicted at c=" + std::to_string(concurrency);
        return runs_bound;
      }
      runs_bound.reason = prompt_noise_louder(prompt, analysis, concurrency, alpha);
      if (!runs_bound.reason.empty()) return runs_bound;
    }
  double bound = 0.0;
  for (const auto& [concurrency, runs] : decision.planned)
    bound = std::max(bound, noise_flip_bound(analysis.noise.at(concurrency), gaps->min_gap,
                                             gaps->positions, alpha));
  return {bound, BoundBasis::noise, {}};
}

// Records, at each level not yet contradicted, the first failed check of the noise model at this
// look; a contradiction stays: the prompts stopped after it never rest on the model there.
void check_noise_model(AdaptiveOutcome& outcome, const AuditAnalysis& analysis) {
  if (outcome.config.assumption != AdaptiveAssumption::none) return;
  std::set<int> levels;
  for (const auto& prompt : outcome.prompts)
    for (const auto& [concurrency, runs] : prompt.planned) levels.insert(concurrency);
  const double alpha =
      look_alpha(outcome.config.confidence, outcome.looks, static_cast<int>(levels.size()));
  for (int concurrency : levels) {
    if (outcome.contradicted.count(concurrency) != 0) continue;
    std::string reason = noise_model_contradiction(level_evidence(analysis, concurrency), alpha);
    if (!reason.empty())
      outcome.contradicted[concurrency] = NoiseModelContradiction{outcome.looks, std::move(reason)};
  }
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

const char* to_string(AdaptiveAssumption assumption) {
  switch (assumption) {
  case AdaptiveAssumption::none: return "none";
  case AdaptiveAssumption::greedy_shared_noise: return "greedy-shared-noise";
  }
  return "none";
}

Result<AdaptiveAssumption> parse_adaptive_assumption(const std::string& text) {
  for (AdaptiveAssumption assumption :
       {AdaptiveAssumption::none, AdaptiveAssumption::greedy_shared_noise})
    if (text == to_string(assumption)) return assumption;
  return Error{ErrorCode::input,
               "unknown adaptive assumption '" + text + "' (none or greedy-shared-noise)"};
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
  adaptive.initial_runs = config.adaptive.initial;
  adaptive.max_runs = config.plan.runs;
  adaptive.epsilon = config.adaptive.epsilon;
  adaptive.max_unique = config.gates.max_unique;
  adaptive.assumption = config.adaptive.assume;
  adaptive.max_logprob_drift = config.gates.max_logprob_drift;
  adaptive.min_tara = config.gates.min_tara;
  adaptive.fragile_p = config.analysis.fragile_p;
  adaptive.fragile_window = config.analysis.fragile_window;
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
  outcome = AdaptiveOutcome{};
  outcome.config = config;
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
  check_noise_model(outcome, analysis);
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
        FlipBound bound = flip_bound(outcome, analysis, prompt, decision);
        decision.p_flip_bound = bound.bound;
        decision.basis = bound.basis;
        decision.basis_reason = std::move(bound.reason);
        if (bound.bound < outcome.config.epsilon && gates_allow) {
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

namespace {

// The contradiction that came after a prompt stopped robust on the noise model, at a level it ran
// at: its bound rested on a model the audit later contradicted. Null where none did.
const std::pair<const int, NoiseModelContradiction>*
later_contradiction(const AdaptiveOutcome& outcome, const AdaptivePrompt& prompt) {
  if (prompt.stop != AdaptiveStop::robust || prompt.basis != BoundBasis::noise) return nullptr;
  for (const auto& entry : outcome.contradicted)
    if (prompt.planned.count(entry.first) != 0 && entry.second.look > prompt.stopped_at_look)
      return &entry;
  return nullptr;
}

std::string prompts_text(int count) {
  return std::to_string(count) + (count == 1 ? " prompt" : " prompts");
}

} // namespace

std::string adaptive_guarantee(const AdaptiveOutcome& outcome) {
  const std::string confidence = shortest_decimal(outcome.config.confidence * 100.0) + "%";
  const std::string epsilon = shortest_decimal(outcome.config.epsilon);
  int on_runs = 0;
  int on_noise = 0;
  int stale = 0;
  const std::pair<const int, NoiseModelContradiction>* first_stale = nullptr;
  for (const auto& prompt : outcome.prompts) {
    if (prompt.stop != AdaptiveStop::robust) continue;
    if (const auto* later = later_contradiction(outcome, prompt)) {
      ++stale;
      if (!first_stale) first_stale = later;
    } else if (prompt.basis == BoundBasis::noise) {
      ++on_noise;
    } else {
      ++on_runs;
    }
  }
  const int kept = on_runs + on_noise;
  std::string text;
  if (kept + stale == 0) {
    text = "no prompt was shown robust (a flip probability below " + epsilon + " at " + confidence +
           " confidence), so every prompt whose runs agree ran to --runs " +
           std::to_string(outcome.config.max_runs);
  } else if (kept > 0) {
    std::vector<std::string> parts;
    if (on_runs > 0)
      parts.push_back(std::to_string(on_runs) + " from its own agreeing runs alone, assuming "
                                                "nothing of the endpoint");
    if (on_noise > 0)
      parts.push_back(
          std::to_string(on_noise) +
          (outcome.config.assumption == AdaptiveAssumption::greedy_shared_noise
               ? " from the level's noise, under the assumption --adaptive-assume "
                 "greedy-shared-noise (greedy decoding, noise shared across prompts), which the "
                 "audit did not check"
               : " from the level's noise, under the noise model of docs/design.md \"Adaptive "
                 "runs\" (greedy decoding, noise shared across prompts), which the audit's own "
                 "records supported at the look that stopped it"));
    text = (kept == 1 ? std::string("the 1 prompt") : "each of the " + prompts_text(kept)) +
           " stopped as robust" + (stale > 0 ? " with a standing bound" : "") + " has, with " +
           confidence + " confidence (valid at every look), a probability below " + epsilon +
           " that one more run at any level departs from its reference: ";
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : "; ") + parts[i];
  }
  if (stale > 0)
    text += std::string(kept > 0 ? "; " : "") + "for " + prompts_text(stale) +
            " stopped as robust on the noise model before the audit contradicted it at c=" +
            std::to_string(first_stale->first) + " (look " +
            std::to_string(first_stale->second.look) + ") no confidence is claimed";
  return text + "; unstable prompts were seen to differ; prompts stopped at --runs or by a "
                "budget carry no bound";
}

std::vector<std::string> adaptive_notes(const AdaptiveOutcome& outcome) {
  std::vector<std::string> notes;
  if (outcome.config.assumption == AdaptiveAssumption::greedy_shared_noise)
    notes.push_back("adaptive: assumed (--adaptive-assume greedy-shared-noise) that the endpoint "
                    "decodes greedily and its noise is shared across prompts; bounds from the "
                    "noise rest on that, unchecked");
  for (const auto& [concurrency, contradiction] : outcome.contradicted)
    notes.push_back(
        "adaptive: the noise model is contradicted at c=" + std::to_string(concurrency) +
        " from look " + std::to_string(contradiction.look) + " (" + contradiction.reason +
        "); bounds rest on each prompt's own runs");
  std::vector<std::string> louder;
  for (const auto& prompt : outcome.prompts)
    if (prompt.basis == BoundBasis::runs && !prompt.basis_reason.empty() &&
        prompt.basis_reason.rfind("the noise model is contradicted", 0) != 0)
      louder.push_back(prompt.id + ": " + prompt.basis_reason);
  if (!louder.empty()) {
    std::string text = "adaptive: the noise model does not hold for " +
                       prompts_text(static_cast<int>(louder.size())) + " (";
    const std::size_t named = std::min<std::size_t>(louder.size(), 3);
    for (std::size_t i = 0; i < named; ++i) text += (i == 0 ? "" : "; ") + louder[i];
    if (louder.size() > named) text += "; and " + std::to_string(louder.size() - named) + " more";
    notes.push_back(text + "); their bounds rest on their own runs");
  }
  return notes;
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
