// Private to probes: the mixed probe's filler traffic, the unrelated requests kept in flight
// beside a wave's audited ones so that those share their batches the way production traffic does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

#include "core/audit.hpp"
#include "core/budget.hpp"
#include "core/probe_text.hpp"
#include "probes/http_transport.hpp"
#include "probes/scheduler.hpp"

namespace llmrepro::probes::detail {

// The max_tokens of filler number `index`: core::filler_max_tokens, capped at --stop-after.
int filler_max_tokens(const SchedulerConfig& config, std::uint64_t index);

// Filler number `index` as it is sent to `target`: core::filler_prompt with filler_max_tokens,
// cut to fit the target's context per slot (core::sized_filler).
core::SizedPrompt sized_filler(const EndpointTarget& target, const SchedulerConfig& config,
                               std::uint64_t index);

// The seed of sampled filler number `index`: the run's seed plus 1 + index (mod 2^64), so that
// no two fillers of a run draw the same tokens by construction.
std::uint64_t filler_seed(const SchedulerConfig& config, std::uint64_t index);

// The request of filler number `index` (sized_filler), never streamed; `sampled` (the
// mixed-sampling probe's): sampling on, with filler_seed.
HttpRequest filler_request(const EndpointTarget& target, const SchedulerConfig& config,
                           std::uint64_t index, bool sampled = false);

// Whether a filler's answer is a refusal of the filler itself, which a retry would meet again:
// a 4xx other than 408, 425 and 429.
bool filler_refused(const HttpResponse& response);

// The filler requests of one run. Fillers are never recorded, retried or judged: they are only
// counted, per endpoint, in core::ProbeActivity. Their numbering runs across the whole run.
class FillerTraffic {
public:
  explicit FillerTraffic(const SchedulerConfig& config) : m_config(config) {}

  // Submits fillers to `target` until `count` are in flight, counting each as sent, overall and
  // at `level` (core::FillerLevel of `sampled` fillers, with those shortened to fit); `sampled`
  // (the mixed-sampling probe's) sends them with sampling on (filler_request). Where a filler
  // cannot fit the target's context per slot (then none can: one word and one token do not),
  // `level` is marked unfit and nothing is sent. With a `budget`, each filler must fit it first
  // (its bound: prompt_token_bound of its prompt and its max_tokens); the first that does not ends
  // the topping up.
  void top_up(HttpTransport& transport, const EndpointTarget& target, std::size_t count, int level,
              bool sampled, core::ProbeActivity& activity, core::BudgetLedger* budget);

  // Whether `finished` is a filler; if so it is forgotten, and counted as failed unless it
  // answered 2xx, and as refused at its level where filler_refused (the first refusal kept in
  // words). Its response is never parsed, so the budget spends its whole bound.
  bool take(const HttpTransport::Finished& finished, core::ProbeActivity& activity,
            core::BudgetLedger* budget);

  // Whether no filler is in flight.
  bool empty() const { return m_in_flight.empty(); }

private:
  const SchedulerConfig& m_config;
  std::uint64_t m_next_index = 0;
  struct InFlight {
    std::optional<core::BudgetLedger::Ticket> ticket; // where a budget is kept
    int level = 1;
    bool sampled = false;
  };
  std::map<HttpTransport::RequestId, InFlight> m_in_flight;
};

} // namespace llmrepro::probes::detail
