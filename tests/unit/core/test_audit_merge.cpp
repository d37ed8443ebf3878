#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/audit_merge.hpp"

using namespace llmrepro::core;

namespace {

// Shard `index` of `count` over a 5-prompt suite, with one record per prompt it owns.
AuditData shard(int index, int count, const std::string& status = "complete") {
  AuditData data;
  data.info.id = "audit-" + std::to_string(index);
  data.info.started_ms = 1000 + index;
  data.info.finished_ms = 2000 + index;
  data.info.status = status;
  data.config.plan.runs = 2;
  data.config.plan.shard_index = index;
  data.config.plan.shard_count = count;
  data.endpoints = {EndpointInfo{
      .url = "http://host" + std::to_string(index), .dialect = "openai-chat", .model = "m"}};
  for (int p = 0; p < 5; ++p)
    data.suite.prompts.push_back(
        Prompt{.id = "p" + std::to_string(p), .text = "text " + std::to_string(p)});
  for (int p = index; p < 5; p += count) {
    RequestRecord record;
    record.planned.prompt_index = p;
    record.outcome.ok = true;
    record.outcome.completion.text = "answer " + std::to_string(p);
    data.records.push_back(record);
  }
  return data;
}

std::string message_of(const Result<AuditData>& result) {
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::usage);
  return result.error().message;
}

} // namespace

