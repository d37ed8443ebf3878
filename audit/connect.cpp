// The connect_endpoints pass: each endpoint reached, or the embedded engine started, with its
// dialect and model known before the database is written.
#include "audit/run.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <utility>

#include "audit/config.hpp"
#include "audit/keys.hpp"
#include "core/prompt_form.hpp"
#include "core/redaction.hpp"
#include "probes/endpoint_detector.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/logprob_check.hpp"
#include "probes/proxy_rule.hpp"

namespace llmrepro::audit {

namespace {

// `endpoint` empty: the embedded reference engine.
// `key`: what audit/keys.hpp chose for it ("" none).
core::Result<Target> connect(const AuditRequest& options, const core::AuditConfig& config,
                             const core::Suite& suite, const std::string& endpoint,
                             const std::string& key) {
  Target result;
  if (endpoint.empty()) {
    engine::ServeConfig serve;
    serve.port = 0;
    // As stored with the audit (a --resume runs the engine it was started with), else as given.
    const core::EngineSettings settings = config.plan.engine.value_or(engine_settings_of(options));
    serve.max_num_seqs = settings.max_num_seqs;
    serve.batch_invariant = settings.batch_invariant;
    // The determinism profile's prefix probe tests the cache: with it off, warm and cold trials
    // would run the same path.
    serve.prefix_cache =
        settings.prefix_cache || config.plan.profile == core::AuditProfile::deterministic;
    serve.seed = settings.seed;
    auto server = engine::EngineServer::start(serve);
    if (!server) return server.error();
    result.embedded = std::move(*server);
    result.target.base_url = result.embedded->base_url();
    result.target.dialect = probes::Dialect::openai_chat;
    result.info.url = result.target.base_url;
    result.info.dialect = probes::to_string(result.target.dialect);
    result.info.model = result.embedded->model_name();
    result.info.embedded = true;
    return result;
  }

  auto valid = probes::validate_base_url(endpoint);
  if (!valid) return valid.error();
  // Said even under --quiet: where requests (and any key) go is never a silent default.
  if (auto notice = probes::proxy_notice(endpoint)) note(options, *notice + "\n");
  result.target.base_url = endpoint;
  result.target.headers = options.headers;
  result.target.insecure = options.insecure;
  result.target.api_key = key;
  warn_if_clear_text(options, endpoint, key);
  result.info.url = core::redact(probes::strip_credentials(endpoint));
  // The dialect found, before a chat suite moves to the chat route: it says how to describe it.
  probes::Dialect served = probes::Dialect::openai_chat;
  probes::DetectionExtras detected; // its answers: the description reuses them
  if (config.plan.api == "auto") {
    std::string explanation;
    auto dialect = probes::detect_dialect(
        endpoint, result.target.headers, result.target.api_key, options.insecure,
        std::min(config.requests.timeout_s, 10.0), &explanation, &detected);
    if (!dialect) return dialect.error();
    const int chat_prompts = core::chat_prompt_count(suite);
    const probes::Dialect chosen = probes::dialect_for_suite(
        *dialect, static_cast<int>(suite.prompts.size()) - chat_prompts, chat_prompts);
    if (chosen != *dialect)
      explanation += fmt::format("; the suite's {} chat prompts go to its /v1/chat/completions "
                                 "route, through the model's chat template, not flattened onto {}",
                                 chat_prompts, probes::to_string(*dialect));
    result.target.dialect = chosen;
    served = *dialect;
    result.target.llamacpp_router = detected.llamacpp_router;
    if (!options.quiet)
      note(options, fmt::format("llmrepro: --api auto chose {} ({})\n", probes::to_string(chosen),
                                explanation));
  } else {
    auto dialect = probes::parse_dialect(config.plan.api);
    if (!dialect) return dialect.error();
    result.target.dialect = *dialect;
    served = *dialect;
  }
  result.info.dialect = probes::to_string(result.target.dialect);
  result.info.model = config.plan.model;
  result.target.model_given = !config.plan.model.empty();
  LLMREPRO_TRY_ASSIGN(result.target.logprobs_form,
                      probes::parse_logprobs_form(config.plan.logprobs_form));
  result.info.server = probes::describe_server(
      result.target, served, std::min(config.requests.timeout_s, 10.0), &detected);
  return result;
}

// A model on OpenAI's own API that returns no logprobs (a reasoning model) is named before the
// plan runs, so that an audit compared on text alone is never mistaken for a parse failure.
// One that rejects the parameter is then asked without it.
// Returns whether it sent a request.
bool check_logprobs_up_front(const AuditRequest& options, const core::AuditConfig& config,
                             const core::Suite& suite, Target& target) {
  if (target.embedded || suite.prompts.empty() || !probes::logprob_check_applies(target.target))
    return false;
  const probes::SchedulerConfig scheduler =
      probes::scheduler_config_of(config, target.info.model, options.max_response_bytes);
  probes::LogprobSupport support =
      probes::check_logprob_support(target.target, scheduler, suite.prompts.front());
  if (support.returns_logprobs) return true;
  target.target.rejects_logprobs = support.rejects_logprobs;
  if (!options.quiet)
    note(options,
         fmt::format(
             "llmrepro: model '{}' at {} returns no logprobs: {}; its completions are compared by "
             "text alone, with no top-2 gap{}\n",
             support.model.empty() ? "(unnamed)" : support.model, target.info.url, support.reason,
             support.rejects_logprobs ? " (requests are sent without logprobs)" : ""));
  return true;
}

} // namespace

core::Result<void> connect_endpoints(AuditRun& run) {
  const AuditRequest& options = run.request;
  const core::AuditConfig& config = run.config();
  for (std::size_t i = 0; i < run.urls.size(); ++i) {
    const std::string& url = run.urls[i];
    auto target_or = connect(options, config, run.header.suite, url, run.keys[i]);
    if (!target_or) return target_or.error();
    Target& target = *target_or;
    if (target.info.model.empty() && !target.embedded) {
      const bool gemini = target.target.dialect == probes::Dialect::gemini;
      const bool anthropic = target.target.dialect == probes::Dialect::anthropic;
      auto model = probes::detect_model(url, target.target.dialect, target.target.headers,
                                        target.target.api_key, options.insecure,
                                        std::min(config.requests.timeout_s, 10.0));
      // Gemini names the model in every request's path and Anthropic requires it in every
      // body: without one nothing can be sent.
      if (!model && (gemini || anthropic)) return model.error();
      if (model) {
        target.info.model = *model;
        if ((gemini || anthropic) && !options.quiet)
          note(options, fmt::format("llmrepro: no --model given: auditing {} ({})\n", *model,
                                    gemini ? "the first model /v1beta/models lists with "
                                             "generateContent"
                                           : "the first model /v1/models lists, its newest"));
      }
    }
    target.target.model = target.info.model;
    if (check_logprobs_up_front(options, config, run.header.suite, target))
      ++run.preflight_requests;
    run.targets.push_back(std::move(target));
  }
  return {};
}

} // namespace llmrepro::audit
