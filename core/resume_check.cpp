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

std::string shard_text(const PlanSettings& plan) {
  return std::to_string(plan.shard_index + 1) + "/" + std::to_string(plan.shard_count);
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

PlanSettings resume_plan_wanted(const PlanSettings& stored, const ResumeRequest& wanted) {
  const PlanSettings& now = wanted.config.plan;
  const PlanFlagsGiven& given = wanted.given;
  PlanSettings plan = stored;
  if (given.api) plan.api = now.api;
  if (given.model) plan.model = now.model;
  if (given.runs) plan.runs = now.runs;
  if (given.concurrency || given.max_concurrency) plan.levels = now.levels;
  if (given.max_tokens) plan.max_tokens = now.max_tokens;
  if (given.top_logprobs) plan.top_logprobs = now.top_logprobs;
  if (given.seed) plan.seed = now.seed;
  if (given.probe) plan.probes = now.probes;
  if (given.shard) {
    plan.shard_index = now.shard_index;
    plan.shard_count = now.shard_count;
  }
  if (given.stream) plan.stream = now.stream;
  if (given.logprobs_form) plan.logprobs_form = now.logprobs_form;
  if (given.temperature) plan.temperature = now.temperature;
  if (given.profile) {
    plan.profile = now.profile;
    plan.serial_runs = now.serial_runs; // --profile adi sets them with the levels
  }
  // A flag not given runs the engine as stored (cli connect), so only given ones can differ.
  if (plan.engine) {
    const EngineSettings flags = now.engine.value_or(EngineSettings{});
    if (given.engine_max_num_seqs) plan.engine->max_num_seqs = flags.max_num_seqs;
    if (given.engine_batch_invariant) plan.engine->batch_invariant = flags.batch_invariant;
    if (given.engine_prefix_cache) plan.engine->prefix_cache = flags.prefix_cache;
    if (given.engine_seed) plan.engine->seed = flags.seed;
  }
  // Every request carries the headers, so their names count whether given or not.
  if (plan.header_names) plan.header_names = now.header_names.value_or(std::vector<std::string>{});
  return plan;
}

std::vector<PlanDifference> resume_plan_differences(const AuditData& stored,
                                                    const ResumeRequest& wanted,
                                                    const UrlForms& urls) {
  std::vector<PlanDifference> differences;
  if (wanted.suite)
    if (auto difference = suite_difference(stored.suite, *wanted.suite); !difference.empty())
      differences.push_back({"--suite", stored.suite.source, wanted.suite_path, difference});
  if (wanted.endpoints_given) compare_endpoints(stored, wanted, urls, differences);
  const PlanSettings& was = stored.config.plan;
  const PlanSettings now = resume_plan_wanted(was, wanted);
  if (was == now) return differences;
  // The plans differ: every field is walked to name the flags behind the difference.
  const auto compare = [&](const char* flag, const std::string& stored_text,
                           const std::string& given_text) {
    if (stored_text != given_text) differences.push_back({flag, stored_text, given_text, {}});
  };
  const PlanFlagsGiven& given = wanted.given;
  compare("--api", was.api, now.api);
  compare("--model", model_text(was.model), model_text(now.model));
  compare("--runs", std::to_string(was.runs), std::to_string(now.runs));
  // The levels are named by the flag that set them: --concurrency, else --max-concurrency.
  if (given.concurrency) compare("--concurrency", levels_text(was.levels), levels_text(now.levels));
  compare("--max-tokens", std::to_string(was.max_tokens), std::to_string(now.max_tokens));
  compare("--top-logprobs", std::to_string(was.top_logprobs), std::to_string(now.top_logprobs));
  compare("--seed", std::to_string(was.seed), std::to_string(now.seed));
  compare("--probe", probes_text(was.probes), probes_text(now.probes));
  compare("--shard", shard_text(was), shard_text(now));
  compare("--stream", on_off(was.stream), on_off(now.stream));
  compare("--logprobs-form", was.logprobs_form, now.logprobs_form);
  compare("--temperature", to_string(was.temperature), to_string(now.temperature));
  compare("--profile", to_string(was.profile), to_string(now.profile));
  if (!given.concurrency)
    compare("--max-concurrency", levels_text(was.levels), levels_text(now.levels));
  if (was.engine && now.engine) {
    const EngineSettings& a = *was.engine;
    const EngineSettings& b = *now.engine;
    compare("--engine-max-num-seqs", std::to_string(a.max_num_seqs),
            std::to_string(b.max_num_seqs));
    compare("--engine-batch-invariant", on_off(a.batch_invariant), on_off(b.batch_invariant));
    compare("--engine-prefix-cache", on_off(a.prefix_cache), on_off(b.prefix_cache));
    compare("--engine-seed", std::to_string(a.seed), std::to_string(b.seed));
  }
  // Header names compare as HTTP does (without case, as a set): plans unequal by `==` may still
  // send the same headers.
  if (was.header_names && now.header_names &&
      comparable_names(*was.header_names) != comparable_names(*now.header_names))
    differences.push_back(
        {"--header names", names_text(*was.header_names), names_text(*now.header_names), {}});
  return differences;
}

} // namespace llmrepro::core
