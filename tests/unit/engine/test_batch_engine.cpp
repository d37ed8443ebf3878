#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "numerics/float_format.hpp"
#include "engine/batch_engine.hpp"

using namespace llmrepro;
using namespace llmrepro::engine;

namespace {

const Model& shared_model() {
  static const Model model{ModelConfig{}};
  return model;
}

const std::vector<std::string> k_prompts{"The weather in the valley",
                                         "Rice is the main food for",
                                         "A river begins as a small stream",
                                         "The sun is a star,",
                                         "Good bread needs only",
                                         "In the morning the train station is",
                                         "A forest is a busy place,",
                                         "The moon has no light of its own.",
                                         "Bees visit flowers to",
                                         "Music can change the mood of",
                                         "The island is small and green, with",
                                         "A magnet has two poles,",
                                         "Water boils at one hundred degrees",
                                         "The human heart beats",
                                         "Tea is made from the leaves of",
                                         "A large city needs"};

std::shared_ptr<Generation> request(const std::string& prompt, std::size_t max_tokens) {
  return std::make_shared<Generation>(
      GenerationRequest{shared_model().vocabulary().encode(prompt), max_tokens});
}

// Runs the engine until idle; `others` requests join the first one at step `join_step`.
Generation::Snapshot run(const EngineOptions& options, const std::string& prompt, int others,
                         std::size_t join_step = 0) {
  BatchEngine engine(shared_model(), options);
  auto target = request(prompt, 24);
  engine.add(target);
  std::vector<std::shared_ptr<Generation>> rest;
  for (int i = 0; i < others; ++i)
    rest.push_back(request(k_prompts[static_cast<std::size_t>(i + 1) % k_prompts.size()],
                           10 + 3 * static_cast<std::size_t>(i)));
  for (std::size_t step = 0; engine.active() + engine.waiting() > 0 || step <= join_step; ++step) {
    if (step == join_step)
      for (auto& generation : rest) engine.add(generation);
    engine.step();
  }
  return target->wait_finished();
}

bool same_bits(const Generation::Snapshot& a, const Generation::Snapshot& b) {
  if (a.tokens.size() != b.tokens.size()) return false;
  for (std::size_t i = 0; i < a.tokens.size(); ++i) {
    if (a.tokens[i].token != b.tokens[i].token) return false;
    if (numerics::float_bits(a.tokens[i].logprob) != numerics::float_bits(b.tokens[i].logprob))
      return false;
    for (std::size_t c = 0; c < a.tokens[i].top.size(); ++c)
      if (numerics::float_bits(a.tokens[i].top[c].logprob) !=
          numerics::float_bits(b.tokens[i].top[c].logprob))
        return false;
  }
  return true;
}

} // namespace

TEST_CASE("Model::step") {
  const Model& model = shared_model();
  const auto tokens = model.vocabulary().encode("The weather in the valley changes");
  KvCache cache = model.make_cache(tokens.size());
  ThreadPool pool(1);
  std::vector<std::vector<float>> logits;
  const auto choices =
      model.step({{&tokens, &cache, 0, tokens.size(), true}}, KernelPolicy(false), pool, &logits);
  REQUIRE(choices.size() == 1);
  REQUIRE(logits.size() == 1);
  SUBCASE("logits are bf16 values and the choice is their argmax") {
    std::size_t best = 0;
    for (std::size_t j = 0; j < logits[0].size(); ++j) {
      CHECK((numerics::float_bits(logits[0][j]) & 0xFFFFu) == 0u);
      if (logits[0][j] > logits[0][best]) best = j;
    }
    CHECK(choices[0].token == static_cast<int>(best));
  }
  SUBCASE("keys and values in the cache are bf16 values") {
    for (float value : cache.keys[0]) CHECK((numerics::float_bits(value) & 0xFFFFu) == 0u);
  }
  SUBCASE("logprobs are a log_softmax of the logits, ranked") {
    const auto& top = choices[0].top;
    REQUIRE(top.size() == Model::k_top_candidates);
    double total = 0.0;
    for (float logit : logits[0])
      total +=
          std::exp(static_cast<double>(logit - logits[0][static_cast<std::size_t>(top[0].token)]));
    CHECK(top[0].logprob == doctest::Approx(-std::log(total)).epsilon(1e-4));
    for (std::size_t i = 1; i < top.size(); ++i) CHECK(top[i - 1].logprob >= top[i].logprob);
    CHECK(choices[0].logprob == top[0].logprob);
  }
}

