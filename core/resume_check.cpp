#include "core/resume_check.hpp"

#include <algorithm>

namespace llmrepro::core {
namespace {

// The model as --model spells it; the empty model is the endpoint's own.
std::string model_text(const std::string& model) {
  return model.empty() ? "none (detected)" : model;
}

std::string probes_text(const std::vector<ProbeKind>& probes) {
  std::string out;
  for (const auto probe : probes) out += (out.empty() ? "" : ",") + std::string(to_string(probe));
  return out;
}

std::string levels_text(const std::vector<int>& levels) {
  std::string out;
  for (const int level : levels) out += (out.empty() ? "" : ",") + std::to_string(level);
  return out;
}

std::string shard_text(const AuditConfig& config) {
  return std::to_string(config.shard_index + 1) + "/" + std::to_string(config.shard_count);
}

std::string on_off(bool on) { return on ? "on" : "off"; }

// The --header names as a message lists them: "X-Org, X-Team", or "none".
std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

// Header names compare as HTTP does, without case, and as a set: the order sends nothing else.
std::vector<std::string> comparable_names(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (std::string name : names) {
    for (char& c : name)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    out.push_back(std::move(name));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// How an endpoint of the audit reads in a message.
std::string endpoint_text(const std::string& url, bool embedded) {
  return embedded ? std::string("the embedded reference engine") : url;
}

void compare_endpoints(const AuditData& stored, const ResumeRequest& wanted, const UrlForms& forms,
                       std::vector<PlanDifference>& differences) {
  const auto& urls = wanted.urls;
  if (urls.size() != stored.endpoints.size()) {
    const std::size_t count = stored.endpoints.size();
    differences.push_back({"--endpoint/--compare",
                           std::to_string(count) + (count == 1 ? " endpoint" : " endpoints"),
                           std::to_string(urls.size()),
                           {}});
    return;
  }
  for (std::size_t i = 0; i < urls.size(); ++i) {
    const auto& endpoint = stored.endpoints[i];
    const bool same = urls[i].empty() ? endpoint.embedded
                                      : !endpoint.embedded && forms.comparable(urls[i]) ==
                                                                  forms.comparable(endpoint.url);
    if (same) continue;
    differences.push_back({i < wanted.endpoint_flag_count ? "--endpoint" : "--compare",
                           endpoint_text(endpoint.url, endpoint.embedded),
                           urls[i].empty() ? endpoint_text({}, true) : forms.shown(urls[i]),
                           {}});
  }
}

} // namespace

std::string prompt_difference(const Prompt& a, const Prompt& b) {
  if (a.id != b.id) return "id";
  if (a.text != b.text) return a.is_chat() != b.is_chat() ? "prompt or messages" : "prompt";
  if (a.messages.size() != b.messages.size()) return "messages";
  for (std::size_t i = 0; i < a.messages.size(); ++i)
    if (a.messages[i].role != b.messages[i].role || a.messages[i].content != b.messages[i].content)
      return "messages";
  if (a.max_tokens != b.max_tokens) return "max_tokens";
  if (a.tags != b.tags) return "tags";
  if (a.expect.kind != b.expect.kind || a.expect.value != b.expect.value ||
      a.expect.path != b.expect.path || a.expect.number != b.expect.number ||
      a.expect.tolerance != b.expect.tolerance)
    return "expect";
  if (a.extract.kind != b.extract.kind || a.extract.pattern != b.extract.pattern) return "extract";
  if (a.response_format_json != b.response_format_json) return "response_format";
  return {};
}

std::string suite_difference(const Suite& stored, const Suite& given) {
  if (stored.prompts.size() != given.prompts.size())
    return std::to_string(stored.prompts.size()) + " prompts (stored) vs " +
           std::to_string(given.prompts.size()) + " (given)";
  for (std::size_t i = 0; i < stored.prompts.size(); ++i) {
    const auto& a = stored.prompts[i];
    const auto& b = given.prompts[i];
    const std::string field = prompt_difference(a, b);
    if (field.empty()) continue;
    const std::string number = std::to_string(i + 1);
    if (field == "id")
      return "prompt " + number + " is '" + a.id + "' (stored) vs '" + b.id + "' (given)";
    return "prompt " + number + " '" + a.id + "' differs in its " + field;
  }
  return {};
}

std::string to_string(const PlanDifference& difference) {
  if (!difference.detail.empty())
    return difference.flag + " '" + difference.stored + "' (stored) vs '" + difference.given +
           "' (given): " + difference.detail;
  return difference.flag + " " + difference.stored + " (stored) vs " + difference.given +
         " (given)";
}

std::vector<PlanDifference> resume_plan_differences(const AuditData& stored,
                                                    const ResumeRequest& wanted,
                                                    const UrlForms& urls) {
  const AuditConfig& was = stored.config;
  const AuditConfig& now = wanted.config;
  std::vector<PlanDifference> differences;
  const auto compare = [&](bool given, const char* flag, const std::string& stored_text,
                           const std::string& given_text) {
    if (given && stored_text != given_text)
      differences.push_back({flag, stored_text, given_text, {}});
  };
  if (wanted.suite)
    if (auto difference = suite_difference(stored.suite, *wanted.suite); !difference.empty())
      differences.push_back({"--suite", stored.suite.source, wanted.suite_path, difference});
  if (wanted.endpoints_given) compare_endpoints(stored, wanted, urls, differences);
  const PlanFlagsGiven& given = wanted.given;
  compare(given.api, "--api", was.api, now.api);
  compare(given.model, "--model", model_text(was.model), model_text(now.model));
  compare(given.runs, "--runs", std::to_string(was.runs), std::to_string(now.runs));
  compare(given.concurrency, "--concurrency", levels_text(was.levels), levels_text(now.levels));
  compare(given.max_tokens, "--max-tokens", std::to_string(was.max_tokens),
          std::to_string(now.max_tokens));
  compare(given.top_logprobs, "--top-logprobs", std::to_string(was.top_logprobs),
          std::to_string(now.top_logprobs));
  compare(given.seed, "--seed", std::to_string(was.seed), std::to_string(now.seed));
  compare(given.probe, "--probe", probes_text(was.probes), probes_text(now.probes));
  compare(given.shard, "--shard", shard_text(was), shard_text(now));
  compare(given.stream, "--stream", was.stream ? "on" : "off", now.stream ? "on" : "off");
  compare(given.logprobs_form, "--logprobs-form", was.logprobs_form, now.logprobs_form);
  compare(given.profile, "--profile", to_string(was.profile), to_string(now.profile));
  compare(given.max_concurrency && !given.concurrency, "--max-concurrency", levels_text(was.levels),
          levels_text(now.levels));
  // A flag not given runs the engine as stored (cli connect), so only given ones can differ.
  if (was.engine) {
    const EngineSettings& a = *was.engine;
    const EngineSettings b = now.engine.value_or(EngineSettings{});
    compare(given.engine_max_num_seqs, "--engine-max-num-seqs", std::to_string(a.max_num_seqs),
            std::to_string(b.max_num_seqs));
    compare(given.engine_batch_invariant, "--engine-batch-invariant", on_off(a.batch_invariant),
            on_off(b.batch_invariant));
    compare(given.engine_prefix_cache, "--engine-prefix-cache", on_off(a.prefix_cache),
            on_off(b.prefix_cache));
    compare(given.engine_seed, "--engine-seed", std::to_string(a.seed), std::to_string(b.seed));
  }
  if (was.header_names) {
    const std::vector<std::string> given_names =
        now.header_names.value_or(std::vector<std::string>{});
    if (comparable_names(*was.header_names) != comparable_names(given_names))
      differences.push_back(
          {"--header names", names_text(*was.header_names), names_text(given_names), {}});
  }
  return differences;
}

} // namespace llmrepro::core
