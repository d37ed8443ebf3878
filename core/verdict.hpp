// The gates: turns an analysis into pass or fail, with the reason for each gate.
#pragma once

#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/audit.hpp"

namespace llmrepro::core {

struct GateResult {
  std::string name;    // "fail_on", "max_unique", "max_unstable_rate", "min_tara"
  std::string message; // one line a person reads
  bool passed = true;
};

struct Verdict {
  bool passed = true;
  std::vector<GateResult> gates;
};

// Applies every configured gate. `tara` is null where answer agreement was not computed.
Verdict judge(const AuditAnalysis& analysis, const GateConfig& gates, std::optional<double> tara);

} // namespace llmrepro::core
