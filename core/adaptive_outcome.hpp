// The decisions of an adaptive audit (--adaptive), as stored with it and shown by every report;
// the rules that make them are in core/adaptive.hpp.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis_config.hpp"
#include "core/result.hpp"

namespace llmrepro::core {

// What a robust bound may assume beyond the audit's own evidence (--adaptive-assume): nothing
// (`none`: the noise model tightens a bound only where the audit's records support it), or
// greedy decoding with noise shared across prompts (`greedy_shared_noise`: the noise model is
// trusted unchecked, docs/design.md "Adaptive runs").
enum class AdaptiveAssumption { none, greedy_shared_noise };
const char* to_string(AdaptiveAssumption assumption);
Result<AdaptiveAssumption> parse_adaptive_assumption(const std::string& text);

// The defaults of --adaptive-initial and --adaptive-epsilon, written here only.
inline constexpr int k_default_adaptive_initial = 2;
inline constexpr double k_default_adaptive_epsilon = 0.01;

struct AdaptiveConfig {
  int initial_runs = k_default_adaptive_initial; // runs of every prompt at every level before the
                                                 // first look (>= 2)
  int max_runs = 10;                             // runs of a prompt at a level at most (--runs)
  double epsilon = k_default_adaptive_epsilon; // --adaptive-epsilon: the flip probability a robust
                                               // prompt is below
  double confidence = 0.95;                    // of every bound, over all looks together
  std::optional<int> max_unique; // --max-unique: unstable prompts sample on while at or below it
  AdaptiveAssumption assumption = AdaptiveAssumption::none; // --adaptive-assume
  // The other gates the stops waited for (core/adaptive_gates.hpp); empty where not set, and in
  // outcomes stored before they were recorded (whose stops waited for neither).
  std::optional<double> max_logprob_drift; // --max-logprob-drift
  std::optional<double> min_tara;          // --min-tara
  std::optional<double> fragile_p;         // --fragile-p, judged over --fragile-window tokens
  int fragile_window = k_default_fragile_window;
  friend bool operator==(const AdaptiveConfig&, const AdaptiveConfig&) = default;
};

// Why a prompt stopped getting runs.
enum class AdaptiveStop {
  undecided, // still getting runs (or the audit ended before it was decided)
  unstable,  // two completions differ (and more than --max-unique where that gate is set)
  robust,    // its runs agree and the flip probability's upper bound fell below epsilon
  max_runs,  // every level reached --runs without either
  budget,    // a budget ran out while it was undecided
};
const char* to_string(AdaptiveStop stop);
Result<AdaptiveStop> parse_adaptive_stop(const std::string& text);

// What the bound of a prompt rests on: the level's noise samples and the reference's gaps
// (`noise`), or, where those are unknown, the prompt's own agreeing runs (`runs`).
enum class BoundBasis { none, noise, runs };
const char* to_string(BoundBasis basis);
Result<BoundBasis> parse_bound_basis(const std::string& text);

struct AdaptivePrompt {
  int prompt_index = 0;
  std::string id;
  AdaptiveStop stop = AdaptiveStop::undecided;
  int stopped_at_look = 0;    // the look that decided it; 0 while undecided
  std::map<int, int> planned; // concurrency -> runs planned for it at that level
  // The upper bound on the probability that one more run at any level departs from its
  // reference, at the last look that judged it; empty where none was computed.
  std::optional<double> p_flip_bound;
  BoundBasis basis = BoundBasis::none;
  // Why a bound rests on the runs although the noise and the reference's gaps were known: the
  // audit's evidence contradicted the noise model for this prompt ("its own noise at c=8 is
  // louder than the pool's ..."); empty otherwise.
  std::string basis_reason;
  int runs() const;
};

// A level at which the audit's own records contradicted the noise model: from that look on, no
// bound rests on it.
struct NoiseModelContradiction {
  int look = 0;       // the first look that saw it
  std::string reason; // "3 runs chose a token below its runner-up: the endpoint samples"
  friend bool operator==(const NoiseModelContradiction&, const NoiseModelContradiction&) = default;
};

// The decisions of an adaptive audit so far: stored with it, so that `report` shows them and
// --resume replays them.
struct AdaptiveOutcome {
  AdaptiveConfig config;
  int looks = 0;         // looks taken
  bool finished = false; // no prompt is undecided, or the audit ended early and said why
  std::vector<AdaptivePrompt> prompts; // the planned prompts, suite order
  // Concurrency -> the first contradiction of the noise model seen there (never with
  // AdaptiveAssumption::greedy_shared_noise, which does not check).
  std::map<int, NoiseModelContradiction> contradicted;
  std::size_t planned_requests() const;
  // Prompts with this stop.
  int count(AdaptiveStop stop) const;
};

} // namespace llmrepro::core
