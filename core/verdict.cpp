// The verdict is computed from every scope's evidence. Three rules keep it honest:
//  - a verdict is `error`, never `pass`, when evidence is missing: a planned request was never
//    recorded (interrupted, partial, unreachable endpoint) or a scope has no prompt with two
//    successful completions to compare;
//  - failed requests are a gate of their own (--max-failed-rate, default 0), because a prompt
//    whose requests failed was not judged;
//  - every stability gate is applied to every endpoint and every probe kind, not just the first;
//  - a determinism claim that nothing broke but some cell could not test is not judged: an
//    error, not a failure.
#include "core/verdict.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace llmrepro::core {

const char* to_string(VerdictStatus status) {
  switch (status) {
  case VerdictStatus::pass: return "pass";
  case VerdictStatus::fail: return "fail";
  case VerdictStatus::error: return "error";
  }
  return "error";
}

namespace {

std::string format_rate(double rate) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3f", rate);
  return buffer;
}

// Drift is often tiny (1e-6 nats) or exactly 0: three significant digits, not three decimals.
std::string format_drift(double drift) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", drift);
  return buffer;
}

std::string count_of(int count, int total, const char* noun) {
  return std::to_string(count) + " of " + std::to_string(total) + " " + noun;
}

class Judge {
public:
  Judge(const std::vector<JudgedScope>& scopes, const GateConfig& gates)
      : m_scopes(scopes), m_gates(gates), m_several(scopes.size() > 1) {}

  void add(std::string name, std::string flag, GateScope scope, std::optional<double> figure,
           std::optional<double> limit, std::string message, bool passed) {
    m_verdict.gates.push_back(
        {std::move(name), std::move(flag), scope, figure, limit, std::move(message), passed});
  }

  // "endpoint 1, long: " where several scopes are judged; nothing otherwise.
  std::string prefix(const JudgedScope& scope) const {
    if (!m_several) return "";
    return "endpoint " + std::to_string(scope.endpoint) + ", " + to_string(scope.probe) + ": ";
  }

  static GateScope scope_of(const JudgedScope& scope) {
    return GateScope{scope.endpoint, scope.probe, std::nullopt};
  }

