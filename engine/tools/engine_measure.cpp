// engine-measure: drives the reference engine in-process the way an audit drives it over HTTP
// (each prompt N times, a shuffled queue, c requests kept in flight) and prints how many
// prompts give more than one completion, where they diverge, how many are fragile, and the
// throughput. Used to tune the model and to state the figures the engine shows.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis_config.hpp"
#include "core/random.hpp"
#include "engine/batch_engine.hpp"

using namespace llmrepro;

namespace {

struct Options {
  std::string suite = "examples/suites/engine-demo.jsonl";
  int runs = 5;
  std::vector<int> levels{1, 16};
  engine::EngineOptions engine;
  engine::ModelConfig model;
  std::size_t max_tokens = 64;
  float tau = static_cast<float>(core::k_default_fragile_gap);
  bool show = false;
  std::uint64_t jitter = 3;
};

struct Outcome {
  std::vector<int> tokens;
  std::vector<float> gaps;
};

std::vector<int> parse_levels(const std::string& text) {
  std::vector<int> levels;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    levels.push_back(std::stoi(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return levels;
}

// Runs every prompt `runs` times with `concurrency` requests in flight; the queue is shuffled
// with a fixed seed. Returns outcomes per prompt and the generated tokens per second.
std::vector<std::vector<Outcome>> run_level(const engine::Model& model, const Options& options,
                                            const std::vector<std::vector<int>>& prompts,
                                            int concurrency, double& tokens_per_second) {
  std::vector<std::size_t> queue;
  for (int r = 0; r < options.runs; ++r)
    for (std::size_t p = 0; p < prompts.size(); ++p) queue.push_back(p);
  core::SplitMix64 rng(7);
  for (std::size_t i = queue.size(); i > 1; --i) std::swap(queue[i - 1], queue[rng.below(i)]);

  engine::BatchEngine batch(model, options.engine);
  std::vector<std::vector<Outcome>> outcomes(prompts.size());
  std::vector<std::pair<std::size_t, std::shared_ptr<engine::Generation>>> in_flight;
  // Requests reach the engine a few steps after the client sends them, as over a network, so
  // that in-flight requests do not march in lockstep.
  std::vector<std::pair<std::size_t, std::shared_ptr<engine::Generation>>> arriving;
  std::size_t step = 0;
  std::size_t next = 0;
  std::size_t generated = 0;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    while (in_flight.size() < static_cast<std::size_t>(concurrency) && next < queue.size()) {
      auto generation = std::make_shared<engine::Generation>(
          engine::GenerationRequest{prompts[queue[next]], options.max_tokens});
      arriving.emplace_back(step + rng.below(options.jitter + 1), generation);
      in_flight.emplace_back(queue[next], generation);
      ++next;
    }
    if (in_flight.empty()) break;
    std::erase_if(arriving, [&](auto& entry) {
      if (entry.first > step) return false;
      batch.add(entry.second);
      return true;
    });
    batch.step();
    ++step;
    std::erase_if(in_flight, [&](auto& entry) {
      if (!entry.second->finished()) return false;
      const auto snapshot = entry.second->wait_finished();
      Outcome outcome;
      for (const auto& choice : snapshot.tokens) {
        outcome.tokens.push_back(choice.token);
        outcome.gaps.push_back(choice.top[0].logprob - choice.top[1].logprob);
      }
      generated += outcome.tokens.size();
      outcomes[entry.first].push_back(std::move(outcome));
      return true;
    });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  tokens_per_second = static_cast<double>(generated) / seconds;
  return outcomes;
}

void report(const engine::Model& model, const Options& options, int level,
            const std::vector<std::vector<Outcome>>& outcomes, double tokens_per_second) {
  std::size_t unstable = 0, fragile = 0, both = 0;
  std::vector<std::size_t> positions;
  std::size_t near_ties = 0, tokens = 0;
  for (std::size_t p = 0; p < outcomes.size(); ++p) {
    std::map<std::vector<int>, int> counts;
    for (const auto& outcome : outcomes[p]) ++counts[outcome.tokens];
    const auto modal = std::max_element(counts.begin(), counts.end(),
                                        [](auto& a, auto& b) { return a.second < b.second; });
    const Outcome* reference = nullptr;
    for (const auto& outcome : outcomes[p])
      if (outcome.tokens == modal->first) reference = &outcome;
    float min_gap = 1e9f;
    for (std::size_t i = 0; i < std::min<std::size_t>(50, reference->gaps.size()); ++i)
      min_gap = std::min(min_gap, reference->gaps[i]);
    for (float gap : reference->gaps) {
      ++tokens;
      if (gap < options.tau) ++near_ties;
    }
    const bool is_fragile = min_gap < options.tau;
    const bool is_unstable = counts.size() > 1;
    fragile += is_fragile;
    unstable += is_unstable;
    both += is_fragile && is_unstable;
    if (is_unstable) {
      std::size_t first = reference->tokens.size();
      for (const auto& outcome : outcomes[p]) {
        if (outcome.tokens == reference->tokens) continue;
        std::size_t i = 0;
        while (i < outcome.tokens.size() && outcome.tokens[i] == reference->tokens[i]) ++i;
        first = std::min(first, i);
      }
      positions.push_back(first);
    }
    if (options.show && level == options.levels.front() && p < 6) {
      std::string text;
      for (int token : reference->tokens) text += model.vocabulary().token_text(token);
      std::printf("  [%zu]%s\n", p, text.c_str());
    }
  }
  std::sort(positions.begin(), positions.end());
  std::printf("concurrency %d: %zu/%zu prompts unstable (%.0f%%), fragile %zu, recall %.2f, "
              "near-tie tokens %.1f%%, %.0f tokens/s\n",
              level, unstable, outcomes.size(),
              100.0 * static_cast<double>(unstable) / static_cast<double>(outcomes.size()), fragile,
              unstable == 0 ? 1.0 : static_cast<double>(both) / static_cast<double>(unstable),
              100.0 * static_cast<double>(near_ties) / static_cast<double>(tokens),
              tokens_per_second);
  if (!positions.empty()) {
    std::printf("  first divergence positions:");
    for (std::size_t position : positions) std::printf(" %zu", position);
    std::printf("\n");
  }
}

} // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "engine-measure: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--suite")
      options.suite = value();
    else if (arg == "--runs")
      options.runs = std::stoi(value());
    else if (arg == "--levels")
      options.levels = parse_levels(value());
    else if (arg == "--max-tokens")
      options.max_tokens = std::stoul(value());
    else if (arg == "--max-num-seqs")
      options.engine.max_num_seqs = std::stoi(value());
    else if (arg == "--batch-invariant")
      options.engine.batch_invariant = true;
    else if (arg == "--prefix-cache")
      options.engine.prefix_cache = true;
    else if (arg == "--chunked-prefill")
      options.engine.chunked_prefill = std::stoi(value());
    else if (arg == "--threads")
      options.engine.threads = std::stoi(value());
    else if (arg == "--seed")
      options.model.seed = std::stoull(value());
    else if (arg == "--output-scale")
      options.model.output_scale = std::stof(value());
    else if (arg == "--prior-scale")
      options.model.prior_scale = std::stof(value());
    else if (arg == "--repeat-penalty")
      options.model.repeat_penalty = std::stof(value());
    else if (arg == "--show")
      options.show = true;
    else if (arg == "--layer-gain")
      options.model.layer_gain = std::stof(value());
    else if (arg == "--sharpness")
      options.model.attention_sharpness = std::stof(value());
    else if (arg == "--layers")
      options.model.n_layers = std::stoul(value());
    else if (arg == "--jitter")
      options.jitter = std::stoull(value());
    else if (arg == "--unseen-penalty")
      options.model.unseen_penalty = std::stof(value());
    else {
      std::fprintf(stderr, "engine-measure: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  const engine::Model model(options.model);
  std::vector<std::vector<int>> prompts;
  std::ifstream in(options.suite);
  if (!in) {
    std::fprintf(stderr, "engine-measure: cannot open %s\n", options.suite.c_str());
    return 2;
  }
  std::string line;
  std::size_t unknown = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      const auto prompt = nlohmann::json::parse(line).at("prompt").get<std::string>();
      prompts.push_back(model.vocabulary().encode(prompt));
      unknown += static_cast<std::size_t>(
          std::count(prompts.back().begin(), prompts.back().end(), engine::Vocabulary::k_unk));
    } catch (const nlohmann::json::exception& error) {
      std::fprintf(stderr, "engine-measure: %s: %s\n", options.suite.c_str(), error.what());
      return 2;
    }
  }
  std::printf("vocabulary %zu tokens, %zu prompts (%zu unknown words), %d runs, %zu tokens each\n",
              model.vocabulary().size(), prompts.size(), unknown, options.runs, options.max_tokens);
  for (int level : options.levels) {
    double tokens_per_second = 0.0;
    const auto outcomes = run_level(model, options, prompts, level, tokens_per_second);
    report(model, options, level, outcomes, tokens_per_second);
  }
  return 0;
}
