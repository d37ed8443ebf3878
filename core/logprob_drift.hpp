// Logprob drift: how far the numbers an endpoint returns move between runs that chose the same
// tokens, the second axis of stability beside the tokens themselves.
#pragma once

#include <optional>

#include "core/completion.hpp"

namespace llmrepro::core {

// The largest absolute differences, between runs and their reference, of the chosen token's
// logprob (`max_abs`) and of the top-1/top-2 gap (`max_abs_gap`), in nats, over the positions
// where the two runs' tokens agree. `positions_compared` counts the positions whose chosen-token
// logprobs were both known and so compared; unknown logprobs (k_unknown_logprob) are skipped.
struct LogprobDrift {
  double max_abs = 0;
  double max_abs_gap = 0;
  int positions_compared = 0;
  // The smallest position at which a compared logprob or gap differed; empty without drift.
  std::optional<int> first_position;
};

// Adds to `drift` the comparison of `other` with `reference`, position by position from the
// first token while their token strings agree. A gap is compared where both runs' gaps are known.
void add_logprob_drift(LogprobDrift& drift, const Completion& reference, const Completion& other);

// Whether any compared logprob or gap differed.
inline bool has_drift(const LogprobDrift& drift) {
  return drift.max_abs > 0 || drift.max_abs_gap > 0;
}

} // namespace llmrepro::core
