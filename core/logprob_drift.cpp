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

void LogprobDriftTree::Range::add(double value) {
  low = count == 0 ? value : std::min(low, value);
  high = count == 0 ? value : std::max(high, value);
  ++count;
}

std::size_t LogprobDriftTree::child(std::size_t parent, const TokenText& token, int position) {
  // Nearly every run takes the first child: the runs agree on most tokens.
  const std::size_t first = m_nodes[parent].first_child;
  if (first != 0 && m_nodes[first].token == token) return first;
  return other_child(parent, token, position);
}

std::size_t LogprobDriftTree::other_child(std::size_t parent, const TokenText& token,
                                          int position) {
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
  read_run_numbers(run, m_numbers);
  add(m_numbers);
}

void LogprobDriftTree::add(std::span<const PositionNumbers> run) {
  std::size_t node = 0;
  for (std::size_t position = 0; position < run.size(); ++position) {
    const PositionNumbers& at = run[position];
    node = child(node, at.token->token, static_cast<int>(position));
    Node& here = m_nodes[node];
    ++here.runs;
    if (!std::isnan(at.chosen)) here.chosen.add(at.chosen);
    if (!std::isnan(at.gap)) here.gap.add(at.gap);
    if (at.rival == nullptr) continue;
    auto& rivals = here.runner_ups;
    // Nearly always the runner-up the first run named here.
    auto seen = !rivals.empty() && rivals.front().token == at.rival->token
                    ? rivals.begin()
                    : std::find_if(rivals.begin(), rivals.end(),
                                   [&](const RunnerUp& r) { return r.token == at.rival->token; });
    if (seen == rivals.end()) seen = rivals.insert(rivals.end(), RunnerUp{at.rival->token, {}});
    seen->range.add(at.rival->logprob);
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
  std::vector<PositionNumbers> numbers[2];
  read_run_numbers(reference, numbers[0]);
  read_run_numbers(other, numbers[1]);
  join_logprob_drift(drift, compare_runs(numbers[0], numbers[1], nullptr).drift);
}

RunComparison compare_runs(std::span<const PositionNumbers> reference,
                           std::span<const PositionNumbers> other,
                           std::vector<double>* deviations) {
  // Two runs agree until their first differing token: the tree of two is a single path, walked
  // here without building it.
  RunComparison out;
  LogprobDrift& pair = out.drift;
  const auto spread = [](double a, double b) { return std::max(a, b) - std::min(a, b); };
  const auto limit = std::min(reference.size(), other.size());
  for (std::size_t position = 0; position < limit; ++position) {
    const PositionNumbers& a = reference[position];
    const PositionNumbers& b = other[position];
    const bool both_measured = !std::isnan(a.gap) && !std::isnan(b.gap);
    if (deviations != nullptr && !both_measured) ++out.left_out;
    if (!(a.token->token == b.token->token)) {
      // The runs part here; a swap of the top two is the flip itself, measured.
      if (deviations != nullptr && both_measured &&
          a.token->top[0].token == b.token->top[1].token &&
          a.token->top[1].token == b.token->top[0].token)
        deviations->push_back(a.gap + b.gap);
      break;
    }
    ++out.shared;
    if (deviations != nullptr && both_measured) deviations->push_back(std::abs(b.gap - a.gap));
    double moved = 0;
    if (!std::isnan(a.chosen) && !std::isnan(b.chosen)) {
      moved = spread(a.chosen, b.chosen);
      ++pair.positions_compared;
    }
    if (a.rival != nullptr && b.rival != nullptr && a.rival->token == b.rival->token)
      moved = std::max(moved, spread(a.rival->logprob, b.rival->logprob));
    const double gap_moved = both_measured ? spread(a.gap, b.gap) : 0.0;
    pair.max_abs = std::max(pair.max_abs, moved);
    pair.max_abs_gap = std::max(pair.max_abs_gap, gap_moved);
    if ((moved > 0 || gap_moved > 0) && !pair.first_position)
      pair.first_position = static_cast<int>(position);
  }
  return out;
}

} // namespace llmrepro::core
