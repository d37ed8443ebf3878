// Logprob drift, exactly as docs/design.md "Analysis: definitions" states it.
//
// Two runs that chose the same tokens can still disagree in the logprobs they report: a kernel
// whose reduction order depends on the batch changes the last bits of every logit, and the
// argmax survives it wherever the top-1/top-2 gap is wider than the noise. Comparing the runs
// only where their tokens agree keeps the comparison about numbers, not about different
// contexts: past the first differing token the two runs condition on different text.
#include "core/logprob_drift.hpp"

#include <algorithm>
#include <cmath>

namespace llmrepro::core {

void add_logprob_drift(LogprobDrift& drift, const Completion& reference, const Completion& other) {
  const auto limit = std::min(reference.tokens.size(), other.tokens.size());
  for (std::size_t i = 0; i < limit; ++i) {
    const TokenLogprob& a = reference.tokens[i];
    const TokenLogprob& b = other.tokens[i];
    if (a.token != b.token) break;
    bool moved = false;
    if (is_known_logprob(a.logprob) && is_known_logprob(b.logprob)) {
      const double difference = std::abs(a.logprob - b.logprob);
      drift.max_abs = std::max(drift.max_abs, difference);
      moved = difference > 0;
      ++drift.positions_compared;
    }
    const auto gap_a = a.gap();
    const auto gap_b = b.gap();
    if (gap_a && gap_b) {
      const double difference = std::abs(*gap_a - *gap_b);
      drift.max_abs_gap = std::max(drift.max_abs_gap, difference);
      moved = moved || difference > 0;
    }
    const int position = static_cast<int>(i);
    if (moved && (!drift.first_position || position < *drift.first_position))
      drift.first_position = position;
  }
}

} // namespace llmrepro::core
