// The numbers the drift and the noise compare at each position of a run, read off it once: every
// walk over a run (the drift against the reference, the noise samples, the drift trees) asks each
// token for its runner-up and its gap, and looking for them again in each walk cost more than the
// walks' own comparisons.
#pragma once

#include <cmath>
#include <vector>

#include "core/completion.hpp"
#include "core/flip_probability.hpp"
#include "core/logprob_floor.hpp"

namespace llmrepro::core {

// A log probability drift may compare: a number above the floor. A logprob at the floor
// (-Infinity as the endpoint sent it) says "impossible", not how far it moved; a runner-up that
// falls to it from -1 would otherwise read as 9998 nats of drift. Kept out as the noise samples
// keep it out (measured_gap).
inline bool drift_comparable(double logprob) {
  return is_known_logprob(logprob) && logprob > k_logprob_floor;
}

// The best candidate other than the chosen token: the one a flip would choose.
inline const TokenCandidate* runner_up(const TokenLogprob& token) {
  const TokenCandidate* candidate = token.top.begin();
  for (const TokenCandidate* const end = token.top.end(); candidate != end; ++candidate)
    if (!(candidate->token == token.token)) return candidate;
  return nullptr;
}

// One position of a run.
struct PositionNumbers {
  const TokenLogprob* token = nullptr;
  double chosen = 0;                     // the token's logprob where drift_comparable, else NaN
  const TokenCandidate* rival = nullptr; // the runner-up where its logprob is drift_comparable
  double gap = 0;                        // measured_gap_or_nan
};

// The numbers of every position of `run`, in `out` in place of what it held.
inline void read_run_numbers(const Completion& run, std::vector<PositionNumbers>& out) {
  out.resize(run.tokens.size());
  PositionNumbers* at = out.data();
  for (const TokenLogprob& token : run.tokens) {
    at->token = &token;
    at->chosen = drift_comparable(token.logprob) ? token.logprob : k_unknown_logprob;
    const TokenCandidate* rival = runner_up(token);
    at->rival = rival != nullptr && drift_comparable(rival->logprob) ? rival : nullptr;
    at->gap = measured_gap_or_nan(token);
    ++at;
  }
}

} // namespace llmrepro::core
