#include "core/plan.hpp"

#include <algorithm>

#include "core/random.hpp"

namespace llmrepro::core {

namespace {

// Whether shard `config.shard_index` of `config.shard_count` (fewer than 1: one shard) plans the
// prompt at `prompt_index`.
bool in_shard(const PlanConfig& config, std::size_t prompt_index) {
  const auto shard_count = static_cast<std::size_t>(std::max(config.shard_count, 1));
  return static_cast<int>(prompt_index % shard_count) == config.shard_index;
}

// Fisher-Yates over requests[begin, end) with our own generator: std::shuffle's algorithm is
// unspecified.
void shuffle_requests(std::vector<PlannedRequest>& requests, std::size_t begin, std::size_t end,
                      SplitMix64& random) {
  for (std::size_t i = end - begin; i > 1; --i) {
    const auto j = static_cast<std::size_t>(random.below(i));
    std::swap(requests[begin + i - 1], requests[begin + j]);
  }
}

} // namespace

const char* to_string(ProbeKind kind) {
  switch (kind) {
  case ProbeKind::sweep: return "sweep";
  case ProbeKind::mixed: return "mixed";
  case ProbeKind::prefix: return "prefix";
  case ProbeKind::long_prompt: return "long";
  case ProbeKind::mixed_sampling: return "mixed-sampling";
  case ProbeKind::restart: return "restart";
  }
  return "sweep";
}

Result<ProbeKind> parse_probe_kind(const std::string& text) {
  if (text == "sweep") return ProbeKind::sweep;
  if (text == "mixed") return ProbeKind::mixed;
  if (text == "prefix") return ProbeKind::prefix;
  if (text == "long") return ProbeKind::long_prompt;
  if (text == "mixed-sampling") return ProbeKind::mixed_sampling;
  if (text == "restart") return ProbeKind::restart;
  return make_error(ErrorCode::usage,
                    "unknown probe kind '" + text +
                        "' (expected sweep, mixed, mixed-sampling, prefix, long or restart)");
}

bool probe_uses_fillers(ProbeKind kind) {
  return kind == ProbeKind::mixed || kind == ProbeKind::mixed_sampling;
}

bool fillers_sampled(ProbeKind kind) { return kind == ProbeKind::mixed_sampling; }

bool probe_is_serial(ProbeKind kind) {
  return kind == ProbeKind::prefix || kind == ProbeKind::restart;
}

int restart_round_of(int repeat) { return repeat / 2; }

bool restart_request_is_later(int repeat) { return repeat % 2 == 1; }

std::vector<int> deterministic_levels(int max_concurrency) {
  // 8 -> 9 and 32 -> 44 are where SGLang and vLLM were seen to break batch invariance; the
  // powers of two are where split-K and attention tilings step.
  static constexpr int k_levels[] = {1, 2, 8, 9, 16, 32, 44, 64, 128};
  std::vector<int> levels;
  for (const int level : k_levels)
    if (level <= max_concurrency) levels.push_back(level);
  return levels;
}

std::vector<int> adi_levels() { return {1, k_adi_burst}; }

std::vector<ProbeKind> deterministic_probes() {
  return {ProbeKind::sweep, ProbeKind::mixed, ProbeKind::mixed_sampling, ProbeKind::prefix};
}

std::size_t Plan::size() const {
  std::size_t total = 0;
  for (const auto& wave : waves) total += wave.requests.size();
  return total;
}

int planned_repeats(const PlanConfig& config, ProbeKind probe, int level) {
  if (probe_is_serial(probe)) return 2 * config.runs;
  return level == 1 && config.serial_runs ? *config.serial_runs : config.runs;
}

std::size_t planned_request_count(const Suite& suite, const PlanConfig& config) {
  // Every wave plans each of the shard's prompts `repeats` times, whatever its order.
  std::size_t prompts = 0;
  for (std::size_t p = 0; p < suite.prompts.size(); ++p)
    if (in_shard(config, p)) ++prompts;
  std::size_t total = 0;
  for (int endpoint = 0; endpoint < config.endpoints; ++endpoint)
    for (ProbeKind probe : config.probes)
      for (int level : probe_is_serial(probe) ? std::vector<int>{1} : config.levels)
        total += prompts * static_cast<std::size_t>(planned_repeats(config, probe, level));
  return total;
}

Plan make_plan(const Suite& suite, const PlanConfig& config) {
  Plan plan;
  // One generator for the whole plan: the same seed and suite give the same order every time.
  SplitMix64 random(config.seed ^ 0x6C6C6D726570726FULL);
  for (int endpoint = 0; endpoint < config.endpoints; ++endpoint) {
    for (ProbeKind probe : config.probes) {
      const bool serial = probe_is_serial(probe);
      const std::vector<int> levels = serial ? std::vector<int>{1} : config.levels;
      for (int level : levels) {
        const int repeats = planned_repeats(config, probe, level);
        Wave wave{endpoint, level, probe, {}};
        wave.rounds = !serial && level == 1 && config.serial_rounds;
        wave.burst = !serial && level > 1 && config.bursts;
        if (wave.rounds || wave.burst || probe == ProbeKind::restart) {
          // The shard's prompts in one shuffled order.
          std::vector<PlannedRequest> prompts;
          for (std::size_t p = 0; p < suite.prompts.size(); ++p)
            if (in_shard(config, p))
              prompts.push_back({endpoint, static_cast<int>(p), level, probe, 0});
          // The restart probe shuffles each round's prompts afresh; the serial rounds keep one
          // order, so that a prompt's requests are a round apart.
          if (probe != ProbeKind::restart) shuffle_requests(prompts, 0, prompts.size(), random);
          const auto add = [&](const PlannedRequest& prompt, int repeat) {
            PlannedRequest request = prompt;
            request.repeat = repeat;
            wave.requests.push_back(request);
          };
          if (wave.burst) {
            for (const PlannedRequest& prompt : prompts)
              for (int repeat = 0; repeat < repeats; ++repeat) add(prompt, repeat);
          } else {
            for (int repeat = 0; repeat < repeats; ++repeat) {
              const std::size_t begin = wave.requests.size();
              for (const PlannedRequest& prompt : prompts) add(prompt, repeat);
              if (probe == ProbeKind::restart)
                shuffle_requests(wave.requests, begin, wave.requests.size(), random);
            }
          }
          plan.waves.push_back(std::move(wave));
          continue;
        }
        for (std::size_t p = 0; p < suite.prompts.size(); ++p) {
          if (!in_shard(config, p)) continue;
          for (int repeat = 0; repeat < repeats; ++repeat)
            wave.requests.push_back({endpoint, static_cast<int>(p), level, probe, repeat});
        }
        shuffle_requests(wave.requests, 0, wave.requests.size(), random);
        plan.waves.push_back(std::move(wave));
      }
    }
  }
  return plan;
}

bool plan_contains(const PlanConfig& config, std::size_t prompt_count,
                   const PlannedRequest& request) {
  if (request.endpoint_index < 0 || request.endpoint_index >= std::max(config.endpoints, 1))
    return false;
  if (request.prompt_index < 0 || static_cast<std::size_t>(request.prompt_index) >= prompt_count ||
      !in_shard(config, static_cast<std::size_t>(request.prompt_index)))
    return false;
  if (std::find(config.probes.begin(), config.probes.end(), request.probe) == config.probes.end())
    return false;
  const bool serial = probe_is_serial(request.probe);
  const bool level_planned = serial ? request.concurrency == 1
                                    : std::find(config.levels.begin(), config.levels.end(),
                                                request.concurrency) != config.levels.end();
  const int repeats = planned_repeats(config, request.probe, request.concurrency);
  return level_planned && request.repeat >= 0 && request.repeat < repeats;
}

} // namespace llmrepro::core
