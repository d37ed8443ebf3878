// The verdict: every gate judged in every scope (endpoint and probe kind), and whether the audit
// could be judged at all. One Verdict feeds the exit code and every report, so they cannot
// disagree.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/audit.hpp"
#include "core/determinism_check.hpp"
#include "core/probe_analysis.hpp"

namespace llmrepro::core {

// pass: every gate passed on complete evidence (exit 0). fail: a gate failed (exit 1).
// error: the audit could not judge (exit 3, or 130 when interrupted): requests were planned but
// never recorded, the endpoint was unreachable, or no prompt has two successful completions.
enum class VerdictStatus { pass, fail, error };
const char* to_string(VerdictStatus status);

// What a gate looked at; an empty member means "all of them".
struct GateScope {
  std::optional<int> endpoint;
  std::optional<ProbeKind> probe;
  std::optional<int> level;
};

struct GateResult {
  std::string name; // fail_on_unstable, fail_on_fragile, fail_on_disagree, max_unique,
                    // max_unstable_rate, min_tara, max_logprob_drift, max_failed_rate,
                    // fail_on_shift, fail_on_endpoint_shift, min_modal_share,
                    // determinism
  std::string flag; // the flag that asked for it: "--fail-on unstable", "--max-unique"
  GateScope scope;
  std::optional<double> figure; // what was measured; empty where nothing could be
  std::optional<double> limit;
  std::string message; // one line a person reads
  bool passed = true;
};

struct Verdict {
  VerdictStatus status = VerdictStatus::pass;
  std::vector<GateResult> gates;
  std::vector<std::string> errors; // why the audit could not judge; non-empty iff error
  bool stability_gated = false;    // a gate judged stability (else the headline says so)
  // The one line every output leads with: "PASS: ...", "FAIL: ...", "ERROR: ..." or
  // "NO STABILITY GATE: 27 of 48 prompts unstable".
  std::string headline;
  bool passed() const { return status == VerdictStatus::pass; }
};

// One analysis the gates judge: an endpoint's probe kind.
struct JudgedScope {
  int endpoint = 0;
  ProbeKind probe = ProbeKind::sweep;
  const AuditAnalysis* analysis = nullptr;
};

// A gate the evidence was not gathered for: an adaptive audit whose prompts stopped before the
// gate had the runs it judges (core/adaptive_gates.hpp). `gate` is a GateResult::name.
struct UnsampledGate {
  std::string gate;
  std::string line; // why it cannot be judged, naming the flag and the prompts
};

// What the records alone do not say about the run.
struct RunFacts {
  std::size_t planned_requests = 0;
  std::size_t recorded_requests = 0;
  bool interrupted = false;
  std::string run_error; // the run stopped on this (an unreachable endpoint); empty otherwise
  // A budget stopped the run: its error line (cli budget_stop_error); empty otherwise.
  std::string budget_stop;
  // An adaptive audit (--adaptive) ended with prompts it had not decided, and no budget or
  // interruption says why: its error line; empty otherwise.
  std::string adaptive_unfinished;
  // Gates the adaptive audit's stops did not wait for. Such a gate that passes on the evidence
  // is not judged (it fails, and its line is an error); one that fails on it still fails, since
  // the runs not sent could only add evidence against it.
  std::vector<UnsampledGate> unsampled_gates;
  // Some endpoint sampled at the provider's default (core::temperature_in_effect): distinct
  // completions are expected, and a headline without a stability gate speaks of the answers'
  // distributions instead.
  bool distribution = false;
};

// Applies every configured gate to every scope (scopes[0] is endpoint 0's primary probe kind,
// whose figures the headline quotes); `comparison` is the endpoints' comparison, where there are
// several. `determinism` (--profile deterministic: one check per endpoint) adds one gate per
// endpoint, judged before the others so that a broken claim leads the headline.
Verdict judge(const std::vector<JudgedScope>& scopes,
              const std::optional<EndpointComparison>& comparison, const GateConfig& gates,
              const RunFacts& facts, const std::vector<DeterminismCheck>* determinism = nullptr);

} // namespace llmrepro::core
