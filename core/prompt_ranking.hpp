// Which prompts a reviewer should look at first: one ordering shared by every report.
#pragma once

#include <cstddef>
#include <vector>

#include "core/analysis.hpp"

namespace llmrepro::core {

// The unstable or fragile prompts, worst first: most distinct completions, then the earliest
// first divergence, then the smallest min_gap, then suite order. At most `limit` of them.
std::vector<const PromptAnalysis*> worst_prompts(const AuditAnalysis& analysis, std::size_t limit);

} // namespace llmrepro::core
