#include "core/audit_merge.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>

namespace llmrepro::core {
namespace {

// One plan-defining (or judging) value in which two shards differ, as the flag spells it.
struct ConfigDifference {
  std::string flag;
  std::string a; // the value in the shard compared
  std::string b; // the value in the first shard
};

std::string text_of(int value) { return std::to_string(value); }
std::string text_of(bool value) { return value ? "on" : "off"; }
std::string text_of(const std::string& value) { return value.empty() ? "none" : value; }
std::string text_of(std::uint64_t value) { return std::to_string(value); }
std::string text_of(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}
std::string text_of(const std::vector<int>& levels) {
  std::string out;
  for (const int level : levels) out += (out.empty() ? "" : ",") + std::to_string(level);
  return out;
}
std::string text_of(const std::vector<ProbeKind>& probes) {
  std::string out;
  for (const ProbeKind probe : probes)
    out += (out.empty() ? "" : ",") + std::string(to_string(probe));
  return out;
}
std::string text_of(const Price& price) { return to_string(price); }
std::string text_of(CompareOn compare_on) { return to_string(compare_on); }
std::string text_of(AuditProfile profile) { return to_string(profile); }
std::string text_of(TemperatureMode mode) { return to_string(mode); }
std::string text_of(AdaptiveAssumption assumption) { return to_string(assumption); }
std::string text_of(const FailOnSet& fail_on) { return to_string(fail_on); }
std::string text_of(const EngineSettings& engine) {
  return "max-num-seqs " + std::to_string(engine.max_num_seqs) + ", batch-invariant " +
         text_of(engine.batch_invariant) + ", prefix-cache " + text_of(engine.prefix_cache) +
         ", seed " + std::to_string(engine.seed);
}
template <typename T> std::string text_of(const std::optional<T>& value) {
  return value ? text_of(*value) : "none";
}

// The parts of a shard's configuration that every shard of one audit shares: all but the budget
// (each shard had its own), the shard's index and the --header names (never compared by merge).
// The embedded engine's settings count only where both shards stored them (older ones did not).
struct SharedConfig {
  PlanSettings plan;
  RequestSettings requests;
  AnalysisConfig analysis;
  GateConfig gates;
  AdaptiveSettings adaptive;
  friend bool operator==(const SharedConfig&, const SharedConfig&) = default;
};

SharedConfig shared_config(const AuditConfig& config, const AuditConfig& other) {
  SharedConfig shared{config.plan, config.requests, config.analysis, config.gates, config.adaptive};
  shared.plan.shard_index = 0;
  shared.plan.header_names.reset();
  if (!config.plan.engine || !other.plan.engine) shared.plan.engine.reset();
  return shared;
}

// The first configuration value, other than the shard's index, in which two shards differ: every
// flag that defines the plan or its requests (--stop-after and the adaptive settings included),
// then the judging flags, which a merged verdict applies to every shard alike. Budgets are not
// compared: each shard had its own. The parts are compared whole; the fields are walked only to
// name the first that differs.
std::optional<ConfigDifference> config_difference(const AuditConfig& a, const AuditConfig& b) {
  if (shared_config(a, b) == shared_config(b, a)) return std::nullopt;
  std::optional<ConfigDifference> found;
  const auto check = [&](const char* flag, const auto& x, const auto& y) {
    if (!found && !(x == y)) found = ConfigDifference{flag, text_of(x), text_of(y)};
  };
  const PlanSettings& p = a.plan;
  const PlanSettings& q = b.plan;
  check("--api", p.api, q.api);
  check("--model", p.model, q.model);
  check("--runs", p.runs, q.runs);
  check("--concurrency", p.levels, q.levels);
  check("--probe", p.probes, q.probes);
  check("--max-tokens", p.max_tokens, q.max_tokens);
  check("--stop-after", p.stop_after, q.stop_after);
  check("--top-logprobs", p.top_logprobs, q.top_logprobs);
  check("--seed", p.seed, q.seed);
  check("--stream", p.stream, q.stream);
  check("--logprobs-form", p.logprobs_form, q.logprobs_form);
  check("--temperature", p.temperature, q.temperature);
  check("--profile", p.profile, q.profile);
  check("--adaptive", a.adaptive.enabled, b.adaptive.enabled);
  check("--adaptive-initial", a.adaptive.initial, b.adaptive.initial);
  check("--adaptive-epsilon", a.adaptive.epsilon, b.adaptive.epsilon);
  check("--adaptive-assume", a.adaptive.assume, b.adaptive.assume);
  check("--shard (count)", p.shard_count, q.shard_count);
  if (p.engine && q.engine) check("--engine-*", p.engine, q.engine);
  check("--timeout", a.requests.timeout_s, b.requests.timeout_s);
  check("--retries", a.requests.retries, b.requests.retries);
  check("--rate", a.requests.rate_limit, b.requests.rate_limit);
  check("--price", a.analysis.price, b.analysis.price);
  check("--fragile-gap", a.analysis.fragile_gap, b.analysis.fragile_gap);
  check("--fragile-window", a.analysis.fragile_window, b.analysis.fragile_window);
  check("--fragile-p", a.analysis.fragile_p, b.analysis.fragile_p);
  check("--compare-on", a.analysis.compare_on, b.analysis.compare_on);
  check("--fail-on", a.gates.fail_on, b.gates.fail_on);
  check("--max-unique", a.gates.max_unique, b.gates.max_unique);
  check("--max-unstable-rate", a.gates.max_unstable_rate, b.gates.max_unstable_rate);
  check("--min-tara", a.gates.min_tara, b.gates.min_tara);
  check("--min-modal-share", a.gates.min_modal_share, b.gates.min_modal_share);
  check("--max-logprob-drift", a.gates.max_logprob_drift, b.gates.max_logprob_drift);
  check("--max-failed-rate", a.gates.max_failed_rate, b.gates.max_failed_rate);
  // `==` decides: a setting the walk above does not name still keeps the shards apart.
  if (!found) found = ConfigDifference{"a setting not named here", "one value", "another"};
  return found;
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
  return "shard " + std::to_string(shard.config.plan.shard_index + 1) + "/" +
         std::to_string(shard.config.plan.shard_count) + " (" + shard.info.id + ")";
}

// Whether `activity` says how its cold prefix trials were made cold: its run looked for a flush
// route or switched the prompt cache off per request. A shard that ran no prefix trial says
// nothing and agrees with every other.
bool ran_cold_trials(const ProbeActivity& activity) {
  return activity.flush_looked_up || activity.cold_per_request;
}

// The cold mode in words for a merge error: "with no cold mode" where none was offered.
std::string cold_mode_words(const ProbeActivity& activity) {
  const std::string text = cold_mode_text(activity);
  return text.empty() ? "with no cold mode" : text;
}

// Adds `from`'s counts into `into` (one endpoint of two shards); the cold mode is the caller's.
void add_activity(ProbeActivity& into, const ProbeActivity& from) {
  into.filler_sent += from.filler_sent;
  into.filler_failed += from.filler_failed;
  into.sampled_filler_sent += from.sampled_filler_sent;
  into.sampled_filler_failed += from.sampled_filler_failed;
  into.primes_sent += from.primes_sent;
  into.primes_failed += from.primes_failed;
  into.flushes_sent += from.flushes_sent;
  into.flushes_failed += from.flushes_failed;
  for (const FillerLevel& level : from.filler_levels) {
    FillerLevel& joined = filler_level(into, level.level, level.sampled);
    joined.sent += level.sent;
    joined.refused += level.refused;
    joined.shortened += level.shortened;
    joined.unfit = joined.unfit || level.unfit;
    if (joined.refusal.empty()) joined.refusal = level.refusal;
  }
  if (from.long_shortened > 0)
    into.long_context_words_min =
        into.long_shortened > 0 ? std::min(into.long_context_words_min, from.long_context_words_min)
                                : from.long_context_words_min;
  into.long_shortened += from.long_shortened;
  if (from.prefix_shortened)
    into.prefix_words =
        into.prefix_shortened ? std::min(into.prefix_words, from.prefix_words) : from.prefix_words;
  into.prefix_shortened = into.prefix_shortened || from.prefix_shortened;
  into.restarts_run += from.restarts_run;
  into.restarts_failed += from.restarts_failed;
  into.restart_ready_ms_max = std::max(into.restart_ready_ms_max, from.restart_ready_ms_max);
}

// The shards' probe activity joined, per endpoint: every count added up, the filler levels in the
// order they first ran, the fewest words a shortened long context kept, the slowest restart until
// ready. The cold mode is the one every shard that ran cold prefix trials used; shards that used
// different ones are refused.
Result<std::vector<ProbeActivity>>
merge_probe_activity(const std::vector<const AuditData*>& shards) {
  std::vector<ProbeActivity> merged;
  std::vector<const AuditData*> cold_from; // per endpoint, the first shard that ran cold trials
  for (const AuditData* shard : shards) {
    if (shard->probe_activity.size() > merged.size()) {
      merged.resize(shard->probe_activity.size());
      cold_from.resize(shard->probe_activity.size(), nullptr);
    }
    for (std::size_t e = 0; e < shard->probe_activity.size(); ++e) {
      const ProbeActivity& activity = shard->probe_activity[e];
      add_activity(merged[e], activity);
      if (!ran_cold_trials(activity)) continue;
      if (cold_from[e] == nullptr) {
        cold_from[e] = shard;
        merged[e].flush_looked_up = activity.flush_looked_up;
        merged[e].flush_route = activity.flush_route;
        merged[e].cold_per_request = activity.cold_per_request;
      } else if (activity.cold_per_request != merged[e].cold_per_request ||
                 activity.flush_route != merged[e].flush_route) {
        const std::string where =
            shards.front()->endpoints.size() > 1 ? " on endpoint " + std::to_string(e + 1) : "";
        return make_error(ErrorCode::usage,
                          "merge: " + shard_name(*shard) + " ran its cold prefix trials" + where +
                              " " + cold_mode_words(activity) + " where " +
                              shard_name(*cold_from[e]) + " ran them " +
                              cold_mode_words(merged[e]) + ": their cold trials are not alike");
      } else {
        merged[e].flush_looked_up = merged[e].flush_looked_up || activity.flush_looked_up;
      }
    }
  }
  return merged;
}

} // namespace

Result<AuditData> merge_shards(const std::vector<AuditData>& shards) {
  if (shards.empty()) return make_error(ErrorCode::usage, "merge: no audits to merge");
  std::vector<const AuditData*> ordered;
  for (const auto& shard : shards) ordered.push_back(&shard);
  std::stable_sort(ordered.begin(), ordered.end(), [](const AuditData* a, const AuditData* b) {
    return a->config.plan.shard_index < b->config.plan.shard_index;
  });

  const AuditData& first = *ordered.front();
  const int count = first.config.plan.shard_count;
  std::set<int> present;
  for (const AuditData* shard : ordered) {
    const AuditConfig& config = shard->config;
    if (config.plan.shard_count < 1 || config.plan.shard_index < 0 ||
        config.plan.shard_index >= config.plan.shard_count)
      return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) + " is not a valid shard");
    if (const auto field = config_difference(config, first.config))
      return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) + " and " +
                                              shard_name(first) + " differ in " + field->flag +
                                              ": " + field->a + " vs " + field->b +
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
    if (!present.insert(config.plan.shard_index).second)
      return make_error(ErrorCode::usage,
                        "merge: shard " + std::to_string(config.plan.shard_index + 1) + "/" +
                            std::to_string(count) + " is given twice: shards overlap");
    for (const auto& record : shard->records)
      if (record.planned.prompt_index % count != config.plan.shard_index)
        return make_error(ErrorCode::usage, "merge: " + shard_name(*shard) +
                                                " holds a record of prompt " +
                                                std::to_string(record.planned.prompt_index + 1) +
                                                ", which belongs to another shard");
  }

  AuditData merged;
  merged.config = first.config;
  merged.config.plan.shard_index = 0;
  merged.config.plan.shard_count = 1;
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
  if (first.config.adaptive.enabled) {
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
      // A shard's contradiction of the noise model is reported with the merged decisions, the
      // earliest per level (a prompt of another shard stopped before it then claims nothing).
      for (const auto& [concurrency, contradiction] : shard->adaptive->contradicted) {
        const auto [it, inserted] = joined.contradicted.try_emplace(concurrency, contradiction);
        if (!inserted && contradiction.look < it->second.look) it->second = contradiction;
      }
    }
    std::sort(joined.prompts.begin(), joined.prompts.end(),
              [](const AdaptivePrompt& a, const AdaptivePrompt& b) {
                return a.prompt_index < b.prompt_index;
              });
    merged.adaptive = std::move(joined);
  }
  auto activity = merge_probe_activity(ordered);
  if (!activity) return activity.error();
  merged.probe_activity = std::move(*activity);
  merged.info.status = complete ? "complete" : "partial";
  merged.info.id = "merged-" + first.info.id;
  return merged;
}

} // namespace llmrepro::core
