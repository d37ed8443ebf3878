#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/reasoning.hpp"

using namespace llmrepro::core;

namespace {

// A completion whose logprobs stream is `tokens` (each the top-1, with "alt" at -1 as top-2),
// whose answer text is `answer` and whose reasoning text is `reasoning`: what an SGLang or
// Ollama reasoning model returns before the split.
Completion streamed(const std::vector<std::string>& tokens, const std::string& answer,
                    const std::string& reasoning) {
  Completion completion;
  completion.has_logprobs = true;
  completion.text = answer;
  completion.reasoning_text = reasoning;
  for (const auto& text : tokens) {
    TokenLogprob token;
    token.token = text;
    token.logprob = -0.25;
    token.top = {{text, -0.25}, {"alt", -1.0}};
    completion.tokens.push_back(token);
  }
  return completion;
}

std::vector<std::string> token_strings(const std::vector<TokenLogprob>& tokens) {
  std::vector<std::string> strings;
  for (const auto& token : tokens) strings.push_back(token.token.str());
  return strings;
}

using Strings = std::vector<std::string>;

} // namespace

TEST_CASE("--compare-on names its four choices and refuses anything else") {
  CHECK(parse_compare_on("answer").value() == CompareOn::answer);
  CHECK(parse_compare_on("reasoning").value() == CompareOn::reasoning);
  CHECK(parse_compare_on("both").value() == CompareOn::both);
  CHECK(parse_compare_on("tool_calls").value() == CompareOn::tool_calls);
  const auto bad = parse_compare_on("thinking");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::usage);
  CHECK(bad.error().message ==
        "unknown --compare-on 'thinking' (expected answer, reasoning, both or tool_calls)");
  CHECK(std::string(to_string(CompareOn::reasoning)) == "reasoning");
  CHECK(parse_reasoning_split(to_string(ReasoningSplit::joined)) == ReasoningSplit::joined);
  CHECK(parse_reasoning_split("") == ReasoningSplit::none);
}

TEST_CASE("a completion without reasoning is left as it came") {
  Completion completion = streamed({"The", " sky"}, "The sky", "");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::none);
  CHECK(completion.tokens.size() == 2);
  CHECK_FALSE(has_reasoning(completion));
  const Completion answer = compared_part(completion, CompareOn::answer);
  CHECK(answer.text == "The sky");
  CHECK(token_strings(answer.tokens) == Strings{"The", " sky"});
  CHECK(compared_part(completion, CompareOn::both).text == "The sky");
  // Compared on reasoning, it did not reason: an empty part, with nothing missing.
  const Completion reasoning = compared_part(completion, CompareOn::reasoning);
  CHECK(reasoning.text.empty());
  CHECK(reasoning.tokens.empty());
  CHECK(reasoning.has_logprobs);
}

TEST_CASE("SGLang's whole-generation logprobs are cut where the parsed answer starts") {
  // sgl-project/sglang#25055: logprobs.content covers <think>…</think> and the answer, while
  // message.content holds the answer (stripped) and reasoning_content the reasoning.
  Completion completion =
      streamed({"<think>", "\n", "Add", " them", ".", "\n", "</think>", "\n\n", "4", "."}, "4.",
               "\nAdd them.\n");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::separate);
  CHECK(token_strings(completion.tokens) == Strings{"4", "."});
  CHECK(token_strings(completion.reasoning_tokens) ==
        Strings{"<think>", "\n", "Add", " them", ".", "\n", "</think>", "\n\n"});
  CHECK(has_reasoning(completion));

  const Completion answer = compared_part(completion, CompareOn::answer);
  CHECK(answer.text == "4.");
  CHECK(token_strings(answer.tokens) == Strings{"4", "."});
  CHECK(answer.has_logprobs);
  CHECK(answer.reasoning_text.empty());
  CHECK(answer.reasoning_tokens.empty());
  CHECK(answer.reasoning_split == ReasoningSplit::separate);

  const Completion reasoning = compared_part(completion, CompareOn::reasoning);
  CHECK(reasoning.text == "\nAdd them.\n");
  CHECK(reasoning.tokens.size() == 8);
  CHECK(reasoning.has_logprobs);

  const Completion both = compared_part(completion, CompareOn::both);
  CHECK(both.text == "<reasoning>\nAdd them.\n</reasoning>4.");
  CHECK(both.tokens.size() == 10);
  CHECK(both.tokens.front().token == "<think>");
  CHECK(both.tokens.back().token == ".");
  CHECK(both.has_logprobs);
}

