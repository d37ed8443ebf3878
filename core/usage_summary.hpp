// What an audit's requests used, as the endpoint reported it, and what that costs: summed per
// concurrency level and over a whole analysis (docs/design.md "Usage and cost").
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/completion.hpp"
#include "core/cost.hpp"
#include "core/request_record.hpp"

namespace llmrepro::core {

// The tokens `completion` generated: completion_tokens as the endpoint reported it, or the
// number of tokens that came back where it reported none (0). Reasoning tokens are within it.
long generated_tokens(const Completion& completion);

// The tokens of a set of successful requests and their cost.
struct UsageSummary {
  int requests = 0;                   // successful requests summed
  int requests_with_prompt_usage = 0; // of them, those whose endpoint said the prompt's tokens
  long prompt_tokens = 0;             // over requests_with_prompt_usage only
  long completion_tokens = 0;         // generated_tokens() over every request, reasoning within
  long reasoning_tokens = 0;          // over the requests that reported their reasoning's tokens
  // cost_of(price, prompt_tokens, completion_tokens) when a price is set, else empty. Where
  // requests_with_prompt_usage < requests the prompts that went unreported cost nothing here:
  // the cost is a lower bound (prompt_usage_complete() says so).
  std::optional<double> cost;
  // After the cost, so that positional initialisers keep their meaning. Of the requests summed,
  // those whose endpoint said how much of their prompt its prompt cache served
  // (TokenUsage::cached_prompt), and of those the warm ones: some of it, more than 0.
  int requests_with_cache_state = 0;
  int warm_requests = 0;

  // Adds one successful request's completion (cost is left to priced()).
  void add(const Completion& completion);
  UsageSummary& operator+=(const UsageSummary& other);
  // Whether every request summed reported its prompt's tokens (true when there are none).
  bool prompt_usage_complete() const { return requests_with_prompt_usage == requests; }
  // This summary with `cost` set from `price`, or cleared without one.
  UsageSummary priced(const std::optional<Price>& price) const;
  friend bool operator==(const UsageSummary&, const UsageSummary&) = default;
};

// One concurrency level's running account: its usage and what it took in time. Fed every record
// of the level, failed ones counting for the wall time only.
struct LevelAccount {
  std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_finish = std::numeric_limits<std::int64_t>::min();
  double latency_sum_ms = 0.0;            // over successful requests
  std::vector<std::int64_t> latencies_ms; // each successful request's, for the quantiles
  UsageSummary usage;

  void add(const RequestRecord& record);
  // Generated tokens per second of wall time from the level's first start to its last finish;
  // 0 when that time is not positive.
  double tokens_per_second() const;
  // The mean latency of the successful requests; 0 without any.
  double mean_latency_ms() const;
  // The latency at quantile q (0..1) of the successful requests, by nearest rank (the smallest
  // latency at least q of them do not exceed); 0 without any.
  double latency_quantile_ms(double q) const;
};

} // namespace llmrepro::core
