// The connect_endpoints pass: each endpoint reached, or the embedded engine started, with its
// dialect and model known before the database is written.
#include "audit/run.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <utility>

#include "audit/budget.hpp"
#include "audit/config.hpp"
#include "core/bidi_controls.hpp"
#include "audit/keys.hpp"
#include "core/prompt_form.hpp"
#include "core/redaction.hpp"
#include "probes/endpoint_detector.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/capability_preflight.hpp"
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

// The capability preflight (probes/capability_preflight.hpp) against `target`, its findings
// applied to what the audit will send and said before the plan runs; on --resume what the stored
// audit found (`stored`) is applied instead, so that every run of one audit sends alike.
// Returns the requests it sent.
int preflight(const AuditRequest& options, const core::AuditConfig& config,
              const core::Suite& suite, const core::EndpointInfo* stored,
              std::optional<core::BudgetLedger>& budget, Target& target) {
  if (config.plan.temperature == core::TemperatureMode::provider_default)
    target.target.provider_temperature = true;
  if (stored != nullptr) {
    target.info.capabilities = stored->capabilities;
    probes::apply_capabilities(target.target, target.info.capabilities);
    return 0;
  }
  if (target.embedded || options.no_preflight || suite.prompts.empty()) return 0;
  // A budget holds before the plan too: the preflight runs only where its most requests, each
  // at its bound, fit what the budgets leave (the earlier endpoints' preflights reserved).
  if (budget) {
    const core::Prompt prompt = probes::preflight_prompt(suite.prompts.front().is_chat());
    const core::TokenBound bound{core::prompt_token_bound(prompt), probes::k_preflight_max_tokens};
    for (int i = 0; i < probes::k_preflight_max_requests; ++i)
      if (!budget->try_start(bound)) {
        note(options, fmt::format("llmrepro: no capability preflight at {}: its {} requests at "
                                  "most do not fit the budget\n",
                                  target.info.url, probes::k_preflight_max_requests));
        return 0;
      }
  }
  const probes::SchedulerConfig scheduler =
      probes::scheduler_config_of(config, target.info.model, options.max_response_bytes);
  core::EndpointCapabilities& found = target.info.capabilities;
  found = probes::run_preflight(target.target, scheduler, suite.prompts.front().is_chat(),
                                config.plan.temperature);
  probes::apply_capabilities(target.target, found);
  if (options.quiet) return found.requests;
  // The findings quote the server (its model name, its refusals): never a bidirectional control
  // on stderr, as in every report.
  note(options, core::mark_bidi_controls(fmt::format("llmrepro: {} {}\n", target.info.url,
                                                     core::capabilities_line(found))));
  const bool no_logprobs = found.logprobs.outcome == core::CapabilityOutcome::ignored ||
                           found.logprobs.outcome == core::CapabilityOutcome::refused;
  // Named before the plan runs, so that an audit compared on text alone is never mistaken for a
  // parse failure.
  if (no_logprobs)
    note(options, core::mark_bidi_controls(fmt::format(
                      "llmrepro: model '{}' at {} returns no logprobs: {}; its completions are "
                      "compared by text alone, with no top-2 gap{}\n",
                      found.model.empty() ? target.info.model : found.model, target.info.url,
                      found.logprobs.outcome == core::CapabilityOutcome::refused
                          ? "it rejects the `logprobs` parameter (" + found.logprobs.detail + ")"
                          : std::string("it answered without `logprobs`"),
                      found.logprobs.outcome == core::CapabilityOutcome::refused
                          ? " (requests are sent without logprobs)"
                          : "")));
  if (const std::string effect = core::temperature_effect_line(found); !effect.empty()) {
    note(options, core::mark_bidi_controls(fmt::format("llmrepro: {} at {}: {}\n", effect,
                                                       target.info.url, found.temperature.detail)));
    // Sampling makes distinct completions by design: say which gate judges what it can.
    if (config.gates.fail_on.unstable)
      note(options, "llmrepro: --fail-on unstable fails on any two distinct completions, which "
                    "sampling gives by design; --fail-on shift and --min-modal-share judge the "
                    "answers' distribution\n");
  }
  return found.requests;
}

// Tools go only where the dialect has them and its answers' calls are read: a prompt with
// `tools` sent elsewhere would be audited as if it had none. Said before any completion request.
core::Result<void> check_tools_supported(const core::Suite& suite, const Target& target) {
  const probes::Dialect dialect = target.target.dialect;
  if (probes::takes_tools(dialect) && !target.embedded) return {};
  // "openai-chat, ollama, ... or anthropic", in the order --api lists them.
  std::vector<std::string> names;
  for (probes::Dialect each : probes::all_dialects())
    if (probes::takes_tools(each)) names.emplace_back(probes::to_string(each));
  std::string listed;
  for (std::size_t i = 0; i < names.size(); ++i)
    listed += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  for (const core::Prompt& prompt : suite.prompts)
    if (!prompt.tools_json.empty())
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("{}:{}: prompt '{}' has tools, which {} does not send: tools and agent "
                      "chains go to --api {} endpoints",
                      suite.source, prompt.source_line, prompt.id,
                      target.embedded ? std::string("the embedded reference engine")
                                      : "--api " + std::string(probes::to_string(dialect)),
                      listed));
  return {};
}

} // namespace

core::Result<void> connect_endpoints(AuditRun& run) {
  const AuditRequest& options = run.request;
  const core::AuditConfig& config = run.config();
  // What the budgets leave for the preflights, each reserving its most (run_requests charges
  // what they sent). A resumed audit sends none.
  std::optional<core::BudgetLedger> preflight_budget;
  if (const core::BudgetLimits limits = budget_limits_of(config); limits.any() && !options.resume)
    preflight_budget.emplace(limits);
  for (std::size_t i = 0; i < run.urls.size(); ++i) {
    const std::string& url = run.urls[i];
    auto target_or = connect(options, config, run.header.suite, url, run.keys[i]);
    if (!target_or) return target_or.error();
    Target& target = *target_or;
    LLMREPRO_TRY(check_tools_supported(run.header.suite, target));
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
    const core::EndpointInfo* stored =
        options.resume && i < run.header.endpoints.size() ? &run.header.endpoints[i] : nullptr;
    run.preflight_requests +=
        preflight(options, config, run.header.suite, stored, preflight_budget, target);
    run.targets.push_back(std::move(target));
  }
  return {};
}

} // namespace llmrepro::audit