TEST_CASE("an answer whose first token carries the whitespace after </think> is still cut") {
  // The parser strips the answer; the token " Four" keeps its space.
  Completion completion = streamed({"<think>", "x", "</think>", " Four"}, "Four", "x");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::separate);
  CHECK(token_strings(completion.tokens) == Strings{" Four"});
  CHECK(token_strings(completion.reasoning_tokens) == Strings{"<think>", "x", "</think>"});
}

TEST_CASE("a token that holds the end of the reasoning and the answer's start leaves the stream "
          "joined") {
  Completion completion = streamed({"<think>", "x", "</think>Four"}, "Four", "x");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::joined);
  CHECK(completion.tokens.size() == 3);
  CHECK(completion.reasoning_tokens.empty());
  // Compared on the answer, the joined stream's tokens are never paired with the answer text.
  const Completion answer = compared_part(completion, CompareOn::answer);
  CHECK(answer.text == "Four");
  CHECK(answer.tokens.empty());
  CHECK_FALSE(answer.has_logprobs);
  const Completion reasoning = compared_part(completion, CompareOn::reasoning);
  CHECK(reasoning.text == "x");
  CHECK(reasoning.tokens.empty());
  CHECK_FALSE(reasoning.has_logprobs);
  // Both parts together are what the stream covers: every token, beside both texts.
  const Completion both = compared_part(completion, CompareOn::both);
  CHECK(both.tokens.size() == 3);
  CHECK(both.has_logprobs);
  CHECK(both.text == "<reasoning>x</reasoning>Four");
}

TEST_CASE("a stream that does not end with the answer is joined") {
  Completion completion = streamed({"<think>", "x", "</think>", "Four", "<|im_end|>"}, "Four", "x");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::joined);
  CHECK(completion.tokens.size() == 5);
}

TEST_CASE("logprobs of the answer alone (OpenAI's shape) leave the reasoning to its text") {
  Completion completion = streamed({"Four", "."}, "Four.", "Two and two.");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::separate);
  CHECK(completion.tokens.size() == 2);
  CHECK(completion.reasoning_tokens.empty());
  const Completion reasoning = compared_part(completion, CompareOn::reasoning);
  CHECK(reasoning.text == "Two and two.");
  CHECK(reasoning.tokens.empty());
  CHECK_FALSE(reasoning.has_logprobs);
  // Both parts: the reasoning has no tokens, so both are compared by text, never the answer's
  // tokens beside the reasoning's text.
  const Completion both = compared_part(completion, CompareOn::both);
  CHECK(both.tokens.empty());
  CHECK_FALSE(both.has_logprobs);
  CHECK(both.text == "<reasoning>Two and two.</reasoning>Four.");
  // The answer keeps its tokens.
  CHECK(compared_part(completion, CompareOn::answer).tokens.size() == 2);
}

TEST_CASE("a stream that dropped the reasoning's logprobs keeps none for the reasoning") {
  // sgl-project/sglang#26778: streamed reasoning chunks came with logprobs null, so only the
  // close marker and the answer have tokens.
  Completion completion = streamed({"</think>", "\n\n", "Four"}, "Four", "Two and two.");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::separate);
  CHECK(token_strings(completion.tokens) == Strings{"Four"});
  CHECK(completion.reasoning_tokens.empty());
}

TEST_CASE("reasoning that used every token leaves an empty answer") {
  Completion completion = streamed({"<think>", "Let", " me", " see"}, "", "Let me see");
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::separate);
  CHECK(completion.tokens.empty());
  CHECK(completion.reasoning_tokens.size() == 4);
  CHECK(compared_part(completion, CompareOn::answer).text.empty());
  CHECK(compared_part(completion, CompareOn::both).text == "<reasoning>Let me see</reasoning>");
}

TEST_CASE("reasoning tokens sent apart by the endpoint are kept as sent") {
  Completion completion = streamed({"Four"}, "Four", "x");
  completion.reasoning_tokens = streamed({"x"}, "x", "").tokens;
  separate_reasoning(completion);
  CHECK(completion.reasoning_split == ReasoningSplit::separate);
  CHECK(token_strings(compared_part(completion, CompareOn::both).tokens) == Strings{"x", "Four"});
}

TEST_CASE("candidates of the reasoning's tokens are sorted too") {
  Completion completion;
  TokenLogprob token;
  token.token = "a";
  token.logprob = -2.0;
  token.top = {{"a", -2.0}, {"b", -0.5}};
  completion.reasoning_tokens.push_back(token);
  sort_candidates(completion);
  CHECK(completion.reasoning_tokens[0].top[0].token == "b");
}