TEST_CASE("BatchEngine") {
  EngineOptions options;
  options.max_num_seqs = 4;
  SUBCASE("continuous batching admits up to max_num_seqs and retires finished sequences") {
    BatchEngine engine(shared_model(), options);
    std::vector<std::shared_ptr<Generation>> generations;
    for (std::size_t i = 0; i < 6; ++i) {
      generations.push_back(request(k_prompts[i], 2 + i));
      engine.add(generations.back());
    }
    StepStats first = engine.step();
    CHECK(first.admitted == 4);
    CHECK(engine.active() == 4);
    CHECK(engine.waiting() == 2);
    CHECK(first.sequences == 4);
    StepStats second = engine.step();
    CHECK(second.retired == 1); // the 2-token request
    CHECK(second.rows == 4);    // decode rows only
    StepStats third = engine.step();
    CHECK(third.admitted == 1); // a freed slot is filled between steps
    std::size_t steps = 3;
    while (engine.active() + engine.waiting() > 0) {
      engine.step();
      ++steps;
    }
    CHECK(steps < 20);
    for (std::size_t i = 0; i < 6; ++i) {
      const auto snapshot = generations[i]->wait_finished();
      CHECK(snapshot.tokens.size() == 2 + i);
      CHECK(snapshot.finish_reason == "length");
    }
  }
  SUBCASE("the same batch history repeats bit for bit") {
    CHECK(same_bits(run(options, k_prompts[0], 3, 2), run(options, k_prompts[0], 3, 2)));
  }
  SUBCASE("chunked prefill runs a prompt over several steps") {
    options.chunked_prefill = 2;
    BatchEngine engine(shared_model(), options);
    auto generation = request("A river begins as a small stream high in the hills", 1);
    engine.add(generation);
    std::size_t steps = 0;
    while (engine.active() + engine.waiting() > 0) {
      CHECK(engine.step().rows <= 2);
      ++steps;
    }
    CHECK(steps == 6); // 11 prompt tokens in chunks of 2
  }
}

TEST_CASE("BatchEngine sampling") {
  EngineOptions options;
  options.batch_invariant = true;
  // One request alone until it finishes; its tokens.
  const auto tokens_of = [&options](GenerationRequest generation_request) {
    BatchEngine engine(shared_model(), options);
    auto generation = std::make_shared<Generation>(std::move(generation_request));
    engine.add(generation);
    while (engine.active() + engine.waiting() > 0) engine.step();
    std::vector<int> tokens;
    for (const TokenChoice& choice : generation->wait_finished().tokens)
      tokens.push_back(choice.token);
    return tokens;
  };
  const std::vector<int> prompt = shared_model().vocabulary().encode(k_prompts[2]);
  const std::vector<int> greedy = tokens_of({prompt, 16});
  SUBCASE("a seed names one draw; another seed another, and neither is the greedy path") {
    const std::vector<int> seven = tokens_of({prompt, 16, 1.0, 7});
    CHECK(seven.size() == 16);
    CHECK(seven == tokens_of({prompt, 16, 1.0, 7}));
    CHECK(seven != tokens_of({prompt, 16, 1.0, 8}));
    CHECK(seven != greedy);
  }
  SUBCASE("a sampled token's logprob is its log-softmax at temperature 1") {
    BatchEngine engine(shared_model(), options);
    auto generation = std::make_shared<Generation>(GenerationRequest{prompt, 24, 1.0, 3});
    engine.add(generation);
    while (engine.active() + engine.waiting() > 0) engine.step();
    int off_greedy = 0;
    for (const TokenChoice& choice : generation->wait_finished().tokens) {
      REQUIRE_FALSE(choice.top.empty());
      CHECK(choice.logprob <= choice.top.front().logprob);
      for (const auto& candidate : choice.top)
        if (candidate.token == choice.token) CHECK(candidate.logprob == choice.logprob);
      off_greedy += choice.token != choice.top.front().token ? 1 : 0;
    }
    CHECK(off_greedy > 0);
  }
  SUBCASE("a sampled request beside a greedy one leaves the greedy one greedy") {
    BatchEngine engine(shared_model(), options);
    auto target = std::make_shared<Generation>(GenerationRequest{prompt, 16});
    engine.add(target);
    engine.add(std::make_shared<Generation>(
        GenerationRequest{shared_model().vocabulary().encode(k_prompts[4]), 20, 1.0, 5}));
    while (engine.active() + engine.waiting() > 0) engine.step();
    std::vector<int> tokens;
    for (const TokenChoice& choice : target->wait_finished().tokens) {
      tokens.push_back(choice.token);
      CHECK(choice.token == choice.top.front().token);
    }
    CHECK(tokens == greedy); // batch-invariant: the sampled neighbour changes nothing
  }
}

TEST_CASE("BatchEngine batch invariance") {
  EngineOptions options;
  options.max_num_seqs = 16;
  SUBCASE("batch-invariant mode: identical bits alone and beside 15 others") {
    options.batch_invariant = true;
    for (std::size_t p = 0; p < 4; ++p) {
      const auto alone = run(options, k_prompts[p], 0);
      CHECK(same_bits(alone, run(options, k_prompts[p], 15)));
      CHECK(same_bits(alone, run(options, k_prompts[p], 15, 3)));
    }
  }
  SUBCASE("adaptive mode: the batch changes some bits") {
    std::size_t differing = 0;
    for (std::size_t p = 0; p < 4; ++p)
      differing += !same_bits(run(options, k_prompts[p], 0), run(options, k_prompts[p], 15, 3));
    CHECK(differing > 0);
  }
  SUBCASE("prefix cache: a warm run reuses keys and values") {
    options.prefix_cache = true;
    BatchEngine engine(shared_model(), options);
    const std::string prompt =
        "The old city stands on a river, where a bridge of stone has crossed the water for six "
        "hundred years and more";
    auto cold = request(prompt, 8);
    engine.add(cold);
    while (engine.active() > 0 || engine.waiting() > 0) engine.step();
    auto warm = request(prompt, 8);
    engine.add(warm);
    while (engine.active() > 0 || engine.waiting() > 0) engine.step();
    CHECK(cold->wait_finished().cached_tokens == 0);
    CHECK(warm->wait_finished().cached_tokens == 16);
  }
}