  void failed_requests() {
    int failed = 0;
    int recorded = 0;
    std::map<std::string, int> reasons;
    for (const auto& scope : m_scopes) {
      failed += scope.analysis->summary.failed_requests;
      recorded += scope.analysis->summary.requests;
      for (const auto& [reason, count] : scope.analysis->summary.failure_reasons)
        reasons[reason] += count;
    }
    const double rate = recorded > 0 ? static_cast<double>(failed) / recorded : 0.0;
    std::string message = count_of(failed, recorded, "requests") + " failed after their retries";
    if (failed > 0) {
      // Grouped by reason, most frequent first, at most three named.
      std::vector<std::pair<std::string, int>> sorted(reasons.begin(), reasons.end());
      std::stable_sort(sorted.begin(), sorted.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      message += " (";
      for (std::size_t i = 0; i < sorted.size() && i < 3; ++i) {
        if (i > 0) message += "; ";
        message += std::to_string(sorted[i].second) + " x " + sorted[i].first;
      }
      if (sorted.size() > 3) message += "; " + std::to_string(sorted.size() - 3) + " more reasons";
      message += ")";
    }
    message += ", limit " + format_rate(m_gates.max_failed_rate) + " (--max-failed-rate)";
    add("max_failed_rate", "--max-failed-rate", GateScope{}, rate, m_gates.max_failed_rate, message,
        rate <= m_gates.max_failed_rate);
  }

  void unstable(const JudgedScope& scope) {
    const AuditSummary& s = scope.analysis->summary;
    const int judged = s.stable_prompts + s.unstable_prompts;
    std::string message =
        prefix(scope) + count_of(s.unstable_prompts, judged, "judged prompts") + " unstable";
    if (s.inconclusive_prompts > 0)
      message += ", " + std::to_string(s.inconclusive_prompts) + " inconclusive";
    message += " (--fail-on unstable)";
    // No judged prompt is no evidence of stability: the gate does not pass on nothing.
    if (judged == 0) message = prefix(scope) + "no prompt could be judged (--fail-on unstable)";
    add("fail_on_unstable", "--fail-on unstable", scope_of(scope), s.unstable_prompts, 0, message,
        s.unstable_prompts == 0 && judged > 0);
  }

  void fragile(const JudgedScope& scope) {
    const AuditSummary& s = scope.analysis->summary;
    std::string message =
        prefix(scope) + count_of(s.fragile_prompts, s.prompts, "prompts") + " fragile";
    if (s.fragility_unknown_prompts > 0) {
      message += ", " + std::to_string(s.fragility_unknown_prompts) + " of unknown fragility";
      for (const auto& prompt : scope.analysis->prompts)
        if (!prompt.fragile) {
          message += " (prompt " + prompt.id + ": " + prompt.fragility_reason + ")";
          break;
        }
    }
    message += " (--fail-on fragile)";
    add("fail_on_fragile", "--fail-on fragile", scope_of(scope),
        s.fragile_prompts + s.fragility_unknown_prompts, 0, message,
        s.fragile_prompts == 0 && s.fragility_unknown_prompts == 0);
  }

  // Distribution mode: each level's answers against the lowest level's, every test of the audit
  // in one family (Holm), so that the gate fails only beyond chance at k_shift_alpha.
  void shift(const JudgedScope& scope) {
    const AuditSummary& s = scope.analysis->summary;
    std::string message = prefix(scope) + count_of(s.shifted_prompts, s.prompts, "prompts") +
                          " with an answer distribution that shifted between levels (" +
                          std::to_string(s.shift_tests) + " tests, family-wise " +
                          format_rate(k_shift_alpha) + ")";
    std::string worst_id;
    double worst_p = 1.0;
    for (const auto& prompt : scope.analysis->prompts)
      for (const auto& level : prompt.by_concurrency)
        if (level.shifted && level.shift_p_adjusted && *level.shift_p_adjusted < worst_p) {
          worst_p = *level.shift_p_adjusted;
          worst_id = prompt.id + " at c=" + std::to_string(level.concurrency);
        }
    if (!worst_id.empty()) message += ", most of all " + worst_id;
    message += " (--fail-on shift)";
    // No level to compare is no evidence that the distribution held.
    const bool compared = std::any_of(
        scope.analysis->prompts.begin(), scope.analysis->prompts.end(), [](const auto& prompt) {
          return std::any_of(
              prompt.by_concurrency.begin(), prompt.by_concurrency.end(), [](const auto& level) {
                return level.shift && level.shift->b_answers > 0 && level.shift->a_answers > 0;
              });
        });
    if (!compared)
      message = prefix(scope) + "no prompt had answers at two levels to compare (--fail-on shift)";
    add("fail_on_shift", "--fail-on shift", scope_of(scope), s.shifted_prompts, 0, message,
        s.shifted_prompts == 0 && compared);
  }

  // Distribution mode between endpoints: one gate per compared endpoint, its answers against
  // endpoint 0's prompt by prompt, the tests in the same Holm family as the level tests
  // (judge_shifts), so that the gates together fail only beyond chance at k_shift_alpha.
  void endpoint_shift(const std::optional<EndpointComparison>& comparison, ProbeKind probe) {
    if (!comparison) return; // one endpoint: nothing to compare, the level gates judge it
    if (comparison->prompts.empty()) {
      add("fail_on_endpoint_shift", "--fail-on shift", GateScope{}, std::nullopt, 0,
          "no prompt to compare between endpoints (--fail-on shift)", false);
      return;
    }
    const std::size_t others = comparison->prompts.front().endpoints.size();
    for (std::size_t k = 0; k < others; ++k) {
      int shifted = 0;
      int endpoint = 0;
      bool compared = false;
      std::string worst_id;
      double worst_p = 1.0;
      for (const auto& prompt : comparison->prompts) {
        if (k >= prompt.endpoints.size()) continue;
        const EndpointDivergence& other = prompt.endpoints[k];
        endpoint = other.endpoint_index;
        compared |= other.shift.has_value();
        if (!other.shifted) continue;
        ++shifted;
        if (other.shift_p_adjusted && *other.shift_p_adjusted < worst_p) {
          worst_p = *other.shift_p_adjusted;
          worst_id = prompt.id;
        }
      }
      const std::string name = "endpoint " + std::to_string(endpoint) + ": ";
      std::string message =
          name + count_of(shifted, static_cast<int>(comparison->prompts.size()), "prompts") +
          " with an answer distribution that shifted from endpoint 0's (" +
          std::to_string(comparison->shift_tests) + " tests, family-wise " +
          format_rate(k_shift_alpha) + ")";
      if (!worst_id.empty()) message += ", most of all " + worst_id;
      message += " (--fail-on shift)";
      // No prompt answered on both is no evidence that the distributions agree.
      if (!compared)
        message = name + "no prompt had answers on both endpoints to compare (--fail-on shift)";
      add("fail_on_endpoint_shift", "--fail-on shift", GateScope{endpoint, probe, std::nullopt},
          shifted, 0, message, shifted == 0 && compared);
    }
  }

  void min_modal_share(const JudgedScope& scope, double limit) {
    const AuditSummary& s = scope.analysis->summary;
    if (!s.min_modal_share) {
      add("min_modal_share", "--min-modal-share", scope_of(scope), std::nullopt, limit,
          prefix(scope) + "no prompt had a run, minimum modal share " + format_rate(limit) +
              " (--min-modal-share)",
          false);
      return;
    }
    int below = 0;
    std::string worst_id;
    for (const auto& prompt : scope.analysis->prompts)
      if (prompt.modal.runs > 0 && prompt.modal.share < limit) {
        ++below;
        if (worst_id.empty() && prompt.modal.share == *s.min_modal_share) worst_id = prompt.id;
      }
    std::string message = prefix(scope) + count_of(below, s.prompts, "prompts") +
                          " below modal share " + format_rate(limit) + ", lowest " +
                          format_rate(*s.min_modal_share);
    if (!worst_id.empty()) message += " (prompt " + worst_id + ")";
    add("min_modal_share", "--min-modal-share", scope_of(scope), *s.min_modal_share, limit,
        message + " (--min-modal-share)", below == 0);
  }

  // One gate per compared endpoint: its reference completions against endpoint 0's.
  void disagree(const std::optional<EndpointComparison>& comparison, ProbeKind probe) {
    if (!comparison || comparison->prompts.empty()) {
      add("fail_on_disagree", "--fail-on disagree", GateScope{}, std::nullopt, 0,
          comparison ? "no prompt to compare between endpoints (--fail-on disagree)"
                     : "only one endpoint: nothing to compare (--fail-on disagree)",
          false);
      return;
    }
    const std::size_t others = comparison->prompts.front().endpoints.size();
    for (std::size_t k = 0; k < others; ++k) {
      const int compared = static_cast<int>(comparison->prompts.size());
      int disagreeing = 0;
      int endpoint = 0;
      std::string first;
      for (const auto& prompt : comparison->prompts) {
        if (k >= prompt.endpoints.size()) continue;
        const EndpointDivergence& other = prompt.endpoints[k];
        endpoint = other.endpoint_index;
        if (other.agrees) continue;
        ++disagreeing;
        if (first.empty()) first = prompt.id;
      }
      std::string message = "endpoint " + std::to_string(endpoint) + ": " +
                            count_of(disagreeing, compared, "prompts") +
                            " have a reference completion other than endpoint 0's (or none)";
      if (!first.empty()) message += ", first: " + first;
      message += " (--fail-on disagree)";
      add("fail_on_disagree", "--fail-on disagree", GateScope{endpoint, probe, std::nullopt},
          disagreeing, 0, message, disagreeing == 0);
    }
  }

  void max_unique(const JudgedScope& scope, int limit) {
    int worst = 0;
    std::string worst_id;
    for (const auto& prompt : scope.analysis->prompts)
      if (prompt.unique_completions > worst) {
        worst = prompt.unique_completions;
        worst_id = prompt.id;
      }
    std::string message = prefix(scope) + "most distinct completions: " + std::to_string(worst);
    if (!worst_id.empty()) message += " (prompt " + worst_id + ")";
    message += ", limit " + std::to_string(limit) + " (--max-unique)";
    const AuditSummary& s = scope.analysis->summary;
    const bool judged = s.stable_prompts + s.unstable_prompts > 0;
    if (!judged)
      message = prefix(scope) + "no prompt could be judged, limit " + std::to_string(limit) +
                " (--max-unique)";
    add("max_unique", "--max-unique", scope_of(scope), worst, limit, message,
        judged && worst <= limit);
  }

  void max_unstable_rate(const JudgedScope& scope, double limit) {
    const AuditSummary& s = scope.analysis->summary;
    const int judged = s.stable_prompts + s.unstable_prompts;
    if (judged == 0) {
      add("max_unstable_rate", "--max-unstable-rate", scope_of(scope), std::nullopt, limit,
          prefix(scope) + "no prompt could be judged, limit " + format_rate(limit) +
              " (--max-unstable-rate)",
          false);
      return;
    }
    const double rate = static_cast<double>(s.unstable_prompts) / judged;
    std::string message = prefix(scope) + "unstable rate " + format_rate(rate) + " (" +
                          count_of(s.unstable_prompts, judged, "judged prompts") + ")";
    if (s.inconclusive_prompts > 0)
      message += ", " + std::to_string(s.inconclusive_prompts) + " inconclusive";
    message += ", limit " + format_rate(limit) + " (--max-unstable-rate)";
    add("max_unstable_rate", "--max-unstable-rate", scope_of(scope), rate, limit, message,
        rate <= limit);
  }

  // The scope's largest logprob drift between runs whose tokens agree. No compared position is
  // no evidence that the logprobs hold still: the gate fails on it.
  void max_logprob_drift(const JudgedScope& scope, double limit) {
    const AuditSummary& s = scope.analysis->summary;
    const std::string tail = ", limit " + format_drift(limit) + " (--max-logprob-drift)";
    if (!s.max_logprob_drift) {
      add("max_logprob_drift", "--max-logprob-drift", scope_of(scope), std::nullopt, limit,
          prefix(scope) + "no logprobs were compared" + tail, false);
      return;
    }
    const double drift = *s.max_logprob_drift;
    std::string worst_id;
    for (const auto& prompt : scope.analysis->prompts)
      if (prompt.status != PromptStatus::inconclusive && prompt.logprob_drift.max_abs == drift &&
          prompt.logprob_drift.positions_compared > 0) {
        worst_id = prompt.id;
        break;
      }
    std::string message = prefix(scope) + "largest logprob drift " + format_drift(drift) + " nats";
    if (!worst_id.empty()) message += " (prompt " + worst_id + ")";
    add("max_logprob_drift", "--max-logprob-drift", scope_of(scope), drift, limit, message + tail,
        drift <= limit);
  }

  void min_tara(const JudgedScope& scope, double limit) {
    const AuditSummary& s = scope.analysis->summary;
    if (s.prompts == 0) {
      add("min_tara", "--min-tara", scope_of(scope), std::nullopt, limit,
          prefix(scope) + "TARa was not computed, minimum " + format_rate(limit) + " (--min-tara)",
          false);
      return;
    }
    add("min_tara", "--min-tara", scope_of(scope), s.tara, limit,
        prefix(scope) + "TARa " + format_rate(s.tara) + ", minimum " + format_rate(limit) +
            " (--min-tara)",
        s.tara >= limit);
  }

  // --profile deterministic: the claim must hold on every level and probe kind. The scope is
  // where it first broke, so a failing gate names the probe and level; the figure is the drift
  // there (nats).
  void determinism(const DeterminismCheck& check, int endpoint, bool several_endpoints) {
    GateScope scope{endpoint, std::nullopt, std::nullopt};
    std::optional<double> figure;
    if (check.first_break) {
      scope.probe = check.first_break->probe;
      scope.level = check.first_break->level;
      figure = check.first_break->drift;
    } else if (check.held) {
      figure = 0.0;
    }
    const std::string who = several_endpoints ? "endpoint " + std::to_string(endpoint) + ": " : "";
    const std::string line = who + determinism_line(check) + " (--profile deterministic)";
    // Nothing broke, but a cell could not be tested (no cold mode, refused fillers): the claim
    // was not judged there, which is missing evidence, not a failure of the claim.
    const bool not_judged = !check.held && !check.first_break && check.untested_cells() > 0;
    add("determinism", "--profile deterministic", scope, figure, 0.0,
        not_judged ? "not judged: " + line : line, check.held);
    if (not_judged) m_verdict.errors.push_back(line);
  }

  void missing_evidence(const RunFacts& facts) {
    auto& errors = m_verdict.errors;
    if (!facts.run_error.empty()) errors.push_back("the run stopped: " + facts.run_error);
    if (!facts.budget_stop.empty()) errors.push_back(facts.budget_stop);
    if (!facts.adaptive_unfinished.empty()) errors.push_back(facts.adaptive_unfinished);
    if (facts.recorded_requests < facts.planned_requests) {
      const std::string recorded = std::to_string(facts.recorded_requests) + " of " +
                                   std::to_string(facts.planned_requests) +
                                   " planned requests recorded";
      errors.push_back(facts.interrupted ? "interrupted: " + recorded : "incomplete: " + recorded);
    } else if (facts.interrupted) {
      errors.push_back("interrupted");
    }
    for (const auto& scope : m_scopes)
      if (scope.analysis->summary.prompts_with_two_completions == 0)
        errors.push_back(prefix(scope) + "no prompt has two successful completions to compare");
    // Compared on the reasoning, completions that carried none compare empty parts: equal, and
    // evidence of nothing.
    for (const auto& scope : m_scopes) {
      const ReasoningSummary& reasoning = scope.analysis->summary.reasoning;
      if (reasoning.compare_on == CompareOn::reasoning && reasoning.completions > 0 &&
          reasoning.with_reasoning == 0)
        errors.push_back(prefix(scope) + "--compare-on reasoning, but none of the " +
                         std::to_string(reasoning.completions) +
                         " successful completions carried reasoning");
    }
  }

  // A gate that passed on evidence gathered without it is not judged: it fails, and its line
  // is an error. One it already fails on stays a failure.
  void unsampled(const RunFacts& facts) {
    for (const UnsampledGate& unsampled : facts.unsampled_gates) {
      bool passed_unsampled = false;
      for (GateResult& gate : m_verdict.gates)
        if (gate.name == unsampled.gate && gate.passed) {
          gate.passed = false;
          gate.message = "not judged: " + unsampled.line;
          passed_unsampled = true;
        }
      if (passed_unsampled) m_verdict.errors.push_back(unsampled.line);
    }
  }

  // `distribution`: RunFacts::distribution, which words the headline without a stability gate.
  Verdict finish(const std::vector<JudgedScope>& scopes,
                 const std::optional<EndpointComparison>& comparison, bool distribution) {
    Verdict verdict = std::move(m_verdict);
    verdict.stability_gated = m_gates.stability_gated();
    int failed = 0;
    const GateResult* first_failed = nullptr;
    for (const auto& gate : verdict.gates)
      if (!gate.passed) {
        ++failed;
        if (!first_failed) first_failed = &gate;
      }
    if (!verdict.errors.empty()) {
      verdict.status = VerdictStatus::error;
      verdict.headline = "ERROR: the audit could not be judged: " + verdict.errors.front();
      if (verdict.errors.size() > 1)
        verdict.headline += " (and " + std::to_string(verdict.errors.size() - 1) + " more)";
    } else if (failed > 0) {
      verdict.status = VerdictStatus::fail;
      verdict.headline = "FAIL: " + std::to_string(failed) + " of " +
                         std::to_string(verdict.gates.size()) +
                         " gates failed: " + first_failed->message;
    } else {
      verdict.status = VerdictStatus::pass;
      if (verdict.stability_gated) {
        verdict.headline = "PASS: " + std::to_string(verdict.gates.size()) + " gates passed";
      } else if (distribution) {
        // Sampling by design: what the answers did, not how many completions differed.
        const AuditSummary& s = scopes.front().analysis->summary;
        verdict.headline =
            "NO STABILITY GATE: " + count_of(s.shifted_prompts, s.prompts, "prompts") +
            " with answers that shifted between levels";
        if (comparison && !comparison->prompts.empty())
          verdict.headline += ", " +
                              count_of(comparison->shifted_prompts,
                                       static_cast<int>(comparison->prompts.size()), "") +
                              "between endpoints";
        if (s.min_modal_share)
          verdict.headline += ", lowest modal share " + format_rate(*s.min_modal_share);
      } else {
        // No gate asked about stability: say what the audit saw instead of a bare PASS.
        const AuditSummary& s = scopes.front().analysis->summary;
        const int judged = s.stable_prompts + s.unstable_prompts;
        verdict.headline =
            "NO STABILITY GATE: " + count_of(s.unstable_prompts, judged, "prompts") + " unstable";
        if (s.inconclusive_prompts > 0)
          verdict.headline += ", " + std::to_string(s.inconclusive_prompts) + " inconclusive";
      }
    }
    return verdict;
  }

private:
  const std::vector<JudgedScope>& m_scopes;
  const GateConfig& m_gates;
  bool m_several = false;
  Verdict m_verdict;
};

} // namespace

