#include "core/usage_summary.hpp"

#include <cmath>

#include <algorithm>

namespace llmrepro::core {

long generated_tokens(const Completion& completion) {
  return completion.completion_tokens > 0 ? completion.completion_tokens
                                          : static_cast<long>(completion.tokens.size());
}

void UsageSummary::add(const Completion& completion) {
  ++requests;
  completion_tokens += generated_tokens(completion);
  if (completion.usage.prompt) {
    ++requests_with_prompt_usage;
    prompt_tokens += *completion.usage.prompt;
  }
  if (completion.usage.reasoning) reasoning_tokens += *completion.usage.reasoning;
  if (completion.usage.cached_prompt) {
    ++requests_with_cache_state;
    if (*completion.usage.cached_prompt > 0) ++warm_requests;
  }
}

UsageSummary& UsageSummary::operator+=(const UsageSummary& other) {
  requests += other.requests;
  requests_with_prompt_usage += other.requests_with_prompt_usage;
  prompt_tokens += other.prompt_tokens;
  completion_tokens += other.completion_tokens;
  reasoning_tokens += other.reasoning_tokens;
  requests_with_cache_state += other.requests_with_cache_state;
  warm_requests += other.warm_requests;
  return *this;
}

UsageSummary UsageSummary::priced(const std::optional<Price>& price) const {
  UsageSummary out = *this;
  out.cost.reset();
  if (price)
    out.cost =
        cost_of(*price, static_cast<double>(prompt_tokens), static_cast<double>(completion_tokens));
  return out;
}

void LevelAccount::add(const RequestRecord& record) {
  first_start = std::min(first_start, record.outcome.started_ms);
  last_finish = std::max(last_finish, record.outcome.finished_ms);
  if (!record.outcome.ok) return;
  usage.add(record.outcome.completion);
  latency_sum_ms += static_cast<double>(record.outcome.finished_ms - record.outcome.started_ms);
  latencies_ms.push_back(record.outcome.finished_ms - record.outcome.started_ms);
}

double LevelAccount::tokens_per_second() const {
  const auto wall_ms = last_finish - first_start;
  if (wall_ms <= 0) return 0.0;
  return static_cast<double>(usage.completion_tokens) * 1000.0 / static_cast<double>(wall_ms);
}

double LevelAccount::mean_latency_ms() const {
  return usage.requests > 0 ? latency_sum_ms / usage.requests : 0.0;
}

double LevelAccount::latency_quantile_ms(double q) const {
  if (latencies_ms.empty()) return 0.0;
  std::vector<std::int64_t> sorted = latencies_ms;
  const auto rank = static_cast<std::size_t>(
      std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size())));
  const std::size_t index = rank == 0 ? 0 : rank - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(index),
                   sorted.end());
  return static_cast<double>(sorted[index]);
}

} // namespace llmrepro::core
