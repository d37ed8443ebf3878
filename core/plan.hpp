// The plan: which requests an audit sends, in which waves, in which shuffled order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// mixed_sampling: the mixed probe's greedy requests beside fillers sent with sampling on
// (probe_uses_fillers, fillers_sampled). restart: the first requests after the restart command
// (--restart-cmd) against later ones (restart_request_is_later).
enum class ProbeKind { sweep, mixed, prefix, long_prompt, mixed_sampling, restart };

const char* to_string(ProbeKind kind);
Result<ProbeKind> parse_probe_kind(const std::string& text);

// Whether waves of `kind` keep filler requests in flight beside their audited ones: mixed and
// mixed_sampling.
bool probe_uses_fillers(ProbeKind kind);

// Whether the fillers of `kind` are sent with sampling on (temperature 1, top_p 1, a seed per
// filler): mixed_sampling only. Their completions are never judged either way.
bool fillers_sampled(ProbeKind kind);

// Whether waves of `kind` run one request at a time at level 1 whatever the levels, with two
// requests per prompt and run (2 x runs repeats, paired by repeat / 2): prefix and restart.
bool probe_is_serial(ProbeKind kind);

// Restart probe: repeat r belongs to round r / 2, which starts with the restart command; even
// repeats are each prompt's first request after that restart, odd ones its later request, sent
// once every prompt's first has been.
int restart_round_of(int repeat);
bool restart_request_is_later(int repeat);

// One logical request of the plan. Its identity (endpoint, prompt, concurrency, probe, repeat)
// is unique within an audit, which is what lets --resume run exactly what is missing.
struct PlannedRequest {
  int endpoint_index = 0;
  int prompt_index = 0;
  int concurrency = 1;
  ProbeKind probe = ProbeKind::sweep;
  int repeat = 0;

  friend bool operator==(const PlannedRequest&, const PlannedRequest&) = default;
};

// All requests of one endpoint at one concurrency level and probe kind; the scheduler keeps
// exactly `concurrency` of them in flight.
struct Wave {
  int endpoint_index = 0;
  int concurrency = 1;
  ProbeKind probe = ProbeKind::sweep;
  std::vector<PlannedRequest> requests; // already shuffled
  // Bursts (--profile adi, levels above 1): the requests come prompt by prompt, and a prompt's
  // requests start only once the previous prompt's have all ended, so that each prompt's runs
  // are in flight together and with nothing else.
  bool burst = false;
  // Rounds (--profile adi, level 1): every prompt's repeat 0, then every prompt's repeat 1, ...,
  // the prompts in the same order in each round, so that a prompt's serial requests are spaced
  // by a round (and by --serial-spacing at least, which the scheduler holds).
  bool rounds = false;
};

// The concurrency levels of `--profile deterministic`: the batch sizes at which GPU kernels are
// known to change their reduction order or tiling (1, 2, 8, 9, 16, 32, 44, 64, 128), keeping
// those at most `max_concurrency`. Empty when max_concurrency < 1.
std::vector<int> deterministic_levels(int max_concurrency);

// The probe kinds of `--profile deterministic`: sweep, mixed (filler traffic), mixed_sampling
// (sampled filler traffic) and prefix (cold after a flush, warm after priming).
std::vector<ProbeKind> deterministic_probes();

// The public agent-determinism leaderboard's protocol (--profile adi): per prompt a burst of
// k_adi_burst concurrent requests and k_adi_serial_runs serial ones k_adi_serial_spacing_s apart.
inline constexpr int k_adi_burst = 10;
inline constexpr int k_adi_serial_runs = 3;
inline constexpr double k_adi_serial_spacing_s = 60.0;
// Its levels: 1 (the serial requests) and the burst.
std::vector<int> adi_levels();

struct PlanConfig {
  int endpoints = 1;
  std::vector<int> levels{1, 8, 32};
  std::vector<ProbeKind> probes{ProbeKind::sweep};
  int runs = 5;
  std::optional<int> serial_runs; // runs at level 1 where they differ from `runs`
  bool bursts = false;            // waves above level 1 are bursts (Wave::burst)
  bool serial_rounds = false;     // level-1 waves run in rounds (Wave::rounds)
  std::uint64_t seed = 0;
  // Shard i of n (0-based i): only prompts whose index % n == i are planned.
  int shard_index = 0;
  int shard_count = 1;
};

struct Plan {
  std::vector<Wave> waves;
  std::size_t size() const;
};

// Builds the plan: for each endpoint, probe kind and level in order, every prompt's repeats
// shuffled together so that batches mix prompts the way production traffic does.
// The prefix probe is serial by design (warm against cold at concurrency 1, whatever the
// levels): one wave at level 1 with 2 x runs repeats per prompt, even repeats cold and odd ones
// warm (prefix_trial_is_warm), so each prompt has `runs` trials of each.
// The restart probe is serial too, but its wave keeps the rounds in order: round k's first
// requests (repeat 2k, every prompt), then its later ones (2k + 1), each half shuffled, so that
// the scheduler restarts once per round before the round's first request.
// With `serial_runs`, level 1 plans that many repeats instead of `runs`; with `serial_rounds` its
// wave keeps rounds (every prompt's repeat 0, then repeat 1, ..., one shuffled prompt order for
// every round) and with `bursts` each wave above level 1 lists the prompts' repeats prompt by
// prompt, in a shuffled prompt order (--profile adi, docs/design.md "The adi profile").
Plan make_plan(const Suite& suite, const PlanConfig& config);

// make_plan(suite, config).size(), counted without building the plan (a report asks it at the
// peak of its memory, and the plan of 40,000 requests takes 2 MB).
std::size_t planned_request_count(const Suite& suite, const PlanConfig& config);

// The repeats make_plan plans for each prompt in a wave of `probe` at `level`: 2 x runs for the
// serial probes, serial_runs at level 1 where set, else runs.
int planned_repeats(const PlanConfig& config, ProbeKind probe, int level);

// Whether `request` is one of the requests make_plan builds for a suite of `prompt_count`
// prompts under `config`: its endpoint, prompt (in the shard), probe kind, level and repeat all
// planned. What a stored record is checked against, so that a record outside the plan never
// stands in for a planned one.
bool plan_contains(const PlanConfig& config, std::size_t prompt_count,
                   const PlannedRequest& request);

} // namespace llmrepro::core