TEST_CASE("merge_shards") {
  SUBCASE("every shard: unsharded configuration, all records, complete") {
    auto merged = merge_shards({shard(2, 3), shard(0, 3), shard(1, 3)});
    REQUIRE(merged);
    CHECK(merged->config.plan.shard_index == 0);
    CHECK(merged->config.plan.shard_count == 1);
    CHECK(merged->config.plan.runs == 2);
    CHECK(merged->info.status == "complete");
    CHECK(merged->info.started_ms == 1000);
    CHECK(merged->info.finished_ms == 2002);
    CHECK(merged->errors.empty());
    REQUIRE(merged->records.size() == 5);
    // Shards in index order, each in its recorded order.
    const int expected[] = {0, 3, 1, 4, 2};
    for (std::size_t i = 0; i < 5; ++i)
      CHECK(merged->records[i].planned.prompt_index == expected[i]);
    REQUIRE(merged->endpoints.size() == 1);
    CHECK(merged->endpoints[0].url == "http://host0, http://host1, http://host2");
    CHECK(merged->suite.prompts.size() == 5);
  }
  SUBCASE("a missing shard: partial, with an error naming it") {
    auto merged = merge_shards({shard(0, 3), shard(2, 3)});
    REQUIRE(merged);
    CHECK(merged->info.status == "partial");
    REQUIRE(merged->errors.size() == 1);
    CHECK(merged->errors[0] == "merge: shard 2/3 is missing; its prompts were not audited");
    CHECK(merged->records.size() == 3);
  }
  SUBCASE("a partial shard makes the merge partial") {
    auto merged = merge_shards({shard(0, 2), shard(1, 2, "partial")});
    REQUIRE(merged);
    CHECK(merged->info.status == "partial");
  }
  SUBCASE("overlapping shards are refused") {
    CHECK(message_of(merge_shards({shard(0, 2), shard(1, 2), shard(1, 2)})) ==
          "merge: shard 2/2 is given twice: shards overlap");
  }
  SUBCASE("a different configuration is refused, naming the field") {
    AuditData other = shard(1, 2);
    other.config.plan.seed = 9;
    CHECK(message_of(merge_shards({shard(0, 2), other})) ==
          "merge: shard 2/2 (audit-1) and shard 1/2 (audit-0) differ in --seed: 9 vs 0: they are "
          "not shards of one audit");
    AuditData counted = shard(1, 3);
    CHECK(message_of(merge_shards({shard(0, 2), counted}))
              .find("differ in --shard (count): 3 vs "
                    "2:") != std::string::npos);
    AuditData gated = shard(1, 2);
    gated.config.gates.min_tara = 0.5;
    CHECK(message_of(merge_shards({shard(0, 2), gated})).find("--min-tara: 0.5 vs none") !=
          std::string::npos);
  }
  SUBCASE("every plan-defining flag is compared, naming both values") {
    // Each field changed alone in shard 2/2; the message names the flag and both values.
    const auto difference = [](auto change) {
      AuditData first = shard(0, 2);
      first.config.plan.engine = EngineSettings{};
      AuditData other = shard(1, 2);
      other.config.plan.engine = EngineSettings{};
      change(other.config);
      const std::string message = message_of(merge_shards({first, other}));
      const std::string head = "merge: shard 2/2 (audit-1) and shard 1/2 (audit-0) differ in ";
      REQUIRE(message.rfind(head, 0) == 0);
      return message.substr(head.size());
    };
    const std::string tail = ": they are not shards of one audit";
    CHECK(difference([](AuditConfig& c) { c.plan.stop_after = 16; }) ==
          "--stop-after: 16 vs none" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.api = "llamacpp"; }) ==
          "--api: llamacpp vs auto" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.model = "m2"; }) == "--model: m2 vs none" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.runs = 3; }) == "--runs: 3 vs 2" + tail);
    CHECK(difference([](AuditConfig& c) {
            c.plan.levels = {1, 4};
          }) == "--concurrency: 1,4 vs 1,8,32" + tail);
    CHECK(difference([](AuditConfig& c) {
            c.plan.probes = {ProbeKind::sweep, ProbeKind::mixed};
          }) == "--probe: sweep,mixed vs sweep" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.max_tokens = 64; }) ==
          "--max-tokens: 64 vs 128" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.top_logprobs = 5; }) ==
          "--top-logprobs: 5 vs 2" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.stream = true; }) == "--stream: on vs off" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.logprobs_form = "together"; }) ==
          "--logprobs-form: together vs auto" + tail);
    CHECK(difference([](AuditConfig& c) { c.plan.profile = AuditProfile::deterministic; }) ==
          "--profile: deterministic vs standard" + tail);
    CHECK(difference([](AuditConfig& c) { c.adaptive.enabled = true; }) ==
          "--adaptive: on vs off" + tail);
    CHECK(difference([](AuditConfig& c) { c.adaptive.initial = 4; }) ==
          "--adaptive-initial: 4 vs 2" + tail);
    CHECK(difference([](AuditConfig& c) { c.adaptive.epsilon = 0.05; }) ==
          "--adaptive-epsilon: 0.05 vs 0.01" + tail);
    CHECK(difference([](AuditConfig& c) {
            c.adaptive.assume = AdaptiveAssumption::greedy_shared_noise;
          }) == "--adaptive-assume: greedy-shared-noise vs none" + tail);
    CHECK(difference([](AuditConfig& c) {
            c.plan.engine = EngineSettings{4, false, false, 7};
          }) == "--engine-*: max-num-seqs 4, batch-invariant off, prefix-cache off, seed 7 vs "
                "max-num-seqs 16, batch-invariant off, prefix-cache off, seed 0" +
                    tail);
    // Budgets are each shard's own: not compared.
    AuditData budgeted = shard(1, 2);
    budgeted.config.budget.max_requests = 10;
    CHECK(merge_shards({shard(0, 2), budgeted}));
  }
  SUBCASE("a different suite is refused") {
    AuditData other = shard(1, 2);
    other.suite.prompts[3].text = "changed";
    CHECK(message_of(merge_shards({shard(0, 2), other})) ==
          "merge: shard 2/2 (audit-1) and shard 1/2 (audit-0) ran different suites (prompt 4 "
          "('p3') differs)");
  }
  SUBCASE("a different model is refused") {
    AuditData other = shard(1, 2);
    other.endpoints[0].model = "n";
    CHECK(message_of(merge_shards({shard(0, 2), other})).find("model 'n'") != std::string::npos);
  }
  SUBCASE("a record outside its shard is refused") {
    AuditData other = shard(1, 2);
    other.records[0].planned.prompt_index = 0;
    CHECK(message_of(merge_shards({shard(0, 2), other})) ==
          "merge: shard 2/2 (audit-1) holds a record of prompt 1, which belongs to another shard");
  }
  SUBCASE("nothing to merge") {
    CHECK(message_of(merge_shards({})) == "merge: no audits to merge");
  }
}

TEST_CASE("merge_shards: the noise model's contradictions join the decisions, the earliest first") {
  AuditData first = shard(0, 2);
  AuditData second = shard(1, 2);
  for (AuditData* data : {&first, &second}) {
    data->config.adaptive.enabled = true;
    data->adaptive = AdaptiveOutcome{};
    data->adaptive->finished = true;
  }
  first.adaptive->contradicted[8] = {3, "late"};
  second.adaptive->contradicted[8] = {1, "early"};
  second.adaptive->contradicted[1] = {2, "serial"};
  auto merged = merge_shards({first, second});
  REQUIRE(merged);
  REQUIRE(merged->adaptive);
  CHECK(merged->adaptive->contradicted ==
        std::map<int, NoiseModelContradiction>{{1, {2, "serial"}}, {8, {1, "early"}}});
}

