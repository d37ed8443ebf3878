// What each probe kind sends: the shared prefix of the prefix probe, the long context of the
// long probe, and the filler traffic of the mixed probe. All deterministic, so reruns and
// --resume send exactly the same text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// Words in the prefix probe's shared prefix and in the long probe's context.
inline constexpr int k_prefix_words = 160;
inline constexpr int k_long_context_words = 480;

// A deterministic text of `words` space-separated words drawn from a fixed list by `seed`.
std::string filler_words(int words, std::uint64_t seed);

// The prompt as the probe kind sends it: sweep, mixed and restart send it unchanged; prefix puts
// the shared prefix (the same for every prompt) before it; long puts the long context before it. A
// text prompt gets the addition before its text; a chat prompt before its first message's content,
// so the shared part is the start of what the engine tokenises.
Prompt probe_prompt(const Prompt& prompt, ProbeKind probe);

// Prefix probe: even repeats are cold (sent after a cache flush), odd ones warm (sent after a
// priming request with the same prefix).
bool prefix_trial_is_warm(int repeat);

// The priming request of a warm prefix trial: the shared prefix (its first `words` words) and a
// short tail of its own, so the audited request finds the prefix cached but not its own text.
Prompt prefix_priming_prompt(int words = k_prefix_words);

// The prefix probe's prompt with only the first `words` words of the shared prefix
// (probe_prompt(prompt, ProbeKind::prefix) is this with k_prefix_words).
Prompt prefix_probe_prompt(const Prompt& prompt, int words);

// The words of shared prefix that fit `context` tokens per slot beside every prompt of `prompts`
// (each with its max_tokens, or `max_tokens` where it has none) and in the priming request (one
// token): one count for all, so the prefix stays shared. k_prefix_words where there is no context
// or it all fits; 0 where not even one word fits beside the longest prompt.
int prefix_words_fitting(const std::vector<Prompt>& prompts, int max_tokens,
                         std::optional<int> context);

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

// A request sized to fit a server's context per slot: its prompt's prompt_token_bound
// (core/budget.hpp: one token per byte, plus the template margins) plus its max_tokens at most
// the context, so that the server cannot refuse it as too long whatever its tokenizer.
struct SizedPrompt {
  Prompt prompt;
  int max_tokens = 0;
  bool shortened = false; // words were cut from its end (or max_tokens lowered) to fit
  bool fits = true;       // false: not even its first word and one token fit; not to be sent
  int words = 0;          // the words of filler or context it kept
};

// Filler `index` (filler_prompt, with `max_tokens`) sized to `context` tokens per slot: its words
// are cut from the end until it fits; where no word fits with `max_tokens`, max_tokens is lowered
// (to at least 1) with the first word alone. No context (empty): the filler as it is.
SizedPrompt sized_filler(std::uint64_t index, const FillerShape& shape, int max_tokens,
                         std::optional<int> context);

// The long probe's prompt (probe_prompt(prompt, ProbeKind::long_prompt)) sized to `context`
// tokens per slot with `max_tokens`: the long context's words are cut from the end until it fits;
// never below no context at all (then `fits` says whether even that fits). No context: as it is.
SizedPrompt sized_long_prompt(const Prompt& prompt, int max_tokens, std::optional<int> context);

} // namespace llmrepro::core
