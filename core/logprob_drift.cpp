// Logprob drift, exactly as docs/design.md "Analysis: definitions" states it.
//
// Two runs that chose the same tokens can still disagree in the logprobs they report: a kernel
// whose reduction order depends on the batch changes the last bits of every logit, and the
// argmax survives it wherever the top-1/top-2 gap is wider than the noise. Comparing the runs
// only where their tokens agree keeps the comparison about numbers, not about different
// contexts: past the first differing token the two runs condition on different text.
#include "core/logprob_drift.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <string_view>

#include "core/flip_probability.hpp"
#include "core/logprob_floor.hpp"

namespace llmrepro::core {
namespace {

// The smallest and largest of the values seen; the spread is their difference.
struct Range {
  int count = 0;
  double low = 0;
  double high = 0;
  void add(double value) {
    low = count == 0 ? value : std::min(low, value);
    high = count == 0 ? value : std::max(high, value);
    ++count;
  }
  double spread() const { return count < 2 ? 0.0 : high - low; }
};

// A value drift may compare: a number above the floor. A logprob at the floor (-Infinity as the
// endpoint sent it) says "impossible", not how far it moved; a runner-up that falls to it from
// -1 would otherwise read as 9998 nats of drift. Kept out as the noise samples keep it out
// (measured_gap).
bool comparable(double logprob) { return is_known_logprob(logprob) && logprob > k_logprob_floor; }

// The best candidate other than the chosen token: the one a flip would choose.
const TokenCandidate* runner_up(const TokenLogprob& token) {
  for (const auto& candidate : token.top)
    if (candidate.token != token.token) return &candidate;
  return nullptr;
}

} // namespace

LogprobDrift logprob_drift_of(const std::vector<const Completion*>& runs) {
  LogprobDrift drift;
  // The runs that agree on every token so far, in groups; a group of one has nothing to compare.
  std::vector<std::vector<const Completion*>> groups(1);
  for (const Completion* run : runs)
    if (run != nullptr) groups.front().push_back(run);
  for (std::size_t position = 0; !groups.empty(); ++position) {
    std::vector<std::vector<const Completion*>> next;
    for (const auto& group : groups) {
      // Split by this position's token; runs that ended leave.
      std::map<std::string_view, std::vector<const Completion*>> by_token;
      for (const Completion* run : group)
        if (position < run->tokens.size()) by_token[run->tokens[position].token].push_back(run);
      for (auto& [token, agreeing] : by_token) {
        if (agreeing.size() < 2) continue;
        Range chosen;
        Range gap;
        std::map<std::string_view, Range> runner_ups; // by the runner-up's token
        for (const Completion* run : agreeing) {
          const TokenLogprob& at = run->tokens[position];
          if (comparable(at.logprob)) chosen.add(at.logprob);
          if (const auto g = measured_gap(at)) gap.add(*g);
          const TokenCandidate* rival = runner_up(at);
          if (rival != nullptr && comparable(rival->logprob))
            runner_ups[rival->token].add(rival->logprob);
        }
        double moved = chosen.spread();
        for (const auto& [rival, range] : runner_ups) moved = std::max(moved, range.spread());
        drift.max_abs = std::max(drift.max_abs, moved);
        drift.max_abs_gap = std::max(drift.max_abs_gap, gap.spread());
        if (chosen.count >= 2) drift.positions_compared += chosen.count - 1;
        if ((moved > 0 || gap.spread() > 0) && !drift.first_position)
          drift.first_position = static_cast<int>(position);
        next.push_back(std::move(agreeing));
      }
    }
    groups = std::move(next);
  }
  return drift;
}

void join_logprob_drift(LogprobDrift& drift, const LogprobDrift& other) {
  drift.max_abs = std::max(drift.max_abs, other.max_abs);
  drift.max_abs_gap = std::max(drift.max_abs_gap, other.max_abs_gap);
  drift.positions_compared += other.positions_compared;
  if (other.first_position &&
      (!drift.first_position || *other.first_position < *drift.first_position))
    drift.first_position = other.first_position;
}

void add_logprob_drift(LogprobDrift& drift, const Completion& reference, const Completion& other) {
  join_logprob_drift(drift, logprob_drift_of({&reference, &other}));
}

} // namespace llmrepro::core
