// The usage accounting: what successful requests used, per level and over an analysis, and its
// cost (docs/design.md "Usage and cost").
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/analysis.hpp"
#include "core/usage_summary.hpp"
#include "tests/support/request_records.hpp"

using namespace llmrepro::core;
using llmrepro::testing::ok_record;

namespace {

// A completion of `generated` tokens whose endpoint reported `prompt` and `reasoning`.
Completion used(long generated, std::optional<long> prompt, std::optional<long> reasoning) {
  Completion completion;
  completion.text = "x";
  completion.completion_tokens = generated;
  completion.usage = TokenUsage{prompt, reasoning};
  return completion;
}

RequestRecord failed_at(int concurrency, int repeat) {
  RequestRecord record;
  record.planned = {0, 0, concurrency, ProbeKind::sweep, repeat};
  record.outcome.error = "HTTP 500";
  record.outcome.http_status = 500;
  return record;
}

Suite two_prompts() {
  Suite suite;
  suite.prompts.push_back(Prompt{.id = "a", .text = "x"});
  suite.prompts.push_back(Prompt{.id = "b", .text = "y"});
  return suite;
}

} // namespace

TEST_CASE("UsageSummary sums what was reported and prices it") {
  UsageSummary usage;
  usage.add(used(10, 100, 4));
  usage.add(used(6, 50, std::nullopt));
  CHECK(usage.requests == 2);
  CHECK(usage.requests_with_prompt_usage == 2);
  CHECK(usage.prompt_tokens == 150);
  CHECK(usage.completion_tokens == 16);
  CHECK(usage.reasoning_tokens == 4);
  CHECK(usage.prompt_usage_complete());
  CHECK_FALSE(usage.cost);
  const UsageSummary priced = usage.priced(Price{2.0, 8.0});
  REQUIRE(priced.cost);
  CHECK(*priced.cost == (150 * 2.0 + 16 * 8.0) / 1e6);
  CHECK_FALSE(priced.priced(std::nullopt).cost);

  SUBCASE("a request without a prompt count: the cost covers what was reported") {
    usage.add(used(5, std::nullopt, std::nullopt));
    CHECK(usage.requests == 3);
    CHECK(usage.requests_with_prompt_usage == 2);
    CHECK(usage.prompt_tokens == 150);
    CHECK(usage.completion_tokens == 21);
    CHECK_FALSE(usage.prompt_usage_complete());
    CHECK(*usage.priced(Price{2.0, 8.0}).cost == (150 * 2.0 + 21 * 8.0) / 1e6);
  }
  SUBCASE("no completion_tokens reported: the tokens that came back count") {
    Completion counted = used(0, 1, std::nullopt);
    counted.tokens.resize(3);
    UsageSummary one;
    one.add(counted);
    CHECK(one.completion_tokens == 3);
  }
}

