// The prompt cache's state on record: how many of the serial level's runs the server served
// partly from its prompt cache (warm), and whether that level's noise is then cache state rather
// than batching. Definitions in docs/design.md "Analysis: definitions" (cache state).
#pragma once

#include <string>
#include <vector>

#include "core/analysis.hpp"

namespace llmrepro::core {

// The line every report prints under the levels' noise, from the lowest level (the serial one
// at c=1) of `levels`: "c=1: 3 of 10 runs warm (prefix cache)" where some of its successful runs
// reported a cached prefix (UsageSummary::warm_requests > 0), with ", so its noise is cache state
// (warm and cold prefills), not batching: one request at a time shares no batch" added where the
// level mixes warm and cold runs and its noise has a nonzero sample (at a lowest level above 1:
// ", so its noise coincides with cache state (warm and cold prefills)"). Empty where no run of
// that level was warm or none said.
std::string cache_state_line(const std::vector<LevelSummary>& levels);

} // namespace llmrepro::core
