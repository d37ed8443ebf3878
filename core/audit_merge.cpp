#include "core/audit_merge.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

namespace llmrepro::core {
namespace {

// The first configuration field, other than the shard, in which two shards differ; empty if none.
std::string config_difference(const AuditConfig& a, const AuditConfig& b) {
  if (a.api != b.api) return "api";
  if (a.model != b.model) return "model";
  if (a.runs != b.runs) return "runs";
  if (a.levels != b.levels) return "concurrency";
  if (a.probes != b.probes) return "probes";
  if (a.max_tokens != b.max_tokens) return "max_tokens";
  if (a.top_logprobs != b.top_logprobs) return "top_logprobs";
  if (a.seed != b.seed) return "seed";
  if (a.stream != b.stream) return "stream";
  if (a.timeout_s != b.timeout_s) return "timeout_s";
  if (a.retries != b.retries) return "retries";
  if (a.fragile_gap != b.fragile_gap) return "fragile_gap";
  if (a.fragile_window != b.fragile_window) return "fragile_window";
  if (a.fragile_p != b.fragile_p) return "fragile_p";
  if (a.compare_on != b.compare_on) return "compare_on";
  if (a.price != b.price) return "price";
  if (a.rate_limit != b.rate_limit) return "rate_limit";
  if (a.shard_count != b.shard_count) return "shard count";
  if (a.profile != b.profile) return "profile";
  if (a.adaptive != b.adaptive) return "adaptive";
  if (a.adaptive_initial != b.adaptive_initial) return "adaptive_initial";
  if (a.adaptive_epsilon != b.adaptive_epsilon) return "adaptive_epsilon";
  if (a.gates.fail_on != b.gates.fail_on) return "fail_on";
  if (a.gates.max_unique != b.gates.max_unique) return "max_unique";
  if (a.gates.max_unstable_rate != b.gates.max_unstable_rate) return "max_unstable_rate";
  if (a.gates.min_tara != b.gates.min_tara) return "min_tara";
  if (a.gates.max_logprob_drift != b.gates.max_logprob_drift) return "max_logprob_drift";
  if (a.gates.max_failed_rate != b.gates.max_failed_rate) return "max_failed_rate";
  return {};
}

bool same_messages(const std::vector<Message>& a, const std::vector<Message>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Message& x, const Message& y) {
    return x.role == y.role && x.content == y.content;
  });
}

bool same_prompt(const Prompt& a, const Prompt& b) {
  // source_line is where the prompt sat in its file, not what was sent: not compared.
  return a.id == b.id && a.text == b.text && same_messages(a.messages, b.messages) &&
         a.max_tokens == b.max_tokens && a.tags == b.tags && a.expect.kind == b.expect.kind &&
         a.expect.value == b.expect.value && a.expect.path == b.expect.path &&
         a.expect.number == b.expect.number && a.expect.tolerance == b.expect.tolerance &&
         a.extract.kind == b.extract.kind && a.extract.pattern == b.extract.pattern &&
         a.response_format_json == b.response_format_json;
}

// Why two suites differ, or empty when they hold the same prompts in the same order.
std::string suite_difference(const Suite& a, const Suite& b) {
  if (a.prompts.size() != b.prompts.size())
    return std::to_string(a.prompts.size()) + " against " + std::to_string(b.prompts.size()) +
           " prompts";
  for (std::size_t i = 0; i < a.prompts.size(); ++i)
    if (!same_prompt(a.prompts[i], b.prompts[i]))
      return "prompt " + std::to_string(i + 1) + " ('" + a.prompts[i].id + "') differs";
  return {};
}

std::string shard_name(const AuditData& shard) {
  return "shard " + std::to_string(shard.config.shard_index + 1) + "/" +
         std::to_string(shard.config.shard_count) + " (" + shard.info.id + ")";
}

} // namespace

