#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/prompt_details.hpp"

using namespace llmrepro::core;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_same_tokens(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].token == b[i].token);
    CHECK(same_bits(a[i].logprob, b[i].logprob));
    REQUIRE(a[i].top.size() == b[i].top.size());
    for (std::size_t k = 0; k < a[i].top.size(); ++k) {
      CHECK(a[i].top[k].token == b[i].top[k].token);
      CHECK(same_bits(a[i].top[k].logprob, b[i].top[k].logprob));
    }
  }
}

PromptAnalysis detailed_prompt(const std::string& id, int variants) {
  PromptAnalysis prompt;
  prompt.id = id;
  prompt.runs = 7;
  prompt.unique_completions = variants;
  for (int v = 0; v < variants; ++v) {
    DistinctCompletion completion;
    completion.text = "caf\u00e9 " + std::to_string(v) + std::string("\0x", 2);
    completion.tokens = {
        {"caf\u00e9", -0.0, {{"caf\u00e9", -0.0}, {"cafe", -1.5}}},
        {" " + std::to_string(v), k_unknown_logprob, {}},
        {"\xff",
         -std::numeric_limits<double>::infinity(),
         {{"\xff", -9999.0}, {"x", std::numeric_limits<double>::denorm_min()}, {"y", 1e-300}}}};
    completion.count = 7 - v;
    completion.count_by_concurrency = {{1, 3 - v}, {64, 4}};
    completion.is_reference = v == 0;
    if (v > 0) {
      completion.divergence = v;
      completion.divergence_kind = v == 1 ? DivergenceKind::token : DivergenceKind::length;
    }
    completion.finish_reasons = {{"", 1}, {"stop", 6 - v}};
    completion.models = {{"m", 7 - v}};
    completion.fingerprints = {{"fp", 2}, {"fq", 5 - v}};
    prompt.completions.push_back(completion);
  }
  prompt.answers = {{"caf\u00e9 0", 5}, {"caf\u00e9 1", 2}};
  prompt.modal.answer = "caf\u00e9 0";
  prompt.modal.count = 5;
  LevelAnalysis serial;
  serial.concurrency = 1;
  serial.answers = {{"caf\u00e9 0", 3}};
  serial.modal.answer = "caf\u00e9 0";
  serial.own_noise = NoiseDistribution({0.5, 0.0, 1e-9});
  LevelAnalysis burst;
  burst.concurrency = 64;
  burst.answers = {{"caf\u00e9 0", 2}, {"caf\u00e9 1", 2}};
  burst.modal.answer = "caf\u00e9 1";
  burst.shift = ShiftTest{"caf\u00e9 0", 3, 3, 2, 4, 0.25};
  prompt.by_concurrency = {serial, burst};
  return prompt;
}

} // namespace

TEST_CASE("PromptDetails keeps a prompt's detail out of memory and gives it back bit for bit") {
  auto created = PromptDetails::create();
  REQUIRE(created);
  PromptDetails& details = **created;
  const PromptAnalysis first = detailed_prompt("first", 3);
  const PromptAnalysis second = detailed_prompt("second", 1);
  PromptAnalysis kept_first = first;
  PromptAnalysis kept_second = second;
  details.keep(kept_first);
  details.keep(kept_second);
  CHECK(details.error());
  CHECK(details.bytes() > 0);

  SUBCASE("a kept prompt is slim: its counts stay, its texts, tokens and samples go") {
    CHECK(kept_first.detail == 0);
    CHECK(kept_second.detail == 1);
    CHECK(kept_first.completions.empty());
    REQUIRE(kept_first.answers.size() == 2);
    CHECK(kept_first.answers[0].first.empty());
    CHECK(kept_first.answers[0].second == 5);
    CHECK(kept_first.modal.answer.empty());
    CHECK(kept_first.modal.count == 5);
    CHECK(kept_first.by_concurrency[0].answers.empty());
    CHECK(kept_first.by_concurrency[0].own_noise.empty());
    REQUIRE(kept_first.by_concurrency[1].shift);
    CHECK(kept_first.by_concurrency[1].shift->answer.empty());
    CHECK(kept_first.by_concurrency[1].shift->p == 0.25);
    CHECK(kept_first.unique_completions == 3);
  }

  SUBCASE("restore gives the prompt back as it was kept, in any order and more than once") {
    for (int pass = 0; pass < 2; ++pass) {
      PromptAnalysis scratch;
      const PromptAnalysis& back_second = detailed(&details, kept_second, scratch);
      CHECK(&back_second == &scratch);
      CHECK(back_second.detail == -1);
      REQUIRE(back_second.completions.size() == 1);
      check_same_tokens(back_second.completions[0].tokens, second.completions[0].tokens);
      PromptAnalysis back = kept_first;
      details.restore(back);
      REQUIRE(back.completions.size() == first.completions.size());
      for (std::size_t i = 0; i < back.completions.size(); ++i) {
        const DistinctCompletion& a = back.completions[i];
        const DistinctCompletion& b = first.completions[i];
        CHECK(a.text == b.text);
        check_same_tokens(a.tokens, b.tokens);
        CHECK(a.count == b.count);
        CHECK(a.count_by_concurrency == b.count_by_concurrency);
        CHECK(a.is_reference == b.is_reference);
        CHECK(a.divergence == b.divergence);
        CHECK(a.divergence_kind == b.divergence_kind);
        CHECK(a.finish_reasons == b.finish_reasons);
        CHECK(a.models == b.models);
        CHECK(a.fingerprints == b.fingerprints);
      }
      CHECK(back.answers == first.answers);
      CHECK(back.modal.answer == first.modal.answer);
      for (std::size_t l = 0; l < back.by_concurrency.size(); ++l) {
        const LevelAnalysis& a = back.by_concurrency[l];
        const LevelAnalysis& b = first.by_concurrency[l];
        CHECK(a.answers == b.answers);
        CHECK(a.modal.answer == b.modal.answer);
        CHECK(a.shift.has_value() == b.shift.has_value());
        if (a.shift) CHECK(a.shift->answer == b.shift->answer);
        CHECK(a.own_noise.sorted() == b.own_noise.sorted());
      }
      CHECK(details.error());
    }
  }

  SUBCASE("a prompt never kept is its own detail") {
    PromptAnalysis scratch;
    CHECK(&detailed(&details, first, scratch) == &first);
    CHECK(&detailed(nullptr, kept_first, scratch) == &kept_first);
  }

  SUBCASE("an entry it does not hold is an error, kept") {
    PromptAnalysis stray = kept_first;
    stray.detail = 9;
    details.restore(stray);
    REQUIRE_FALSE(details.error());
    CHECK(details.error().error().message.find("no entry 9") != std::string::npos);
  }
}
