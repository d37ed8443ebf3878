// What the requests used and cost as every human-readable report words it, so that the
// terminal, Markdown and HTML say the same thing in the same numbers (docs/design.md "Usage and
// cost").
#pragma once

#include <string>
#include <vector>

#include "core/analysis.hpp"

namespace llmrepro::report {

// "tokens in 400 · out 170 (30 reasoning) · cost 0.00216": the prompt tokens, the generated ones
// with the reasoning within them, and the cost where a price was given. Where some requests did
// not report their prompt's tokens it says how many did and that the cost is a lower bound
// ("in 400 (16 of 17 requests reported theirs) · ... · cost at least 0.00216"); where none did,
// "in unknown". Empty when no request succeeded.
std::string usage_text(const core::UsageSummary& usage);

// A cost as the reports print it: six significant digits ("0.00216", "12.5").
std::string cost_number(double cost);

// "812.3 tok/s, latency mean 41.2 ms, median 40 ms, p95 60 ms": what a level served and how fast,
// to read beside its stability (and, in `diff`, beside another audit's: what a deterministic mode
// costs). Empty when the level had no successful request.
std::string speed_text(const core::LevelSummary& level);

// "c=1: tokens in 216 · out 90 · cost 0.00115; c=8: ...": usage_text() of each level that had a
// successful request, `separator` between the levels. Empty when none had.
std::string level_usage_text(const std::vector<core::LevelSummary>& levels,
                             const std::string& separator);

} // namespace llmrepro::report
