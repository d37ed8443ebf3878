#include "engine/batch_engine.hpp"

#include <algorithm>
#include <cmath>

namespace llmrepro::engine {

BatchEngine::BatchEngine(const Model& model, const EngineOptions& options)
    : m_model(model), m_options(options), m_policy(options.batch_invariant),
      m_pool(options.threads), m_prefix_cache(model.config().d_model) {}

void BatchEngine::add(std::shared_ptr<Generation> generation) {
  m_waiting.push_back(std::move(generation));
}

void BatchEngine::admit(std::shared_ptr<Generation> generation) {
  Sequence sequence;
  sequence.tokens = generation->request().prompt;
  sequence.prompt_length = sequence.tokens.size();
  sequence.cache = m_model.make_cache(sequence.prompt_length + generation->request().max_tokens);
  if (m_options.prefix_cache) {
    // At least the last prompt token is always run, since its logits give the first token.
    sequence.computed =
        m_prefix_cache.lookup(sequence.tokens, sequence.prompt_length - 1, sequence.cache);
    generation->set_cached_tokens(sequence.computed);
  }
  sequence.sampler = core::SplitMix64(generation->request().seed);
  sequence.generation = std::move(generation);
  m_active.push_back(std::move(sequence));
}

namespace {

// A token drawn from softmax(logits / temperature) (BatchEngine's "Sampling"), with its
// logprob at temperature 1 taken from the model's greedy choice of the same row.
TokenChoice sampled_choice(const TokenChoice& greedy, const std::vector<float>& logits,
                           double temperature, core::SplitMix64& sampler) {
  const double max = static_cast<double>(*std::max_element(logits.begin(), logits.end()));
  const auto weight = [&](float logit) {
    return std::exp((static_cast<double>(logit) - max) / temperature);
  };
  double total = 0.0;
  for (const float logit : logits) total += weight(logit);
  const double target = sampler.uniform() * total;
  std::size_t token = logits.size() - 1;
  double running = 0.0;
  for (std::size_t j = 0; j < logits.size(); ++j) {
    running += weight(logits[j]);
    if (running > target) {
      token = j;
      break;
    }
  }
  TokenChoice choice = greedy;
  choice.token = static_cast<int>(token);
  // A candidate's own logprob where the token is one; else the same log-softmax from its logit.
  const auto candidate = std::find_if(greedy.top.begin(), greedy.top.end(),
                                      [&](const auto& each) { return each.token == choice.token; });
  const float log_normaliser = logits[static_cast<std::size_t>(greedy.token)] - greedy.logprob;
  choice.logprob =
      candidate != greedy.top.end() ? candidate->logprob : logits[token] - log_normaliser;
  return choice;
}

} // namespace

StepStats BatchEngine::step() {
  StepStats stats;
  std::erase_if(m_active, [&](const Sequence& sequence) {
    if (!sequence.generation->cancelled()) return false;
    sequence.generation->finish("abort");
    ++stats.retired;
    return true;
  });
  while (!m_waiting.empty() && m_active.size() < static_cast<std::size_t>(m_options.max_num_seqs)) {
    std::shared_ptr<Generation> generation = std::move(m_waiting.front());
    m_waiting.pop_front();
    if (generation->cancelled()) {
      generation->finish("abort");
      continue;
    }
    admit(std::move(generation));
    ++stats.admitted;
  }
  if (m_active.empty()) return stats;

  std::vector<StepItem> items;
  for (Sequence& sequence : m_active) {
    std::size_t count = sequence.tokens.size() - sequence.computed;
    if (sequence.computed < sequence.prompt_length && m_options.chunked_prefill > 0)
      count = std::min(count, static_cast<std::size_t>(m_options.chunked_prefill));
    const bool wants_logits = sequence.computed + count == sequence.tokens.size();
    items.push_back({&sequence.tokens, &sequence.cache, sequence.computed, count, wants_logits});
    stats.rows += count;
  }
  stats.sequences = items.size();
  const bool sampling = std::any_of(m_active.begin(), m_active.end(), [](const Sequence& each) {
    return each.generation->request().temperature > 0.0;
  });
  std::vector<std::vector<float>> logits;
  const std::vector<TokenChoice> choices =
      m_model.step(items, m_policy, m_pool, sampling ? &logits : nullptr);

  std::size_t next_choice = 0;
  for (std::size_t i = 0; i < m_active.size(); ++i) {
    Sequence& sequence = m_active[i];
    sequence.computed += items[i].count;
    if (m_options.prefix_cache && !sequence.cached && sequence.computed >= sequence.prompt_length) {
      m_prefix_cache.insert(sequence.tokens, sequence.prompt_length, sequence.cache);
      sequence.cached = true;
    }
    if (!items[i].wants_logits) continue;
    const double temperature = sequence.generation->request().temperature;
    const TokenChoice choice = temperature > 0.0
                                   ? sampled_choice(choices[next_choice], logits[next_choice],
                                                    temperature, sequence.sampler)
                                   : choices[next_choice];
    ++next_choice;
    sequence.generation->push(choice);
    sequence.tokens.push_back(choice.token);
    ++sequence.generated;
    if (sequence.generated >= sequence.generation->request().max_tokens)
      sequence.generation->finish("length");
  }
  const std::size_t before = m_active.size();
  std::erase_if(m_active, [](const Sequence& sequence) {
    return sequence.generated >= sequence.generation->request().max_tokens;
  });
  stats.retired += before - m_active.size();
  return stats;
}

void BatchEngine::abort_all(const std::string& reason) {
  for (auto& generation : m_waiting) generation->finish(reason);
  for (auto& sequence : m_active) sequence.generation->finish(reason);
  m_waiting.clear();
  m_active.clear();
}

} // namespace llmrepro::engine
