// What each probe kind sends: the shared prefix of the prefix probe, the long context of the
// long probe, and the filler traffic of the mixed probe. All deterministic, so reruns and
// --resume send exactly the same text.
#pragma once

#include <cstdint>
#include <string>

#include "core/plan.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// Words in the prefix probe's shared prefix and in the long probe's context.
inline constexpr int k_prefix_words = 160;
inline constexpr int k_long_context_words = 480;

// A deterministic text of `words` space-separated words drawn from a fixed list by `seed`.
std::string filler_words(int words, std::uint64_t seed);

// The prompt as the probe kind sends it: sweep and mixed send it unchanged; prefix puts the
// shared prefix (the same for every prompt) before it; long puts the long context before it.
// A text prompt gets the addition before its text; a chat prompt before its first message's
// content, so the shared part is the start of what the engine tokenises.
Prompt probe_prompt(const Prompt& prompt, ProbeKind probe);

// Prefix probe: even repeats are cold (sent after a cache flush), odd ones warm (sent after a
// priming request with the same prefix).
bool prefix_trial_is_warm(int repeat);

// The priming request of a warm prefix trial: the shared prefix and a short tail of its own, so
// the audited request finds the prefix cached but not its own text.
Prompt prefix_priming_prompt();

// Filler request number `index` of the mixed probe: 8 to 200 words and 4 to 64 max_tokens,
// varied by index, so batches change shape around the audited requests.
Prompt filler_prompt(std::uint64_t index);
int filler_max_tokens(std::uint64_t index);

} // namespace llmrepro::core