TEST_CASE("analyse: usage per level and overall, failed requests left out") {
  // Level 1: a (100 in, 10 out, 4 reasoning) twice, b (40 in, 3 out) twice.
  // Level 4: a twice as at level 1, b once with no prompt count and once failed.
  std::vector<RequestRecord> records;
  for (int repeat = 0; repeat < 2; ++repeat) {
    records.push_back(ok_record(0, 1, repeat, used(10, 100, 4)));
    records.push_back(ok_record(1, 1, repeat, used(3, 40, std::nullopt)));
    records.push_back(ok_record(0, 4, repeat, used(10, 100, 4)));
  }
  records.push_back(ok_record(1, 4, 0, used(3, std::nullopt, std::nullopt)));
  RequestRecord failed = failed_at(4, 1);
  failed.planned.prompt_index = 1;
  records.push_back(failed);

  AnalysisConfig config;
  config.price = Price{2.0, 8.0};
  const AuditAnalysis analysis = analyse(two_prompts(), records, config);
  REQUIRE(analysis.summary.by_concurrency.size() == 2);
  const UsageSummary& serial = analysis.summary.by_concurrency[0].usage;
  CHECK(serial.requests == 4);
  CHECK(serial.requests_with_prompt_usage == 4);
  CHECK(serial.prompt_tokens == 280);
  CHECK(serial.completion_tokens == 26);
  CHECK(serial.reasoning_tokens == 8);
  CHECK(serial.cost == (280 * 2.0 + 26 * 8.0) / 1e6);
  const UsageSummary& four = analysis.summary.by_concurrency[1].usage;
  CHECK(four.requests == 3);
  CHECK(four.requests_with_prompt_usage == 2);
  CHECK(four.prompt_tokens == 200);
  CHECK(four.completion_tokens == 23);
  CHECK(four.reasoning_tokens == 8);
  CHECK_FALSE(four.prompt_usage_complete());
  const UsageSummary& total = analysis.summary.usage;
  CHECK(total.requests == 7);
  CHECK(total.requests_with_prompt_usage == 6);
  CHECK(total.prompt_tokens == 480);
  CHECK(total.completion_tokens == 49);
  CHECK(total.reasoning_tokens == 16);
  CHECK(total.cost == (480 * 2.0 + 49 * 8.0) / 1e6);

  SUBCASE("without a price every cost is empty") {
    const AuditAnalysis unpriced = analyse(two_prompts(), records, AnalysisConfig{});
    CHECK_FALSE(unpriced.summary.usage.cost);
    CHECK_FALSE(unpriced.summary.by_concurrency[0].usage.cost);
    CHECK(unpriced.summary.usage.prompt_tokens == 480);
  }
  SUBCASE("one probe's analysis counts that probe's requests only") {
    std::vector<RequestRecord> mixed = records;
    mixed.push_back(ok_record(0, 1, 5, used(9, 1000, std::nullopt), ProbeKind::prefix));
    const AuditAnalysis sweep = analyse(two_prompts(), mixed, config, 0, ProbeKind::sweep);
    CHECK(sweep.summary.usage.prompt_tokens == 480);
    const AuditAnalysis prefix = analyse(two_prompts(), mixed, config, 0, ProbeKind::prefix);
    CHECK(prefix.summary.usage.prompt_tokens == 1000);
    CHECK(prefix.summary.usage.completion_tokens == 9);
  }
}

TEST_CASE("LevelAccount: throughput, mean and nearest-rank latency quantiles") {
  // Five successful requests of 10, 20, 30, 40 and 100 ms and one failed one, all within the
  // level's wall time of 1000 to 1400 ms; 10 tokens each.
  LevelAccount account;
  const int latencies[] = {30, 10, 100, 40, 20};
  for (int i = 0; i < 5; ++i) {
    RequestRecord record = ok_record(0, 4, i, used(10, 5, std::nullopt));
    record.outcome.started_ms = 1000 + 50 * i;
    record.outcome.finished_ms = record.outcome.started_ms + latencies[i];
    account.add(record);
  }
  RequestRecord failed = failed_at(4, 5);
  failed.outcome.started_ms = 1100;
  failed.outcome.finished_ms = 1400;
  account.add(failed);
  CHECK(account.tokens_per_second() == doctest::Approx(50 * 1000.0 / 400.0));
  CHECK(account.mean_latency_ms() == doctest::Approx(40.0));
  CHECK(account.latency_quantile_ms(0.5) == 30.0);   // rank ceil(2.5) = 3
  CHECK(account.latency_quantile_ms(0.95) == 100.0); // rank ceil(4.75) = 5
  CHECK(account.latency_quantile_ms(0.0) == 10.0);
  CHECK(account.latency_quantile_ms(0.2) == 10.0); // rank 1
  CHECK(account.latency_quantile_ms(0.21) == 20.0);
  CHECK(LevelAccount{}.latency_quantile_ms(0.5) == 0.0);
}
