#include "core/completion_facts.hpp"

#include "core/completion_identity.hpp"
#include "core/flip_probability.hpp"

namespace llmrepro::core {
namespace {

// vLLM's return_tokens_as_token_ids spells every token "token_id:N": no text to compare.
bool tokens_are_ids(const Completion& completion) {
  return !completion.tokens.empty() &&
         completion.tokens.front().token.view().starts_with("token_id:");
}

} // namespace

CompletionFacts completion_facts(const Completion& completion) {
  CompletionFacts facts;
  // A reasoning model's compared text is a parsed part, whose markers and stripped whitespace
  // its tokens keep: only a raw completion's tokens must spell its text.
  facts.token_text_mismatch = completion.reasoning_split == ReasoningSplit::none &&
                              !completion.tokens.empty() && !tokens_are_ids(completion) &&
                              !tokens_match_text(completion);
  facts.below_runner_up = chose_below_runner_up(completion);
  if (completion.has_logprobs)
    for (const auto& token : completion.tokens) {
      const int candidates = static_cast<int>(token.top.size());
      if (!facts.min_candidates || candidates < *facts.min_candidates)
        facts.min_candidates = candidates;
    }
  facts.identity = detail::identity_hash(completion, detail::IdentityMode::tokens);
  return facts;
}

} // namespace llmrepro::core
