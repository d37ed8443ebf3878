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

// How long the mixed probe's fillers are. `standard`: 8 to 200 words. `across_256`
// (--profile deterministic): even-numbered fillers 16 to 200 words, odd-numbered 300 to 480, so
// that batches hold prompts on both sides of 256 tokens, where kernels such as an RMSNorm or
// attention block size are known to change, with lengths drawn from `seed` (the audit's).
struct FillerShape {
  bool across_256 = false;
  std::uint64_t seed = 0;
};

// Filler request number `index` of the mixed probe, varied by index (and, across 256, by the
// shape's seed), so batches change shape around the audited requests; 4 to 64 max_tokens.
Prompt filler_prompt(std::uint64_t index, const FillerShape& shape = {});
int filler_max_tokens(std::uint64_t index);
// The number of words filler `index` has under `shape` (what filler_prompt sends).
int filler_word_count(std::uint64_t index, const FillerShape& shape = {});

} // namespace llmrepro::core