Result<AuditData> merge_shards(const std::vector<AuditData>& shards) {
  if (shards.empty()) return make_error(ErrorCode::usage, "merge: no audits to merge");
  std::vector<const AuditData*> ordered;
  for (const auto& shard : shards) ordered.push_back(&shard);
  std::stable_sort(ordered.begin(), ordered.end(), [](const AuditData* a, const AuditData* b) {
    return a->config.shard_index < b->config.shard_index;
  });

  const AuditData& first = *ordered.front();
  const int count = first.config.shard_count;
  std::set<int> present;
  for (const AuditData* shard : ordered) {
    const AuditConfig& config = shard->config;
    if (config.shard_count < 1 || config.shard_index < 0 ||
        config.shard_index >= config.shard_count)
      return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) + " is not a valid shard");
    if (const auto field = config_difference(first.config, config); !field.empty())
      return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) + " and " +
                                              shard_name(first) + " differ in their " + field +
                                              ": they are not shards of one audit");
    if (const auto why = suite_difference(first.suite, shard->suite); !why.empty())
      return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) + " and " +
                                              shard_name(first) + " ran different suites (" + why +
                                              ")");
    if (shard->endpoints.size() != first.endpoints.size())
      return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) + " and " +
                                              shard_name(first) +
                                              " audited different numbers of endpoints");
    for (std::size_t e = 0; e < first.endpoints.size(); ++e) {
      const auto& a = first.endpoints[e];
      const auto& b = shard->endpoints[e];
      if (a.dialect != b.dialect || a.model != b.model || a.embedded != b.embedded)
        return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) + " audited " +
                                                b.dialect + " model '" + b.model + "' where " +
                                                shard_name(first) + " audited " + a.dialect +
                                                " model '" + a.model + "'");
    }
    if (!present.insert(config.shard_index).second)
      return make_error(ErrorCode::usage, "merge: shard " + std::to_string(config.shard_index + 1) +
                                              "/" + std::to_string(count) +
                                              " is given twice: shards overlap");
    for (const auto& record : shard->records)
      if (record.planned.prompt_index % count != config.shard_index)
        return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) +
                                                " holds a record of prompt " +
                                                std::to_string(record.planned.prompt_index + 1) +
                                                ", which belongs to another shard");
  }

  AuditData merged;
  merged.config = first.config;
  merged.config.shard_index = 0;
  merged.config.shard_count = 1;
  merged.suite = first.suite;
  merged.endpoints = first.endpoints;
  for (std::size_t e = 0; e < merged.endpoints.size(); ++e) {
    std::vector<std::string> urls;
    for (const AuditData* shard : ordered)
      if (std::find(urls.begin(), urls.end(), shard->endpoints[e].url) == urls.end())
        urls.push_back(shard->endpoints[e].url);
    std::string joined;
    for (const auto& url : urls) joined += (joined.empty() ? "" : ", ") + url;
    merged.endpoints[e].url = joined;
    merged.endpoints[e].fingerprints.clear();
  }

  bool complete = static_cast<int>(present.size()) == count;
  merged.info.started_ms = first.info.started_ms;
  for (const AuditData* shard : ordered) {
    complete = complete && shard->info.status == "complete";
    merged.info.started_ms = std::min(merged.info.started_ms, shard->info.started_ms);
    merged.info.finished_ms = std::max(merged.info.finished_ms, shard->info.finished_ms);
    merged.records.insert(merged.records.end(), shard->records.begin(), shard->records.end());
    for (const auto& error : shard->errors)
      if (std::find(merged.errors.begin(), merged.errors.end(), error) == merged.errors.end())
        merged.errors.push_back(error);
  }
  for (int index = 0; index < count; ++index)
    if (present.count(index) == 0)
      merged.errors.push_back("merge: shard " + std::to_string(index + 1) + "/" +
                              std::to_string(count) + " is missing; its prompts were not audited");
  // Each shard decided its own prompts: the joined decisions are theirs, in suite order.
  if (first.config.adaptive) {
    AdaptiveOutcome joined;
    joined.config = first.adaptive ? first.adaptive->config : AdaptiveConfig{};
    joined.finished = true;
    for (const AuditData* shard : ordered) {
      if (!shard->adaptive) {
        joined.finished = false;
        continue;
      }
      joined.looks = std::max(joined.looks, shard->adaptive->looks);
      joined.finished = joined.finished && shard->adaptive->finished;
      joined.prompts.insert(joined.prompts.end(), shard->adaptive->prompts.begin(),
                            shard->adaptive->prompts.end());
    }
    std::sort(joined.prompts.begin(), joined.prompts.end(),
              [](const AdaptivePrompt& a, const AdaptivePrompt& b) {
                return a.prompt_index < b.prompt_index;
              });
    merged.adaptive = std::move(joined);
  }
  merged.info.status = complete ? "complete" : "partial";
  merged.info.id = "merged-" + first.info.id;
  return merged;
}

} // namespace llmrepro::core