Verdict judge(const std::vector<JudgedScope>& scopes,
              const std::optional<EndpointComparison>& comparison, const GateConfig& gates,
              const RunFacts& facts, const std::vector<DeterminismCheck>* determinism) {
  if (scopes.empty()) {
    Verdict verdict;
    verdict.status = VerdictStatus::error;
    verdict.errors.push_back("nothing was analysed");
    verdict.headline = "ERROR: the audit could not be judged: nothing was analysed";
    return verdict;
  }
  Judge judge(scopes, gates);
  judge.missing_evidence(facts);
  if (determinism != nullptr)
    for (std::size_t e = 0; e < determinism->size(); ++e)
      judge.determinism((*determinism)[e], static_cast<int>(e), determinism->size() > 1);
  judge.failed_requests();
  for (const auto& scope : scopes) {
    if (gates.fail_on.unstable) judge.unstable(scope);
    if (gates.fail_on.fragile) judge.fragile(scope);
    if (gates.fail_on.shift) judge.shift(scope);
    if (gates.min_modal_share) judge.min_modal_share(scope, *gates.min_modal_share);
    if (gates.max_unique) judge.max_unique(scope, *gates.max_unique);
    if (gates.max_unstable_rate) judge.max_unstable_rate(scope, *gates.max_unstable_rate);
    if (gates.min_tara) judge.min_tara(scope, *gates.min_tara);
    if (gates.max_logprob_drift) judge.max_logprob_drift(scope, *gates.max_logprob_drift);
  }
  if (gates.fail_on.shift) judge.endpoint_shift(comparison, scopes.front().probe);
  if (gates.fail_on.disagree) judge.disagree(comparison, scopes.front().probe);
  judge.unsampled(facts);
  return judge.finish(scopes, comparison, facts.distribution);
}

} // namespace llmrepro::core
