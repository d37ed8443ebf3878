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
#include <cstddef>

#include "core/flip_probability.hpp"
#include "core/logprob_floor.hpp"

namespace llmrepro::core {
namespace {

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

void LogprobDriftTree::Range::add(double value) {
  low = count == 0 ? value : std::min(low, value);
  high = count == 0 ? value : std::max(high, value);
  ++count;
}

std::size_t LogprobDriftTree::child(std::size_t parent, const TokenText& token, int position) {
  std::size_t last = 0;
  for (std::size_t at = m_nodes[parent].first_child; at != 0; at = m_nodes[at].next_sibling) {
    if (m_nodes[at].token == token) return at;
    last = at;
  }
  const std::size_t added = m_nodes.size();
  Node node;
  node.token = token;
  node.position = position;
  m_nodes.push_back(std::move(node));
  (last == 0 ? m_nodes[parent].first_child : m_nodes[last].next_sibling) = added;
  return added;
}

void LogprobDriftTree::add(const Completion& run) {
  std::size_t node = 0;
  for (std::size_t position = 0; position < run.tokens.size(); ++position) {
    const TokenLogprob& at = run.tokens[position];
    node = child(node, at.token, static_cast<int>(position));
    Node& here = m_nodes[node];
    ++here.runs;
    if (comparable(at.logprob)) here.chosen.add(at.logprob);
    if (const double gap = measured_gap_or_nan(at); !std::isnan(gap)) here.gap.add(gap);
    const TokenCandidate* rival = runner_up(at);
    if (rival == nullptr || !comparable(rival->logprob)) continue;
    auto seen = std::find_if(here.runner_ups.begin(), here.runner_ups.end(),
                             [&](const RunnerUp& r) { return r.token == rival->token; });
    if (seen == here.runner_ups.end())
      seen = here.runner_ups.insert(here.runner_ups.end(), RunnerUp{rival->token, {}});
    seen->range.add(rival->logprob);
  }
}

LogprobDrift LogprobDriftTree::drift() const {
  LogprobDrift drift;
  for (const Node& node : m_nodes) {
    if (node.runs < 2) continue; // one run has nothing to compare (the root has none)
    double moved = node.chosen.spread();
    for (const RunnerUp& rival : node.runner_ups) moved = std::max(moved, rival.range.spread());
    drift.max_abs = std::max(drift.max_abs, moved);
    drift.max_abs_gap = std::max(drift.max_abs_gap, node.gap.spread());
    if (node.chosen.count >= 2) drift.positions_compared += node.chosen.count - 1;
    if ((moved > 0 || node.gap.spread() > 0) &&
        (!drift.first_position || node.position < *drift.first_position))
      drift.first_position = node.position;
  }
  return drift;
}

LogprobDrift logprob_drift_of(const std::vector<const Completion*>& runs) {
  LogprobDriftTree tree;
  for (const Completion* run : runs)
    if (run != nullptr) tree.add(*run);
  return tree.drift();
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
  // Two runs agree until their first differing token: the tree of two is a single path, walked
  // here without building it (this runs once for every run of an audit).
  LogprobDrift pair;
  const auto spread = [](double a, double b) { return std::max(a, b) - std::min(a, b); };
  const auto limit = std::min(reference.tokens.size(), other.tokens.size());
  for (std::size_t position = 0; position < limit; ++position) {
    const TokenLogprob& a = reference.tokens[position];
    const TokenLogprob& b = other.tokens[position];
    if (a.token != b.token) break;
    double moved = 0;
    if (comparable(a.logprob) && comparable(b.logprob)) {
      moved = spread(a.logprob, b.logprob);
      ++pair.positions_compared;
    }
    const TokenCandidate* rival_a = runner_up(a);
    const TokenCandidate* rival_b = runner_up(b);
    if (rival_a != nullptr && rival_b != nullptr && rival_a->token == rival_b->token &&
        comparable(rival_a->logprob) && comparable(rival_b->logprob))
      moved = std::max(moved, spread(rival_a->logprob, rival_b->logprob));
    double gap_moved = 0;
    const double gap_a = measured_gap_or_nan(a);
    const double gap_b = measured_gap_or_nan(b);
    if (!std::isnan(gap_a) && !std::isnan(gap_b)) gap_moved = spread(gap_a, gap_b);
    pair.max_abs = std::max(pair.max_abs, moved);
    pair.max_abs_gap = std::max(pair.max_abs_gap, gap_moved);
    if ((moved > 0 || gap_moved > 0) && !pair.first_position)
      pair.first_position = static_cast<int>(position);
  }
  join_logprob_drift(drift, pair);
}

} // namespace llmrepro::core
