// Logprob drift: how far the numbers an endpoint returns move between runs that chose the same
// tokens, the second axis of stability beside the tokens themselves.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/completion.hpp"
#include "core/run_numbers.hpp"

namespace llmrepro::core {

// The largest absolute differences between two runs that agree on every token up to and
// including a position, in nats: of the chosen token's logprob or the runner-up's (`max_abs`: the
// best candidate other than the chosen token, compared where both runs name the same one), and
// of the top-1/top-2 gap (`max_abs_gap`). A runner-up that moves alone moves the gap, so it is
// drift of the numbers as much as the chosen token's. `positions_compared` counts, per position,
// the runs whose chosen-token logprob was known, less one per group of agreeing runs (for two
// runs: the positions compared); unknown logprobs (k_unknown_logprob) are skipped.
struct LogprobDrift {
  double max_abs = 0;
  double max_abs_gap = 0;
  int positions_compared = 0;
  // The smallest position at which a compared logprob or gap differed; empty without drift.
  std::optional<int> first_position;
};

// The drift over every pair of `runs` (runs without a completion are skipped): at each position,
// among the runs that agree on every token so far, the spread (largest − smallest) of each
// number, which is the largest |Δ| over their pairs, in time linear in the runs per position.
// Measured against one reference run instead, two runs moved ±d from it read d, not 2d.
LogprobDrift logprob_drift_of(const std::vector<const Completion*>& runs);

// logprob_drift_of, fed one run at a time: the runs that agree on every token so far share a
// node of a prefix tree, which holds the ranges of that position's numbers, so that a run can be
// dropped once it is added and the memory follows the distinct prefixes, not the runs. The
// result is the same, to the bit, whatever order the runs come in.
class LogprobDriftTree {
public:
  void add(const Completion& run);
  // The same run, its numbers read already (read_run_numbers).
  void add(std::span<const PositionNumbers> run);
  LogprobDrift drift() const;

private:
  // The smallest and largest of the values seen; the spread is their difference.
  struct Range {
    int count = 0;
    double low = 0;
    double high = 0;
    void add(double value);
    double spread() const { return count < 2 ? 0.0 : high - low; }
  };
  struct RunnerUp {
    TokenText token;
    Range range;
  };
  // The runs that chose `token` here after agreeing on every earlier token.
  struct Node {
    TokenText token;
    int position = 0;
    int runs = 0;
    Range chosen;
    Range gap;
    std::vector<RunnerUp> runner_ups; // by the runner-up's token, in the order first seen
    std::size_t first_child = 0;      // 0: none (the root is never a child)
    std::size_t next_sibling = 0;
  };
  // The child of `parent` that chose `token`, added where there is none.
  std::size_t child(std::size_t parent, const TokenText& token, int position);
  [[gnu::noinline]] std::size_t other_child(std::size_t parent, const TokenText& token,
                                            int position);

  std::vector<Node> m_nodes{Node{}};      // m_nodes[0]: the root, before the first token
  std::vector<PositionNumbers> m_numbers; // add(Completion)'s, the buffer reused
};

// Joins `other` into `drift`: the larger maxima, the positions summed, the earlier first
// position.
void join_logprob_drift(LogprobDrift& drift, const LogprobDrift& other);

// Adds to `drift` the comparison of `other` with `reference` (logprob_drift_of the two, joined
// by join_logprob_drift).
void add_logprob_drift(LogprobDrift& drift, const Completion& reference, const Completion& other);

// A run walked against a reference once, while their tokens agree: the pair's drift (what
// add_logprob_drift joins), its noise samples (add_gap_noise's, added to `deviations` where it is
// given), and the leading tokens the two share. Each run of an audit is compared with its
// prompt's reference this way, so the walk is made once for the three.
struct RunComparison {
  LogprobDrift drift;
  int left_out = 0;       // add_gap_noise's count (0 without `deviations`)
  std::size_t shared = 0; // leading tokens the two runs share
};
RunComparison compare_runs(std::span<const PositionNumbers> reference,
                           std::span<const PositionNumbers> other, std::vector<double>* deviations);

// Whether any compared logprob or gap differed.
inline bool has_drift(const LogprobDrift& drift) {
  return drift.max_abs > 0 || drift.max_abs_gap > 0;
}

} // namespace llmrepro::core