TEST_CASE("merge_shards: the shards' probe activity adds up, their cold mode agrees") {
  AuditData first = shard(0, 3);
  AuditData second = shard(1, 3);
  AuditData third = shard(2, 3);
  ProbeActivity a;
  a.filler_sent = 7;
  a.filler_failed = 1;
  a.sampled_filler_sent = 3;
  a.sampled_filler_failed = 1;
  a.primes_sent = 2;
  a.flushes_sent = 4;
  a.flushes_failed = 1;
  a.flush_looked_up = true;
  a.flush_route = "/flush_cache";
  a.filler_levels = {FillerLevel{.level = 1, .sent = 4},
                     FillerLevel{.level = 1, .sampled = true, .sent = 3, .shortened = 1}};
  a.long_shortened = 2;
  a.long_context_words_min = 300;
  a.prefix_shortened = true;
  a.prefix_words = 90;
  ProbeActivity b;
  b.filler_sent = 5;
  b.primes_sent = 1;
  b.primes_failed = 1;
  b.flushes_sent = 2;
  b.flush_looked_up = true;
  b.flush_route = "/flush_cache";
  b.filler_levels = {FillerLevel{.level = 2, .sent = 2, .refused = 1, .refusal = "HTTP 400: no"},
                     FillerLevel{.level = 1, .sent = 3, .unfit = true}};
  b.long_shortened = 1;
  b.long_context_words_min = 120;
  b.prefix_shortened = true;
  b.prefix_words = 40;
  first.probe_activity = {a};
  second.probe_activity = {b};
  // The third shard ran no prefix trial (no flush looked up): it agrees with any cold mode.
  ProbeActivity c;
  c.filler_sent = 1;
  third.probe_activity = {c};

  SUBCASE("counts add up, levels in the order they first ran") {
    auto merged = merge_shards({third, second, first});
    REQUIRE(merged);
    REQUIRE(merged->probe_activity.size() == 1);
    const ProbeActivity& joined = merged->probe_activity[0];
    CHECK(joined.filler_sent == 13);
    CHECK(joined.filler_failed == 1);
    CHECK(joined.sampled_filler_sent == 3);
    CHECK(joined.sampled_filler_failed == 1);
    CHECK(joined.primes_sent == 3);
    CHECK(joined.primes_failed == 1);
    CHECK(joined.flushes_sent == 6);
    CHECK(joined.flushes_failed == 1);
    CHECK(joined.flush_looked_up);
    CHECK(joined.flush_route == "/flush_cache");
    CHECK_FALSE(joined.cold_per_request);
    CHECK(cold_mode_text(joined) == "after a flush through /flush_cache");
    CHECK(joined.filler_levels ==
          std::vector<FillerLevel>{
              FillerLevel{.level = 1, .sent = 7, .unfit = true},
              FillerLevel{.level = 1, .sampled = true, .sent = 3, .shortened = 1},
              FillerLevel{.level = 2, .sent = 2, .refused = 1, .refusal = "HTTP 400: no"}});
    CHECK(joined.long_shortened == 3);
    CHECK(joined.long_context_words_min == 120);
    // The shortest prefix a shard sent; the third (no prefix trial) cut nothing.
    CHECK(joined.prefix_shortened);
    CHECK(joined.prefix_words == 40);
  }
  SUBCASE("a shard stored without activity adds nothing") {
    second.probe_activity.clear();
    auto merged = merge_shards({first, second});
    REQUIRE(merged);
    REQUIRE(merged->probe_activity.size() == 1);
    CHECK(merged->probe_activity[0].filler_sent == 7);
    CHECK(merged->probe_activity[0].long_context_words_min == 300);
    CHECK(merged->probe_activity[0].prefix_words == 90);
    CHECK(cold_mode_text(merged->probe_activity[0]) == "after a flush through /flush_cache");
  }
  SUBCASE("the per-request cold mode carries over from the one shard that ran cold trials") {
    a.flush_looked_up = false;
    a.flush_route.clear();
    a.cold_per_request = true;
    first.probe_activity = {a};
    auto merged = merge_shards({first, third});
    REQUIRE(merged);
    CHECK(merged->probe_activity[0].cold_per_request);
    CHECK(merged->probe_activity[0].filler_sent == 8);
  }
  SUBCASE("a flush route against none is refused, naming both shards") {
    b.flush_route.clear();
    second.probe_activity = {b};
    CHECK(message_of(merge_shards({first, second, third})) ==
          "merge: shard 2/3 (audit-1) ran its cold prefix trials with no cold mode where shard "
          "1/3 (audit-0) ran them after a flush through /flush_cache: their cold trials are not "
          "alike");
  }
  SUBCASE("a flush against the cache off per request is refused") {
    b.flush_looked_up = false;
    b.flush_route.clear();
    b.cold_per_request = true;
    second.probe_activity = {b};
    CHECK(message_of(merge_shards({second, first})) ==
          "merge: shard 2/3 (audit-1) ran its cold prefix trials with the prompt cache off per "
          "request (cache_prompt: false) where shard 1/3 (audit-0) ran them after a flush "
          "through /flush_cache: their cold trials are not alike");
  }
}
